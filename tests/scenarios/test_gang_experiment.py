"""Seed 001's gang experiment: TensorFlow-style jobs of 2 ps + 4 workers whose pods only make progress once
all six run together (lahar.dev/sim-barrier), scheduled as gangs (default conf) or pod by pod (no gang
plugin, minAvailable 1), with the manifests of examples/gang-experiment."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from contracts.objects import Job, frozen_map
from contracts.parse import load_files
from contracts.sim_annotations import SIM_BARRIER
from services.scheduler.core.conf import SchedulerConf, default_conf, parse_conf
from services.simulator.engine import SimulationRun, simulate, stall_outcome

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gang-experiment"
CLUSTER = EXAMPLES / "cluster.yaml"  # 3 nodes x 4 cpu: room for exactly two jobs
GANG_JOBS = EXAMPLES / "gang-jobs.yaml"
POD_BY_POD_JOBS = EXAMPLES / "pod-by-pod-jobs.yaml"
POD_BY_POD = parse_conf((EXAMPLES / "pod-by-pod.conf").read_text(), "pod-by-pod.conf")
PODS_PER_JOB = 6
MODES = {"gang": (GANG_JOBS, default_conf()), "pod-by-pod": (POD_BY_POD_JOBS, POD_BY_POD)}

# room for one job of 6 x 1 cpu, not for two
ONE_JOB_CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: node-a}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"""


def experiment(
    jobs_file: Path,
    conf: SchedulerConf,
    *,
    cluster: Path = CLUSTER,
    jobs: int = 5,
    barrier: bool = True,
    max_cycles: int = 100_000,
) -> SimulationRun:
    """Run the first `jobs` jobs of the example until nothing changes any more."""
    keep = {f"tf-{i}" for i in range(1, jobs + 1)}
    objects = []
    for obj in load_files([cluster, jobs_file]):
        if isinstance(obj, Job):
            if obj.meta.name not in keep:
                continue
            if not barrier:
                notes = {k: v for k, v in obj.meta.annotations.items() if k != SIM_BARRIER}
                obj = replace(obj, meta=replace(obj.meta, annotations=frozen_map(notes)))
        objects.append(obj)
    return simulate(objects, conf, until_idle=True, max_cycles=max_cycles)


def intervals(run: SimulationRun) -> dict[str, tuple[float | None, float | None]]:
    return {key: (r.start_time, r.finish_time) for key, r in sorted(run.world.jobs.items())}


def max_concurrent(run: SimulationRun) -> int:
    """Most jobs running at the same moment ([start, finish) intervals)."""
    spans = [(r.start_time, r.finish_time) for r in run.world.jobs.values()]
    assert all(start is not None and finish is not None for start, finish in spans)
    return max(sum(1 for s, f in spans if s <= t < f) for t, _ in spans)


def running_per_job(run: SimulationRun) -> Counter[str]:
    world = run.world
    return Counter(group for key, group in world.pod_job.items() if world.pods[key].status.phase == "Running")


# --- case 3: five jobs ----------------------------------------------------------------------------------


def test_gang_scheduling_finishes_every_job_two_at_a_time() -> None:
    run = experiment(GANG_JOBS, default_conf())
    assert run.outcome == "idle"
    assert run.evictions == []
    assert {r.phase for r in run.world.jobs.values()} == {"Completed"}
    assert {p.status.phase for p in run.world.pods.values()} == {"Succeeded"}
    assert max_concurrent(run) == 2
    assert intervals(run) == {
        "default/tf-1": (0.0, 60.0),
        "default/tf-2": (0.0, 60.0),
        "default/tf-3": (60.0, 120.0),
        "default/tf-4": (60.0, 120.0),
        "default/tf-5": (120.0, 180.0),
    }
    # every session binds whole gangs: all six pods of a job or none of them
    for result in run.results:
        per_job = Counter(key.rsplit("-", 2)[0] for key in result.binds)
        assert set(per_job.values()) <= {PODS_PER_JOB}
        assert len(per_job) <= 2


def test_pod_by_pod_deadlocks_holding_partial_gangs() -> None:
    run = experiment(POD_BY_POD_JOBS, POD_BY_POD)
    assert run.outcome == "deadlock"
    assert stall_outcome(run.world) == "deadlock"
    # the run ends as soon as nothing can change, far below the cycle limit
    assert run.cycles <= 3
    held = running_per_job(run)
    # the 12 cores are spread over all five jobs, none of which has its six pods
    assert sum(held.values()) == 12
    assert len(held) == 5
    assert all(0 < n < PODS_PER_JOB for n in held.values())
    assert not any(p.status.phase == "Succeeded" for p in run.world.pods.values())
    assert {r.phase for r in run.world.jobs.values()} == {"Running"}
    assert all(r.finish_time is None for r in run.world.jobs.values())
    # the barrier pods wait for their gang: none of them got a completion time
    assert run.world.finish_at == {}
    assert len(run.world.waiting_barrier) == 12


def test_pod_by_pod_deadlock_is_detected_even_with_a_small_cycle_budget() -> None:
    run = experiment(POD_BY_POD_JOBS, POD_BY_POD, max_cycles=5)
    assert run.outcome == "deadlock"
    assert run.cycles < 5


# --- case 1: one job, enough resources ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_one_job_gang_and_pod_by_pod_behave_alike(mode: str) -> None:
    jobs_file, conf = MODES[mode]
    run = experiment(jobs_file, conf, jobs=1)
    assert run.outcome == "idle"
    assert intervals(run) == {"default/tf-1": (0.0, 60.0)}
    assert run.world.jobs["default/tf-1"].phase == "Completed"
    # all six pods are placed in the first session either way
    assert len(run.results[0].binds) == PODS_PER_JOB


# --- case 2: two jobs, resources for one ----------------------------------------------------------------


def test_two_jobs_with_gang_run_one_after_the_other(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(ONE_JOB_CLUSTER)
    run = experiment(GANG_JOBS, default_conf(), cluster=cluster, jobs=2)
    assert run.outcome == "idle"
    assert {r.phase for r in run.world.jobs.values()} == {"Completed"}
    assert intervals(run) == {"default/tf-1": (0.0, 60.0), "default/tf-2": (60.0, 120.0)}
    assert max_concurrent(run) == 1


def test_two_jobs_pod_by_pod_deadlock(tmp_path: Path) -> None:
    """The seed: without gang one job busy-waits holding part of the cluster. In lahar both jobs end up
    holding part of it: with minAvailable 1 each job is "ready" after one pod, so allocate hands pods out in
    turns (drf's job order puts the job with the smaller share first) and the 8 cores go 4 and 4. On a real
    cluster the partial ps/worker sets would sit running and busy-wait for their peers forever; the
    sim-barrier annotation models exactly that rendezvous (no progress until the whole gang runs), so the
    engine sees that no session and no completion can change anything and ends the run as a deadlock
    (exit code 3 from the CLI) instead of spinning until max_cycles."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(ONE_JOB_CLUSTER)
    run = experiment(POD_BY_POD_JOBS, POD_BY_POD, cluster=cluster, jobs=2)
    assert run.outcome == "deadlock"
    assert run.cycles <= 3
    assert running_per_job(run) == {"default/tf-1": 4, "default/tf-2": 4}
    assert {key: (r.phase, r.finish_time) for key, r in run.world.jobs.items()} == {
        "default/tf-1": ("Running", None),
        "default/tf-2": ("Running", None),
    }
    assert sorted(run.world.pending_pods()) == [
        "default/tf-1-worker-2",
        "default/tf-1-worker-3",
        "default/tf-2-worker-2",
        "default/tf-2-worker-3",
    ]


def test_two_jobs_pod_by_pod_without_the_rendezvous_finish(tmp_path: Path) -> None:
    """Control: the deadlock comes from the pods needing each other; independent pods placed one by one
    simply run in two waves."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(ONE_JOB_CLUSTER)
    run = experiment(POD_BY_POD_JOBS, POD_BY_POD, cluster=cluster, jobs=2, barrier=False)
    assert run.outcome == "idle"
    assert {r.phase for r in run.world.jobs.values()} == {"Completed"}
    assert max(r.finish_time for r in run.world.jobs.values()) == 120.0
