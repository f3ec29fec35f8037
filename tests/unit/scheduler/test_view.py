"""The scheduler's view: events fold into the objects a session reads; assumed plans show until the log
answers for them."""

from __future__ import annotations

import time
from typing import Any

import pytest
from support.builders import gang, hypernode, node, pod, podgroup, priority_class, queue, res
from support.events import EventLog

from contracts.codec import encode, encode_object
from contracts.objects import PodGroupCondition
from contracts.plans import Bind, Eviction, PlanMessage, PodGroupUpdate
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.model.task import TaskStatus, status_of_pod
from services.scheduler.view import SchedulerView


def folded(*objects: Any) -> tuple[SchedulerView, EventLog]:
    view, log = SchedulerView(), EventLog(time_from_seq=True)
    for obj in objects:
        view.apply(log.created(obj))
    return view, log


POD = "default/p"
BOUND = ("PodBound", {"node": "n1", "plan": "x"})


def pod_status(view: SchedulerView, key: str = POD) -> TaskStatus | None:
    shown = view.pod(key)
    return None if shown is None else status_of_pod(shown)


@pytest.mark.parametrize(
    ("steps", "status", "node_name"),
    [
        ([], TaskStatus.PENDING, ""),
        ([("PodBound", {"node": "n1", "plan": "x"})], TaskStatus.BOUND, "n1"),
        (
            [("PodBound", {"node": "n1", "plan": "x"}), ("PodRunning", {"node": "n1"})],
            TaskStatus.RUNNING,
            "n1",
        ),
        (
            [BOUND, ("PodRunning", {"node": "n1"}), ("PodSucceeded", {"node": "n1", "exit_code": 0})],
            TaskStatus.SUCCEEDED,
            "n1",
        ),
        (
            [
                BOUND,
                ("PodRunning", {"node": "n1"}),
                ("PodFailed", {"node": "n1", "exit_code": 2, "reason": "Error"}),
            ],
            TaskStatus.FAILED,
            "n1",
        ),
        (
            [BOUND, ("PodRunning", {"node": "n1"}), ("PodLost", {"node": "n1", "reason": "NodeLost"})],
            TaskStatus.FAILED,
            "n1",
        ),
        (
            [
                BOUND,
                ("PodRunning", {"node": "n1"}),
                ("PodEvicting", {"node": "n1", "reason": "preempt", "plan": "x"}),
            ],
            TaskStatus.RELEASING,
            "n1",
        ),
        (
            [("PodBound", {"node": "n1", "plan": "x"}), ("PodDeletionRequested", {"reason": "JobDeleted"})],
            TaskStatus.RELEASING,
            "n1",
        ),
        (
            [BOUND, ("PodRunning", {"node": "n1"}), ("PodTerminated", {"node": "n1", "reason": "Evicted"})],
            None,
            None,
        ),
    ],
    ids=[
        "pending",
        "bound",
        "running",
        "succeeded",
        "failed",
        "lost",
        "evicting",
        "deletion-requested",
        "terminated",
    ],
)
def test_pod_events_fold_into_the_task_status_a_session_sees(
    steps: list[tuple[str, dict[str, Any]]], status: TaskStatus | None, node_name: str | None
) -> None:
    view, log = folded(node("n1"), podgroup("g"), pod("p", "g"))
    for type_, payload in steps:
        view.apply(log.event(type_, POD, payload))
    assert pod_status(view) == status
    shown = view.pod(POD)
    assert (shown.spec.node_name if shown else None) == node_name
    assert len(view.snapshot().pods) == (0 if status is None else 1)


def test_lost_pods_carry_the_reason() -> None:
    view, log = folded(pod("p", "g", node_name="n1", phase="Running"))
    view.apply(log.event("PodLost", POD, {"node": "n1", "reason": "NodeLost"}))
    assert view.pod(POD).status.reason == "NodeLost"


@pytest.mark.parametrize(
    ("steps", "ready"),
    [([], True), (["NodeNotReady"], False), (["NodeNotReady", "NodeReady"], True)],
)
def test_node_readiness(steps: list[str], ready: bool) -> None:
    view, log = folded(node("n1"))
    for type_ in steps:
        view.apply(log.event(type_, "n1", {"last_heartbeat": 0.0} if type_ == "NodeNotReady" else {}))
    assert [n.ready for n in view.snapshot().nodes] == [ready]


def test_queues_keep_their_status_across_spec_changes_and_default_always_exists() -> None:
    view, log = folded(queue("q1", capability=res(cpu=4)))
    view.apply(log.event("QueueStateChanged", "q1", {"state": "Closed"}))
    view.apply(log.created(queue("q1", weight=3)))
    queues = {q.meta.name: q for q in view.snapshot().queues}
    assert set(queues) == {"default", "q1"}
    assert (queues["q1"].weight, queues["q1"].status.state) == (3, "Closed")
    view.apply(log.event("QueueDeleted", "q1"))
    assert [q.meta.name for q in view.snapshot().queues] == ["default"]
    view.apply(log.created(queue("default", weight=5)))
    assert [(q.meta.name, q.weight) for q in view.snapshot().queues] == [("default", 5)]


def test_priority_classes_and_hypernodes_are_applied_and_deleted() -> None:
    view, log = folded(priority_class("high", 100), hypernode("rack", 1, ["n1"]))
    snap = view.snapshot()
    assert ([pc.value for pc in snap.priority_classes], [h.meta.name for h in snap.hypernodes]) == (
        [100],
        ["rack"],
    )
    view.apply(log.event("PriorityClassDeleted", "high"))
    view.apply(log.event("HyperNodeDeleted", "rack"))
    snap = view.snapshot()
    assert (snap.priority_classes, snap.hypernodes) == ((), ())


def test_podgroup_status_changes_and_deletion() -> None:
    view, log = folded(podgroup("g", phase="Pending"))
    condition = PodGroupCondition(type="Unschedulable", reason="NotEnoughResources", message="0/1 nodes")
    view.apply(
        log.event(
            "PodGroupStatusChanged",
            "default/g",
            {
                "phase": "Inqueue",
                "conditions": [encode(condition)],
                "running": 0,
                "succeeded": 0,
                "failed": 0,
            },
        )
    )
    status = view.podgroup("default/g").status
    assert (status.phase, status.conditions) == ("Inqueue", (condition,))
    view.apply(log.event("PodGroupDeleted", "default/g"))
    assert view.snapshot().podgroups == ()


def test_snapshot_is_at_the_last_seq_and_reuses_unchanged_tuples() -> None:
    view, log = folded(node("n1"), pod("p", "g"))
    first = view.snapshot()
    assert first.sequence == log.seq == 2
    assert view.snapshot(7).sequence == 7
    view.apply(log.event("PodBound", POD, {"node": "n1", "plan": "x"}))
    second = view.snapshot()
    assert second.sequence == 3
    assert second.nodes is first.nodes  # nothing about nodes changed
    assert second.pods is not first.pods and second.pods[0].spec.node_name == "n1"


# --- assumptions ---------------------------------------------------------------------------------------


def plan(
    pid: str,
    binds: tuple[Bind, ...] = (),
    evictions: tuple[Eviction, ...] = (),
    podgroups: dict | None = None,
) -> PlanMessage:
    return PlanMessage(pid, "r1", 0, binds, evictions, podgroups or {})


INQUEUE = PodGroupUpdate("Inqueue", (PodGroupCondition(type="Scheduled"),), 0, 0, 0)


def two_pod_gang() -> tuple[SchedulerView, EventLog, PlanMessage]:
    view, log = folded(node("n1"), *gang("g", 2, phase="Pending"))
    binds = (Bind("default/g-worker-0", "default/g", "n1"), Bind("default/g-worker-1", "default/g", "n1"))
    return view, log, plan("p1", binds, podgroups={"default/g": INQUEUE})


def test_assumed_binds_and_statuses_show_until_the_log_confirms_each() -> None:
    view, log, planned = two_pod_gang()
    view.assume(planned)
    assert [status_of_pod(p) for p in view.snapshot().pods] == [TaskStatus.BOUND, TaskStatus.BOUND]
    assert view.podgroup("default/g").status.phase == "Inqueue"
    view.apply(log.event("PodBound", "default/g-worker-0", {"node": "n1", "plan": "p1"}))
    assert view.assumed_plans() == ("p1",)
    view.apply(log.event("PodBound", "default/g-worker-1", {"node": "n1", "plan": "p1"}))
    view.apply(log.event("PodGroupStatusChanged", "default/g", {"phase": "Inqueue", "conditions": []}))
    assert view.assumed_plans() == ()
    # what shows now is the log's: the status event carried no conditions
    assert view.podgroup("default/g").status.conditions == ()
    assert [p.spec.node_name for p in view.snapshot().pods] == ["n1", "n1"]


@pytest.mark.parametrize("how", ["forget", "PlanRejected"])
def test_a_rejected_plan_is_forgotten(how: str) -> None:
    view, log, planned = two_pod_gang()
    view.assume(planned)
    if how == "forget":
        view.forget("p1")
    else:
        view.apply(log.event("PlanRejected", "default/g", {"reason": "full", "checked_seq": 3, "plan": "p1"}))
    assert [status_of_pod(p) for p in view.snapshot().pods] == [TaskStatus.PENDING, TaskStatus.PENDING]
    assert view.podgroup("default/g").status.phase == "Pending"
    assert view.assumed_plans() == ()


def test_assumed_evictions_show_releasing_until_pod_evicting() -> None:
    view, log = folded(node("n1"), pod("p", "g", node_name="n1", phase="Running"))
    view.assume(plan("p1", evictions=(Eviction(POD, "default/g", "n1", "preempt"),)))
    assert pod_status(view) == TaskStatus.RELEASING
    view.apply(log.event("PodEvicting", POD, {"node": "n1", "reason": "preempt", "plan": "p1"}))
    assert (pod_status(view), view.assumed_plans()) == (TaskStatus.RELEASING, ())
    view.apply(log.event("PodTerminated", POD, {"node": "n1", "reason": "Evicted"}))
    assert view.pod(POD) is None


def test_assumptions_about_unknown_objects_are_ignored() -> None:
    view, _ = folded(node("n1"))
    view.assume(plan("p1", (Bind("default/ghost", "default/g", "n1"),), podgroups={"default/g": INQUEUE}))
    assert view.assumed_plans() == ()


def test_next_session_neither_replaces_assumed_pods_nor_over_commits() -> None:
    # n1 holds two 1-cpu pods; gang a (2 pods) is planned, gang b (2 pods) must wait
    view, _ = folded(node("n1", cpu=2), *gang("a", 2), *gang("b", 2))
    first = run_session(view.snapshot())
    assert len(first.plans) == 1
    planned = first.plans[0]
    view.assume(plan("p1", planned.binds))
    again = run_session(view.snapshot())
    assert again.plans == ()
    # once rejected, the same pods are placeable again
    view.forget("p1")
    assert len(run_session(view.snapshot()).plans) == 1


# --- scale ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # folding 55,000 create events is the slow part (decoding objects)
def test_snapshot_of_5000_nodes_and_50000_pods_is_cheap() -> None:
    log = EventLog(time_from_seq=True)
    view = SchedulerView()
    template = encode_object(pod("template", "g"))
    for i in range(5000):
        view.apply(log.created(node(f"n{i}")))
    for i in range(50_000):
        obj = template["object"]
        payload = {"object": {"kind": "Pod", "object": {**obj, "meta": {**obj["meta"], "name": f"p{i}"}}}}
        view.apply(log.event("PodCreated", f"default/p{i}", payload))
    view.snapshot()
    # each snapshot follows a change to pods, so the pod tuple is rebuilt every time
    timings = []
    for i in range(5):
        view.apply(log.event("PodBound", f"default/p{i}", {"node": "n1", "plan": "x"}))
        start = time.perf_counter()
        snap = view.snapshot()
        timings.append(time.perf_counter() - start)
    assert (len(snap.nodes), len(snap.pods)) == (5000, 50_000)
    assert min(timings) < 0.02
