"""Partitions make room by preemption, in the simulator with examples/partition/preempt.yaml (issue 15,
items 4 and 5 together): each partition's victims inside one rack, the cheapest racks, one plan, the
job running a second after it arrives. Volcano's preempt skips jobs with a network topology, partitions
included (#4374): shown side by side by the same manifests with preempt left out of the conf, where the
job waits until the racks free up at 600 s."""

from __future__ import annotations

from pathlib import Path

from contracts.parse import load_files
from services.scheduler.core.conf import parse_conf
from services.simulator.engine import SimulationRun, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "partition"
CONF_TEXT = (EXAMPLES / "preempt.conf").read_text()
RACK = {
    "r1-a": "rack-1",
    "r1-b": "rack-1",
    "r2-a": "rack-2",
    "r2-b": "rack-2",
    "r3-a": "rack-3",
    "r3-b": "rack-3",
}


def run(conf_text: str = CONF_TEXT) -> SimulationRun:
    conf = parse_conf(conf_text, "preempt.conf")
    return simulate(load_files([EXAMPLES / "preempt.yaml"]), conf, cycles=None, until_idle=True)


def train_times(result: SimulationRun) -> tuple[float | None, float | None]:
    job = result.world.jobs["default/train"]
    return job.start_time, job.finish_time


def test_each_partition_takes_a_whole_rack_of_victims() -> None:
    result = run()
    # the two cheapest pods (low-r1-a, low-r2-b) sit in different racks; lahar empties two whole racks,
    # the cheapest two (rack-3 holds two mid pods)
    assert sorted(result.evictions) == [
        "default/low-r1-a-main-0",
        "default/low-r2-b-main-0",
        "default/mid-r1-b-main-0",
        "default/mid-r2-a-main-0",
    ]
    assert train_times(result) == (11.0, 111.0)
    racks = {
        i // 2: {RACK[result.world.pods[f"default/train-worker-{j}"].spec.node_name] for j in (i, i + 1)}
        for i in (0, 2)
    }
    assert sorted(racks.values(), key=sorted) == [{"rack-1"}, {"rack-2"}]
    evicting = [e for e in result.log.events if e.type == "PodEvicting"]
    assert all(e.data.reason.endswith(("in HyperNode rack-1", "in HyperNode rack-2")) for e in evicting)  # type: ignore[union-attr]
    (reserved,) = [
        c.message
        for e in result.log.events
        if e.type == "PodGroupStatusChanged" and e.name == "train"
        for c in e.data.conditions  # type: ignore[union-attr]
        if c.type == "Preempting" and c.reason == "RoomReserved"
    ]
    assert "for partition(s) worker-0 in rack-1, worker-1 in rack-2 to reserve room for" in reserved


def test_without_preempt_the_partitioned_job_waits_as_in_volcano() -> None:
    result = run(CONF_TEXT.replace("allocate, preempt, backfill", "allocate, backfill"))
    assert result.evictions == []
    assert train_times(result) == (600.0, 700.0)
