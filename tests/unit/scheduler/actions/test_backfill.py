"""backfill: BestEffort tasks (no request) placed after allocate (Volcano's backfill action)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, priority_class, queue, run, session

from services.scheduler.core.model.task import TaskStatus

TIERS = (["priority", "gang", "conformance"], ["predicates"])
CLASSES = [priority_class("low", 10), priority_class("high", 100)]


def be(name: str, group: str, **kwargs: Any):
    """A BestEffort pod: no request at all."""
    return pod(name, group, cpu=None, memory=None, **kwargs)


@dataclass
class Case:
    name: str
    objects: list[Any]
    binds: dict[str, str] = field(default_factory=dict)
    actions: str = "backfill"


CASES = [
    Case(
        "a BestEffort task of an admitted job is bound",
        [node("n1"), podgroup("j"), be("j-0", "j")],
        binds={"default/j-0": "n1"},
    ),
    Case(
        "a Pending PodGroup waits for enqueue",
        [node("n1"), podgroup("j", phase="Pending"), be("j-0", "j")],
    ),
    Case(
        "tasks with a request are left to allocate",
        [node("n1"), podgroup("j"), pod("j-0", "j", cpu=1)],
    ),
    Case(
        "an invalid gang (fewer pods than minMember) is skipped",
        [node("n1"), podgroup("j", min_member=2), be("j-0", "j")],
    ),
    Case(
        "a BestEffort gang is bound as a whole",
        [node("n1"), podgroup("j", min_member=2), be("j-0", "j"), be("j-1", "j")],
        binds={"default/j-0": "n1", "default/j-1": "n1"},
    ),
    Case(
        "a gang not ready without its other tasks binds nothing",
        [node("n1"), podgroup("j", min_member=2), pod("j-0", "j", cpu=8), be("j-1", "j")],
    ),
    Case(
        "the pod-count limit holds: a full node is skipped",
        [
            node("n1", pods=1),
            node("n2"),
            podgroup("other"),
            pod("other-0", "other", node_name="n1"),
            podgroup("j"),
            be("j-0", "j"),
        ],
        binds={"default/j-0": "n2"},
    ),
    Case(
        "predicates apply: nodeSelector",
        [
            node("n1"),
            node("n2", labels={"zone": "b"}),
            podgroup("j"),
            be("j-0", "j", node_selector={"zone": "b"}),
        ],
        binds={"default/j-0": "n2"},
    ),
    Case(
        "jobs of one queue go in job order (priority)",
        [
            node("n1", pods=1),
            podgroup("low", priority_class="low"),
            be("low-0", "low"),
            podgroup("high", priority_class="high"),
            be("high-0", "high"),
        ],
        binds={"default/high-0": "n1"},
    ),
    Case(
        "queues come before jobs: the first queue's job wins the last slot",
        [
            node("n1", pods=1),
            queue("q1"),
            queue("q2"),
            podgroup("low", priority_class="low", queue="q1"),
            be("low-0", "low"),
            podgroup("high", priority_class="high", queue="q2"),
            be("high-0", "high"),
        ],
        binds={"default/low-0": "n1"},
    ),
    Case(
        "tasks of one job go in task order (task priority)",
        [
            node("n1", pods=1),
            podgroup("j"),
            be("j-0", "j", annotations={"volcano.sh/task-priority": "1"}),
            be("j-1", "j", annotations={"volcano.sh/task-priority": "9"}),
        ],
        binds={"default/j-1": "n1"},
    ),
    Case(
        "a BestEffort task pipelined by preempt is un-pipelined and bound",
        [node("n1"), podgroup("j"), be("j-0", "j")],
        binds={"default/j-0": "n1"},
        actions="preempt, backfill",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backfill(case: Case) -> None:
    result = run([*CLASSES, *case.objects], conf(case.actions, *TIERS))
    assert result.binds == case.binds
    assert result.pipelined == {}
    assert result.evictions == []


def test_fit_errors_are_recorded_for_the_unschedulable_condition() -> None:
    ssn = session([node("n1", pods=0), podgroup("j"), be("j-0", "j")], conf("backfill", *TIERS))
    ssn.run()
    assert ssn.jobs["default/j"].fit_errors == {"default-j-0": {"too many pods": 1}}


def test_not_ready_allocation_stays_uncommitted() -> None:
    ssn = session(
        [node("n1"), podgroup("j", min_member=2), pod("j-0", "j", cpu=8), be("j-1", "j")],
        conf("backfill", *TIERS),
    )
    result = ssn.run()
    assert ssn.jobs["default/j"].tasks["default-j-1"].status == TaskStatus.ALLOCATED
    assert result.plans == ()


def test_ready_job_dispatches_tasks_left_allocated_by_an_earlier_action() -> None:
    """Volcano's ssn.Allocate binds every Allocated task of a job once it is ready. Here preempt pipelines
    the two BestEffort tasks (nothing to evict), allocate then allocates j-2 and pipelines j-3 (n1 only
    frees up when old-0 is gone) and leaves the gang's statement open; backfill un-pipelines the
    BestEffort tasks, and placing the first makes the gang ready: j-2 is bound with it."""
    objects = [
        node("n1", cpu=1),
        node("n2", cpu=1),
        podgroup("old"),
        pod("old-0", "old", cpu=1, node_name="n1", deleting=True),
        podgroup("j", min_member=2),
        be("j-0", "j"),
        be("j-1", "j"),
        pod("j-2", "j", cpu=1, preemption_policy="Never"),
        pod("j-3", "j", cpu=1, preemption_policy="Never"),
    ]
    result = run(objects, conf("preempt, allocate, backfill", *TIERS))
    binds = result.binds
    assert binds.pop("default/j-2") == "n2"
    assert set(binds) == {"default/j-0", "default/j-1"}
    assert result.pipelined == {"default/j-3": "n1"}
