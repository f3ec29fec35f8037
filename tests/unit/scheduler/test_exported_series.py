"""Volcano's per-queue and per-job gauges of scheduler replicas (services/scheduler/exported.py): with two
replicas each job's and each queue's series is exported by exactly one of them, every queue of a
hierarchy included; a deleted job's series go away, and finished jobs' expire and are capped."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from support.builders import conf, gang, node, podgroup, queue, res
from test_replica_state import CORE, event, fold

from contracts.objects import PodGroupCondition, PodGroupStatus
from services.scheduler.core.framework.session import Session
from services.scheduler.exported import exported_jobs, queue_key
from services.scheduler.metrics import SchedulerMetrics
from services.scheduler.ownership import Owned
from services.scheduler.plans import build_plans
from services.scheduler.replica_series import ReplicaSeries
from services.scheduler.state import SchedulerState
from shared.ring import Ring
from shared.telemetry.metrics import Registry

NOW = 1000.0
HIERARCHY = conf(
    "enqueue, allocate",
    ["priority", "gang", "drf"],
    ["predicates", {"name": "capacity", "enableHierarchy": True}, "nodeorder"],
)
QUEUES = ["default", "root", "eng", "dev", "prod", "ops"]  # `default` is always there
JOBS = [f"default/j{i}" for i in range(8)]


def cluster() -> list[Any]:
    objects: list[Any] = [
        node("n1", cpu=8),
        node("n2", cpu=8),
        queue("root"),
        queue("eng", parent="root", capability=res(cpu=12)),
        queue("dev", parent="eng", deserved=res(cpu=4)),
        queue("prod", parent="eng", deserved=res(cpu=4)),
        queue("ops", parent="root", deserved=res(cpu=2)),
    ]
    leaves = ["dev", "prod", "ops"]
    for i in range(8):  # j6 and j7 ask for more than any node has: unschedulable
        objects += gang(f"j{i}", 2, queue_name=leaves[i % 3], cpu=1 if i < 6 else 16)
    return objects


class Replica:
    """A replica's series as the service feeds them: its own view, its sessions over the PodGroups it
    owns on the ring, its registry."""

    def __init__(self, name: str, ring: Ring, state: SchedulerState) -> None:
        self.name = name
        self.registry = Registry()
        self.state = state
        self.owned = Owned(ring, name)
        self.series = ReplicaSeries(
            SchedulerMetrics(self.registry), lambda: self.state.view, self.owned_now, clock
        )

    def owned_now(self) -> Owned:
        return self.owned

    def session(self) -> None:
        snapshot = self.state.view.snapshot()
        ssn = Session(snapshot, HIERARCHY, now=NOW, owns=self.owned.owns)
        result = ssn.run()
        plans = build_plans(result, snapshot, self.name, self.owned, ssn.owned_statuses())
        self.series.session(result, plans)
        for plan in plans:
            self.state.view.assume(plan)

    def series_of(self, family: str) -> dict[str, float]:
        """The exposed series of a family, by their label text."""
        pattern = re.compile(rf"^{family}\{{([^}}]*)\}} (\S+)$", re.M)
        return {labels: float(value) for labels, value in pattern.findall(self.registry.render())}


def clock() -> float:
    return NOW


def two_replicas() -> tuple[Replica, Replica]:
    ring = Ring(["scheduler-1", "scheduler-2"])
    replicas = Replica("scheduler-1", ring, fold(cluster())), Replica("scheduler-2", ring, fold(cluster()))
    for replica in replicas:
        replica.session()
    # each replica owns some of the jobs and of the queues (else the test would prove little)
    for keys in (JOBS, [queue_key(q) for q in QUEUES]):
        assert {ring.owner(k) for k in keys} == {"scheduler-1", "scheduler-2"}
    return replicas


QUEUE_FAMILIES = [
    "volcano_queue_allocated_milli_cpu",
    "volcano_queue_allocated_memory_bytes",
    "volcano_queue_deserved_milli_cpu",
    "volcano_queue_request_milli_cpu",
    "volcano_queue_real_capacity_milli_cpu",
    "volcano_queue_inqueue_milli_cpu",
    "volcano_queue_share",
    "volcano_queue_weight",
    "volcano_queue_overused",
]
JOB_FAMILIES = [
    "volcano_e2e_job_scheduling_start_time",
    "volcano_unschedule_task_count",
    "volcano_job_share",
]


def _named(labels: str) -> str:
    """The queue or job (namespace/name) a series' label text is about."""
    found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
    if "queue_name" in found:
        return found["queue_name"]
    return found.get("job_id") or f"{found['job_namespace']}/{found['job_name']}"


def test_each_queue_and_job_is_exported_by_one_replica_only() -> None:
    first, second = two_replicas()
    for family in QUEUE_FAMILIES + JOB_FAMILIES:
        one, two = first.series_of(family), second.series_of(family)
        assert not set(one) & set(two), f"{family} exported twice: {set(one) & set(two)}"
        names = {_named(labels) for labels in {*one, *two}}
        expected = set(QUEUES) if family.startswith("volcano_queue_") else set(JOBS)
        assert names == expected, family
    # every queue of the hierarchy, not only the leaves, with capacity's figures
    capacity = {
        **first.series_of("volcano_queue_capacity_milli_cpu"),
        **second.series_of("volcano_queue_capacity_milli_cpu"),
    }
    assert capacity == {'queue_name="eng"': 12000.0}
    deserved = {
        **first.series_of("volcano_queue_deserved_milli_cpu"),
        **second.series_of("volcano_queue_deserved_milli_cpu"),
    }
    assert [deserved[f'queue_name="{q}"'] for q in ("dev", "prod", "ops")] == [4000, 4000, 2000]
    # the gangs that did not fit: their missing tasks, and a retry each
    unready = {
        **first.series_of("volcano_unschedule_task_count"),
        **second.series_of("volcano_unschedule_task_count"),
    }
    assert {k: v for k, v in unready.items() if v} == {'job_id="default/j6"': 2, 'job_id="default/j7"': 2}
    retries = {**first.series_of("volcano_job_retry_counts"), **second.series_of("volcano_job_retry_counts")}
    assert retries == {'job_id="default/j6"': 1, 'job_id="default/j7"': 1}
    # the scheduled ones: their latency, once each, from the replica that scheduled them
    counts = [
        r.registry.get("volcano_e2e_job_scheduling_latency_milliseconds").count for r in (first, second)
    ]  # type: ignore[union-attr]
    assert sum(counts) == 6 and all(counts)


def test_a_deleted_jobs_series_go_away() -> None:
    first, second = two_replicas()
    owner = first if first.owned.owns("default/j0") else second
    assert any("default/j0" in labels for labels in owner.series_of("volcano_unschedule_task_count"))
    assert any(
        'job_name="j0"' in labels for labels in owner.series_of("volcano_e2e_job_scheduling_start_time")
    )
    seq = owner.state.view.seq + 1
    owner.state = CORE.apply(owner.state, event(seq, "PodGroupDeleted", "default/j0", {}))
    text = owner.registry.render()
    assert "default/j0" not in text and 'job_name="j0"' not in text
    assert "default/j0" not in owner.series.jobs.jobs


def test_a_moved_job_is_exported_by_its_new_owner() -> None:
    first, _ = two_replicas()
    alone = Ring(["scheduler-1"])
    first.owned = Owned(alone, "scheduler-1")  # the other replica left: everything is the first's
    names = {
        re.search(r'job_name="([^"]+)"', labels)[1]
        for labels in first.series_of("volcano_e2e_job_scheduling_start_time")
    }  # type: ignore[index]
    assert names == {key.split("/")[1] for key in JOBS}


def scheduled(name: str, at: float) -> Any:
    condition = PodGroupCondition(type="Scheduled", status="True", last_transition_time=at)
    pg = podgroup(name, queue="default", min_member=1, phase="Completed")
    return replace(pg, status=PodGroupStatus(phase="Completed", conditions=(condition,)))


def test_finished_jobs_expire_and_are_capped() -> None:
    groups = [scheduled(f"old{i}", at=NOW - 7200) for i in range(3)]
    groups += [scheduled(f"new{i}", at=NOW - i) for i in range(5)]
    live = podgroup("live", queue="default", min_member=1)
    chosen = exported_jobs(
        [*groups, live], lambda key: key != "default/live", lambda key: True, NOW, max_finished=3
    )
    assert [pg.meta.name for pg in chosen] == ["live", "new0", "new1", "new2"]
