"""Preemption's pains fixed, run in the simulator with the manifests of examples/preemption (issue 15,
item 1). Each test shows lahar's outcome and, where it differs, Volcano's: run here where the simulator
can reproduce it (the room a preemption frees, without the reservation that holds it), else as Volcano's
documented outcome in the test's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.parse import load_files
from services.scheduler.core.conf import parse_conf
from services.simulator import cluster
from services.simulator.engine import SimulationRun, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "preemption"
CONF = parse_conf((EXAMPLES / "preempt.conf").read_text(), "preempt.conf")


def run(manifest: str) -> SimulationRun:
    return simulate(load_files([EXAMPLES / manifest]), CONF, cycles=None, until_idle=True)


def times(result: SimulationRun) -> dict[str, tuple[float | None, float | None]]:
    """job name -> (start, finish)"""
    return {key.split("/")[1]: (j.start_time, j.finish_time) for key, j in result.world.jobs.items()}


def events(result: SimulationRun, event_type: str) -> list[tuple[float, str, str]]:
    """(time, object name, plan) of every event of a type."""
    return [
        (e.time, e.name, e.data.plan)  # type: ignore[union-attr]
        for e in result.log.events
        if e.type == event_type
    ]


def condition(result: SimulationRun, job: str, kind: str) -> tuple[str, str, str]:
    (found,) = [c for c in result.world.podgroups[f"default/{job}"].status.conditions if c.type == kind]
    return found.status, found.reason, found.message


def test_the_room_a_preemption_frees_is_the_preemptors(monkeypatch: pytest.MonkeyPatch) -> None:
    lahar = run("room-reserved.yaml")
    assert lahar.evictions == ["default/low-main-0"]
    assert times(lahar)["urgent"] == (11.0, 111.0)
    assert times(lahar)["thief"] == (111.0, 711.0)
    # the eviction and the room it frees for urgent are one plan; urgent is bound into that room
    [(at, _, plan)] = events(lahar, "PodEvicting")
    assert events(lahar, "PodNominated") == [(at, "urgent-main-0", plan)]
    bound = [(t, name) for t, name, _ in events(lahar, "PodBound") if name == "urgent-main-0"]
    assert bound == [(11.0, "urgent-main-0")]
    assert lahar.world.pods["default/urgent-main-0"].spec.node_name == "node-1"

    # Volcano: the same evictions without the reservation; the older queue's thief takes the room
    keep = cluster.plan_outputs
    monkeypatch.setattr(cluster, "plan_outputs", lambda p: [o for o in keep(p) if o.type != "PodNominated"])
    volcano = run("room-reserved.yaml")
    assert volcano.evictions == ["default/low-main-0"]
    assert times(volcano)["thief"] == (11.0, 611.0)
    assert times(volcano)["urgent"] == (611.0, 711.0)


def test_a_gang_that_preemption_cannot_make_whole_evicts_nothing() -> None:
    result = run("gang-all-or-nothing.yaml")
    # Volcano #5022 / #3673: evictions recorded before the preemptor failed to fit were applied anyway
    assert result.evictions == []
    assert times(result)["gang"] == (600.0, 700.0)
    status, reason, message = condition(result, "gang", "Preempting")
    assert (status, reason) == ("False", "WouldNotMakeRoom")
    assert message.startswith("preempt would not make room, nothing evicted: ")


def test_no_job_loses_more_pods_than_the_preemptor_needs() -> None:
    result = run("minimal-victims.yaml")
    # Volcano evicts in victim order, lowest priority first: a pod of `gang`, whose minAvailable then
    # fails, so the gang restarts and loses both pods; lahar takes one pod of `elastic`, above its minimum
    assert result.evictions == ["default/elastic-worker-1"]
    jobs = result.world.jobs
    assert jobs["default/gang"].retry_count == 0
    assert times(result)["gang"] == (0.0, 600.0)
    assert times(result)["urgent"] == (11.0, 111.0)
    status, reason, message = condition(result, "urgent", "Preempting")
    assert (status, reason) == ("False", "ReservationBound")
    assert message == "bound in the room reserved: default/urgent-main-0 on node-1"


def test_a_pod_in_its_cooldown_is_no_victim_until_it_ends() -> None:
    result = run("cooldown.yaml")
    # Volcano protects it only with the cdp plugin in its conf (preempt.conf names none): it would be
    # evicted at 10 s
    [(at, name, _)] = events(result, "PodEvicting")
    assert (at, name) == (120.0, "low-main-0")
    assert times(result)["urgent"] == (121.0, 221.0)


def test_a_best_effort_pod_holding_the_last_pod_slot_is_a_victim() -> None:
    result = run("best-effort-slot.yaml")
    # Volcano before #3335: eviction freed cpu and memory only, so urgent waited for `be` (600 s)
    assert len(result.evictions) == 1
    assert result.evictions[0].startswith("default/be-main-")
    assert times(result)["urgent"] == (11.0, 111.0)
