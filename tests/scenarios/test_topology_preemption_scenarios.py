"""Gang-aware eviction in hard topology mode, run in the simulator with examples/preemption's
hard-topology manifests (issue 15, item 5): victims inside one HyperNode where the whole gang then fits,
never across HyperNodes. Volcano's preempt skips every job with a network topology (#4374), so there the
gang waits until the racks free up at 600 s: said in each test's words, the simulator running lahar."""

from __future__ import annotations

from pathlib import Path

from contracts.parse import load_files
from services.scheduler.core.conf import parse_conf
from services.simulator.engine import SimulationRun, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "preemption"
CONF = parse_conf((EXAMPLES / "preempt-topology.conf").read_text(), "preempt-topology.conf")


def run(manifest: str) -> SimulationRun:
    return simulate(load_files([EXAMPLES / manifest]), CONF, cycles=None, until_idle=True)


def times(result: SimulationRun) -> dict[str, tuple[float | None, float | None]]:
    return {key.split("/")[1]: (j.start_time, j.finish_time) for key, j in result.world.jobs.items()}


def condition(result: SimulationRun, kind: str) -> tuple[str, str, str]:
    (found,) = [c for c in result.world.podgroups["default/gang"].status.conditions if c.type == kind]
    return found.status, found.reason, found.message


def test_victims_are_chosen_inside_one_rack() -> None:
    result = run("hard-topology-gang.yaml")
    # the two cheapest victims (low-1, low-3) are in different racks; lahar takes rack-a's two pods
    assert sorted(result.evictions) == ["default/low-1-main-0", "default/mid-2-main-0"]
    assert times(result)["gang"] == (11.0, 111.0)  # Volcano: (600.0, 700.0)
    nodes = {result.world.pods[f"default/gang-worker-{i}"].spec.node_name for i in (0, 1)}
    assert nodes == {"node-1", "node-2"}  # both in rack-a
    evicting = [e for e in result.log.events if e.type == "PodEvicting"]
    assert all(e.data.reason.endswith("in HyperNode rack-a") for e in evicting)  # type: ignore[union-attr]
    (reserved,) = [
        c.message
        for e in result.log.events
        if e.type == "PodGroupStatusChanged" and e.name == "gang"
        for c in e.data.conditions  # type: ignore[union-attr]
        if c.type == "Preempting" and c.reason == "RoomReserved"
    ]
    assert "inside HyperNode rack-a (tier 1) to reserve room for" in reserved
    assert condition(result, "Preempting")[1] == "ReservationBound"


def test_a_gang_no_rack_can_hold_evicts_nothing() -> None:
    result = run("hard-topology-no-rack.yaml")
    # low-1 and low-3 would free two nodes, in different racks: hard mode may not use them together
    assert result.evictions == []
    assert times(result)["gang"] == (600.0, 700.0)  # as in Volcano, which never tries
    status, reason, message = condition(result, "Preempting")
    assert (status, reason) == ("False", "WouldNotMakeRoom")
    assert (
        "no HyperNode of tier <= 1 would hold the whole gang after evictions (tried rack-a, rack-b)"
        in message
    )
