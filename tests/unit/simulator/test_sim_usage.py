"""Simulated usage samples (services/simulator/usage.py): taken every period of simulated time, at most
a window's worth after a jump of the clock, fresh ones handed to sessions, and a moment to wake for only
when something changed since the last one; the sim-usage annotation is checked before a run."""

from __future__ import annotations

from support.builders import node, pod

from services.simulator.usage import UsageSimulation
from services.simulator.world import World, annotation_errors


def world() -> World:
    simulated = World()
    simulated.add(node("n1", cpu=4, memory="8Gi"), 0.0)
    busy = pod("busy", node_name="n1", cpu=1, memory="1Gi", annotations={"lahar.dev/sim-usage": "cpu=3"})
    simulated.add(busy, 0.0)
    simulated.add(pod("waiting", cpu=1), 0.0)
    return simulated


def test_samples_come_every_period_and_show_the_running_pods() -> None:
    usage, simulated = UsageSimulation(period_s=30.0, window_s=120.0), world()
    usage.advance(simulated, 0.0, changes=0)
    usage.advance(simulated, 10.0, changes=0)
    assert usage.samples == 1
    first = usage.book.latest("n1")
    assert first is not None and first.time == 0.0
    assert (first.cpu_milli, first.memory_bytes) == (3000, 1 << 30)
    assert [p.pod for p in first.pods] == ["default/busy"]
    usage.advance(simulated, 30.0, changes=0)
    assert usage.samples == 2 and usage.book.latest("n1").time == 30.0  # type: ignore[union-attr]


def test_a_jump_of_the_clock_takes_one_windows_worth_of_the_periods_it_skipped() -> None:
    usage, simulated = UsageSimulation(period_s=30.0, window_s=120.0), world()
    usage.advance(simulated, 0.0, changes=0)
    usage.advance(simulated, 1000.0, changes=0)
    # due at 30, 60, ..., 990: the last five (a 120 s window holds five samples 30 s apart)
    assert usage.samples == 1 + 5
    assert usage.book.latest("n1").time == 990.0  # type: ignore[union-attr]
    assert usage.next_at == 1020.0


def test_fresh_samples_and_the_next_moment_worth_waking_for() -> None:
    usage, simulated = UsageSimulation(period_s=30.0, stale_after_s=45.0), world()
    usage.advance(simulated, 0.0, changes=7)
    assert set(usage.fresh(45.0)) == {"n1"}
    assert usage.fresh(45.5) == {}
    assert usage.next_moment(changes=7) is None  # the next sample would say the same
    assert usage.next_moment(changes=8) == 30.0


def test_a_malformed_sim_usage_annotation_is_an_input_error_naming_it() -> None:
    broken = pod("p", annotations={"lahar.dev/sim-usage": "cpu=fast"})
    (error,) = annotation_errors(broken)
    assert error.path == "metadata.annotations[lahar.dev/sim-usage]"
    assert "cpu: expected a quantity" in error.message
