"""The binder's ledger: per-node usage and pod counts, per-queue allocation, folded idempotently; and the
binder state's checkpoint round trip."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import node, pod, podgroup, queue, res
from support.events import EventLog

from contracts.objects import Node, ObjectMeta
from contracts.plans import Bind, PlanMessage, PodGroupUpdate
from services.binder.core.core import BinderCore, BinderState
from services.binder.core.ledger import Ledger, apply_event

GIB = 1024**3 * 1000  # milli-units


def ledger_of(*objects: Any) -> tuple[Ledger, EventLog]:
    ledger, log = Ledger(), EventLog()
    for obj in objects:
        apply_event(ledger, log.created(obj))
    return ledger, log


POD = "default/p"
BOUND = ("PodBound", {"node": "n1", "plan": "x"})
RUNNING = ("PodRunning", {"node": "n1"})


@pytest.mark.parametrize(
    ("steps", "node_cpu", "node_pods", "queue_cpu"),
    [
        ([], 0, 0, 0),
        ([BOUND], 2000, 1, 2000),
        ([BOUND, BOUND], 2000, 1, 2000),  # the binder's own PodBound, folded again from the log
        ([BOUND, RUNNING], 2000, 1, 2000),
        # a report about a pod the ledger knows unbound is about an earlier generation of its name
        ([RUNNING], 0, 0, 0),
        ([BOUND, RUNNING, ("PodSucceeded", {"node": "n1", "exit_code": 0})], 0, 0, 0),
        ([BOUND, RUNNING, ("PodFailed", {"node": "n1", "exit_code": 1, "reason": "Error"})], 0, 0, 0),
        ([BOUND, RUNNING, ("PodLost", {"node": "n1", "reason": "NodeLost"})], 0, 0, 0),
        # an evicted pod holds its node until it stopped, but no longer counts for its queue
        ([BOUND, RUNNING, ("PodEvicting", {"node": "n1", "reason": "preempt", "plan": "y"})], 2000, 1, 0),
        ([BOUND, ("PodDeletionRequested", {"reason": "JobDeleted"})], 2000, 1, 0),
        ([BOUND, RUNNING, ("PodTerminated", {"node": "n1", "reason": "Evicted"})], 0, 0, 0),
        ([BOUND, ("PodTerminated", {"node": "n1", "reason": "Deleted"}), BOUND], 0, 0, 0),  # gone stays gone
    ],
    ids=[
        "pending",
        "bound",
        "bound-twice",
        "running",
        "running-of-an-earlier-generation",
        "succeeded",
        "failed",
        "lost",
        "evicting",
        "deletion-requested",
        "terminated",
        "terminated-then-stale-bind",
    ],
)
def test_pod_lifecycle_accounting(
    steps: list[tuple[str, dict[str, Any]]], node_cpu: int, node_pods: int, queue_cpu: int
) -> None:
    ledger, log = ledger_of(node("n1"), podgroup("g", queue="q"), pod("p", "g", cpu=2))
    for type_, payload in steps:
        apply_event(ledger, log.event(type_, POD, payload))
    n1 = ledger.nodes["n1"]
    assert (n1.used.get("cpu", 0), len(n1.pods)) == (node_cpu, node_pods)
    assert ledger.queue_allocated.get("q", {}).get("cpu", 0) == queue_cpu
    assert ledger.seq == log.seq


def test_pod_requests_are_effective_milli_units_and_queue_comes_from_the_podgroup() -> None:
    ledger, _ = ledger_of(
        podgroup("g", queue="q"), pod("p", "g", cpu="500m", memory="1Gi"), pod("plain", None)
    )
    assert ledger.pods[POD].requests == {"cpu": 500, "memory": GIB}
    assert (ledger.pods[POD].queue, ledger.pods[POD].podgroup) == ("q", "default/g")
    assert (ledger.pods["default/plain"].queue, ledger.pods["default/plain"].podgroup) == ("default", "")


def test_pods_created_bound_are_accounted() -> None:
    ledger, _ = ledger_of(node("n1"), pod("p", "g", node_name="n1", phase="Running"))
    assert ledger.nodes["n1"].pods == {POD}


@pytest.mark.parametrize(
    ("registered", "max_pods"),
    [(node("n1", pods=3), 3), (Node(meta=ObjectMeta(name="n1", namespace=""), allocatable=res(cpu=1)), 110)],
    ids=["from-allocatable", "default"],
)
def test_max_pods(registered: Node, max_pods: int) -> None:
    ledger, _ = ledger_of(registered)
    assert ledger.nodes["n1"].max_pods == max_pods


def test_node_registration_readiness_and_re_registration() -> None:
    ledger, log = ledger_of(node("n1"), pod("p", "g", node_name="n1", phase="Running"))
    apply_event(ledger, log.event("NodeNotReady", "n1", {"last_heartbeat": 0.0}))
    n1 = ledger.nodes["n1"]
    assert (n1.ready, n1.ready_seq, n1.not_ready_seq) == (False, 1, 3)
    apply_event(ledger, log.event("NodeReady", "n1"))
    assert (n1.ready, n1.ready_seq) == (True, 4)
    apply_event(ledger, log.created(node("n1", cpu=8), at=50.0))
    n1 = ledger.nodes["n1"]
    assert (n1.allocatable["cpu"], n1.registered_at, n1.used["cpu"], n1.pods) == (8000, 50.0, 1000, {POD})


@pytest.mark.parametrize(
    ("capability", "caps"),
    [
        (None, None),
        (res(cpu=4, gpu=2), {"cpu": 4000, "nvidia.com/gpu": 2000}),
        (res(cpu=0, memory="1Gi"), {"memory": GIB}),  # cpu <= 0 is unlimited, as in Volcano
    ],
)
def test_queue_capability(capability: Any, caps: dict[str, int] | None) -> None:
    ledger, log = ledger_of(queue("q", capability=capability))
    assert ledger.capabilities.get("q") == caps
    apply_event(ledger, log.event("QueueDeleted", "q"))
    assert "q" not in ledger.capabilities


def test_podgroup_deleted() -> None:
    ledger, log = ledger_of(podgroup("g", queue="q"))
    assert ledger.podgroups == {"default/g": "q"}
    apply_event(ledger, log.event("PodGroupDeleted", "default/g"))
    assert ledger.podgroups == {}


def test_events_it_does_not_track_are_ignored() -> None:
    ledger, log = ledger_of(node("n1"))
    apply_event(ledger, log.event("JobDeleted", "default/j"))
    apply_event(ledger, log.event("PodBound", "default/unknown", {"node": "n1", "plan": "x"}))
    assert (ledger.seq, ledger.pods, ledger.nodes["n1"].pods) == (3, {}, set())


def test_dump_load_round_trip() -> None:
    core = BinderCore()
    state = BinderState()
    log = EventLog()
    for obj in (node("n1"), node("n2"), queue("q", capability=res(cpu=8)), podgroup("g", queue="q")):
        state = core.apply(state, log.created(obj, at=1.0))
    for name in ("a", "b", "c"):
        state = core.apply(state, log.created(pod(name, "g")))
    state = core.apply(state, log.event("PodBound", "default/c", {"node": "n2", "plan": "old"}))
    state = core.heartbeat(state, ["n1"], 5.0)
    state = core.watch_from(state, 2.0)
    plan = PlanMessage(
        "p1",
        "r1",
        log.seq,
        (Bind("default/a", "default/g", "n1"), Bind("default/b", "default/g", "n1")),
        podgroups={"default/g": PodGroupUpdate("Inqueue", (), 0, 0, 0)},
    )
    state, outputs = core.submit_plan(state, plan, 6.0)
    assert len(outputs) == 3
    # in flight: its events are asked for again, before and after a checkpoint
    assert core.reconcile(state, 7.0) == outputs
    loaded = core.load(core.dump(state))
    assert loaded == state
    assert core.reconcile(loaded, 7.0) == core.reconcile(state, 7.0)
    # one of the plan's events came back: all of them are in the log (one atomic batch)
    state = core.apply(state, log.event("PodBound", "default/a", outputs[0].payload, id=outputs[0].id))
    assert core.reconcile(state, 7.0) == [] and state.inflight == {} and state.awaited == {}
    assert core.load(core.dump(state)) == state
