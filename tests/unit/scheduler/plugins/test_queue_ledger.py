"""A queue's figures at session open (QueueLedger.add_job): what a job holds, asks, reserves and holds
beyond its minimum, summed over the jobs of the queue."""

from __future__ import annotations

from support.builders import node, pod, podgroup

from contracts.resources import MILLI, PODS, Resources
from services.scheduler.core.framework.build import build_model
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.task import TaskStatus
from services.scheduler.core.plugins.fairness import QueueLedger
from services.scheduler.core.snapshot import ClusterSnapshot

GI = 1 << 30


def _jobs(*, phase: str, min_resources: Resources | None, min_member: int = 2) -> dict[str, JobInfo]:
    objects: list[object] = [node("n1", cpu=16, memory="64Gi")]
    objects.append(podgroup("a", min_member=min_member, phase=phase, min_resources=min_resources))
    objects += [
        pod(f"a-run-{i}", "a", cpu=2, memory="4Gi", node_name="n1", phase="Running") for i in range(2)
    ]
    objects += [pod(f"a-wait-{i}", "a", cpu=1, memory="1Gi") for i in range(3)]
    objects.append(pod("a-done", "a", cpu=4, memory="1Gi", node_name="n1", phase="Succeeded"))
    objects.append(podgroup("b", min_member=1, phase="Running"))
    objects.append(pod("b-run", "b", cpu=1, memory="2Gi", node_name="n1", phase="Running"))
    snapshot = ClusterSnapshot.from_objects(objects)
    return build_model(snapshot, lambda key: True, victims=False).jobs


def _ledger(jobs: dict[str, JobInfo]) -> QueueLedger:
    ledger = QueueLedger("default", None)
    for job in jobs.values():
        ledger.add_job(job)
    return ledger


def test_a_queue_holds_what_its_jobs_allocated_and_asks_that_and_what_waits() -> None:
    ledger = _ledger(_jobs(phase="Running", min_resources=None))
    # two running pods of a (2 cpu, 4Gi each) and one of b (1 cpu, 2Gi); a finished pod holds nothing
    assert ledger.allocated == {"cpu": 5000, "memory": 10 * GI * MILLI, PODS: 3 * MILLI}
    # and the three pending pods of a (1 cpu, 1Gi each) are asked for besides
    assert ledger.request == {"cpu": 8000, "memory": 13 * GI * MILLI, PODS: 6 * MILLI}
    assert ledger.inqueue == {}  # no minResources: nothing reserved


def test_an_inqueue_job_reserves_what_its_allocated_tasks_do_not_cover_of_its_minimum() -> None:
    minimum = Resources({"cpu": 6000, "memory": 6 * GI * MILLI, "nvidia.com/gpu": 1000})
    ledger = _ledger(_jobs(phase="Inqueue", min_resources=minimum))
    # a holds 4 cpu and 8Gi of its 6 cpu, 6Gi and 1 gpu minimum: 2 cpu and the gpu are unmet
    assert ledger.inqueue == {"cpu": 2000, "memory": 0, "nvidia.com/gpu": 1000}
    # beyond its minimum it holds 2Gi and its two pods; b has no minimum, so all it holds is elastic
    assert ledger.elastic == {
        "cpu": 1000,
        "memory": (2 + 2) * GI * MILLI,
        PODS: 3 * MILLI,
        "nvidia.com/gpu": 0,
    }


def test_a_running_job_reserves_only_while_its_allocated_tasks_reach_min_member() -> None:
    minimum = Resources({"cpu": 6000})
    assert _ledger(_jobs(phase="Running", min_resources=minimum, min_member=2)).inqueue == {"cpu": 2000}
    assert _ledger(_jobs(phase="Running", min_resources=minimum, min_member=3)).inqueue == {}


def test_pipelined_tasks_and_another_replicas_pending_pods_are_asked_for() -> None:
    jobs = _jobs(phase="Running", min_resources=None)
    job = jobs["default/a"]
    waiting = next(iter(job.tasks_by_status[TaskStatus.PENDING].values()))
    job.update_task_status(waiting, TaskStatus.PIPELINED)
    job.add_unplaced(Resources({"cpu": 3000, "memory": GI * MILLI}))
    job.add_unplaced(Resources({"cpu": 3000, "memory": GI * MILLI}))
    ledger = _ledger(jobs)
    # the pipelined task still counts once; the two unplaced pods add 6 cpu, 2Gi and two pods
    assert ledger.request == {"cpu": 14000, "memory": 15 * GI * MILLI, PODS: 8 * MILLI}
