"""Plan verification against the ledger, and committing plans: one atomic batch or one PlanRejected,
applied optimistically and reconciled with the log without double counting."""

from __future__ import annotations

import pytest
from support.builders import gang, node, pod, podgroup, queue, res
from support.events import EventLog

from contracts import payloads
from contracts.plans import Bind, Eviction, PlanMessage, PodGroupUpdate, decode_plan, encode_plan
from services.binder.core.core import BinderCore, BinderState
from services.binder.core.verify import verify
from services.scheduler.core.framework.session import run_session
from services.scheduler.plans import build_plans
from services.scheduler.view import SchedulerView


def cluster() -> tuple[BinderCore, BinderState, EventLog]:
    """n1: 4 cpu, 1 used by a pod of the capped queue; n2 NotReady; n3 unschedulable; n4 holds one pod
    and no more; n5: 16 cpu with a bound pod, a running victim and a terminating pod. Queue `capped`
    allows 3 cpu. Pending: p0..p3 (1 cpu each, gang g), c0 and c1 (2 cpu each, capped queue)."""
    objects = [
        node("n1", cpu=4),
        node("n2"),
        node("n3", unschedulable=True),
        node("n4", pods=1),
        node("n5", cpu=16, memory="64Gi"),
        queue("capped", capability=res(cpu=3)),
        podgroup("g"),
        podgroup("c", queue="capped"),
        podgroup("v"),
        pod("c-run", "c", cpu=1, node_name="n1", phase="Running"),
        pod("occupant", "v", node_name="n4", phase="Running"),
        pod("bound", "v", node_name="n5", phase="Pending"),
        pod("victim", "v", node_name="n5", phase="Running"),
        pod("leaving", "v", node_name="n5", phase="Running", deleting=True),
        pod("deleting", "g", deleting=True),
        pod("failed", "g", phase="Failed"),
        pod("gpu", "g", gpu=1),
        *(pod(f"p{i}", "g") for i in range(4)),
        *(pod(f"c{i}", "c", cpu=2) for i in range(2)),
    ]
    core, state, log = BinderCore(), BinderState(), EventLog()
    for obj in objects:
        state = core.apply(state, log.created(obj))
    state = core.apply(state, log.event("NodeNotReady", "n2", {"last_heartbeat": 0.0}))
    return core, state, log


def binds(*pairs: str) -> tuple[Bind, ...]:
    """binds("p0@n1", "c0@n5"): pods of gang g (c* of gang c)."""
    out = []
    for pair in pairs:
        name, node_name = pair.split("@")
        out.append(Bind(f"default/{name}", "default/c" if name.startswith("c") else "default/g", node_name))
    return tuple(out)


def evictions(*pairs: str) -> tuple[Eviction, ...]:
    return tuple(
        Eviction(f"default/{p.split('@')[0]}", "default/v", p.split("@")[1], "preempt") for p in pairs
    )


def plan(pid: str = "plan-1", b: tuple = (), e: tuple = (), podgroups: dict | None = None) -> PlanMessage:
    return PlanMessage(pid, "r1", 7, b, e, podgroups or {})


INQUEUE = PodGroupUpdate("Inqueue", (), 0, 0, 0)


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        (plan(b=binds("p0@n1", "p1@n1", "p2@n1")), ""),
        (
            plan(b=binds("p0@n1", "p1@n1", "p2@n1", "p3@n1")),
            "pod default/p3 does not fit node n1: cpu requests 1000, 0 idle",
        ),
        (
            plan(b=binds("gpu@n1")),
            "pod default/gpu does not fit node n1: nvidia.com/gpu requests 1000, 0 idle",
        ),
        (plan(b=binds("p0@n1", "p1@n2")), "node n2 is NotReady"),  # a gang is all or nothing
        (
            plan(b=(Bind("default/bound", "default/v", "n1"),)),
            "pod default/bound is already bound to node n5",
        ),
        (plan(b=binds("p0@n3")), "node n3 is unschedulable"),
        (plan(b=binds("p0@nx")), "node nx not found"),
        (plan(b=(Bind("default/ghost", "default/g", "n1"),)), "pod default/ghost not found"),
        (plan(b=binds("p0@n4")), "node n4 is full (1 pods)"),
        (plan(b=(Bind("default/deleting", "default/g", "n1"),)), "pod default/deleting is terminating"),
        (plan(b=(Bind("default/failed", "default/g", "n1"),)), "pod default/failed is Failed, not Pending"),
        (plan(b=binds("c0@n5")), ""),
        (
            plan(b=binds("c0@n5", "c1@n5")),
            "queue capped capability exceeded on cpu: allocated 1000 + plan 4000 > capability 3000",
        ),
        (plan(b=binds("p0@n1", "p0@n5")), "pod default/p0 appears more than once in the plan"),
        (plan(e=evictions("victim@n5")), ""),
        (plan(e=evictions("victim@n1")), "pod default/victim is on node n5, not on node n1"),
        (plan(e=evictions("p0@n1")), "pod default/p0 is Pending on no node, not on node n1"),
        (plan(e=evictions("leaving@n5")), "pod default/leaving is already terminating"),
        (plan(e=evictions("ghost@n5")), "pod default/ghost not found"),
        (
            plan(b=(Bind("default/victim", "default/v", "n5"),), e=evictions("victim@n5")),
            "appears more than once",
        ),
        (plan(b=binds("p0@n1"), podgroups={"default/g": INQUEUE}), ""),
        (plan(podgroups={"default/nope": INQUEUE}), "podgroup default/nope not found"),
    ],
    ids=[
        "fitting-gang",
        "over-commit",
        "missing-dimension",
        "gang-all-or-nothing",
        "already-bound",
        "unschedulable",
        "unknown-node",
        "unknown-pod",
        "pod-count",
        "terminating",
        "not-pending",
        "queue-within-capability",
        "queue-capability-exceeded",
        "duplicate-pod",
        "eviction",
        "eviction-wrong-node",
        "eviction-unbound",
        "eviction-terminating",
        "eviction-unknown",
        "bind-and-evict-same-pod",
        "with-status",
        "status-of-unknown-podgroup",
    ],
)
def test_verify(candidate: PlanMessage, reason: str) -> None:
    _, state, log = cluster()
    verdict = verify(state.ledger, candidate)
    assert (verdict.accepted, verdict.checked_seq) == (not reason, log.seq)
    assert reason in verdict.reason if reason else verdict.reason == ""


def test_accepted_plan_is_one_batch_of_events() -> None:
    core, state, _ = cluster()
    accepted = plan(b=binds("p0@n1", "p1@n1"), e=evictions("victim@n5"), podgroups={"default/g": INQUEUE})
    state, outputs = core.submit_plan(state, accepted, 1.0)
    assert [(o.type, o.namespace, o.name) for o in outputs] == [
        ("PodBound", "default", "p0"),
        ("PodBound", "default", "p1"),
        ("PodEvicting", "default", "victim"),
        ("PodGroupStatusChanged", "default", "g"),
    ]
    assert {o.batch for o in outputs} == {"plan-1"}
    assert {o.causation_id for o in outputs} == {"plan-1"}
    assert outputs[0].payload == payloads.PodBound(node="n1", plan="plan-1")
    assert outputs[2].payload == payloads.PodEvicting(node="n5", reason="preempt", plan="plan-1")
    assert outputs[3].payload.phase == "Inqueue"
    assert len({o.id for o in outputs}) == 4
    # the same plan decided again (another binder, after a restart) names the same events
    _, again = BinderCore().submit_plan(cluster()[1], accepted, 1.0)
    assert [o.id for o in again] == [o.id for o in outputs]


def test_rejected_plan_is_one_plan_rejected_and_changes_nothing() -> None:
    core, state, log = cluster()
    before = core.dump(state)
    state, outputs = core.submit_plan(state, plan(b=binds("p0@n1", "p1@n2")), 1.0)
    [rejected] = outputs
    assert (rejected.type, rejected.kind, rejected.namespace, rejected.name) == (
        "PlanRejected",
        "podgroup",
        "default",
        "g",
    )
    assert rejected.payload == payloads.PlanRejected(
        reason="node n2 is NotReady", checked_seq=log.seq, plan="plan-1", replica="r1"
    )
    assert rejected.batch is None
    assert core.dump(state) == before


def test_back_to_back_conflicting_plans_the_second_is_rejected() -> None:
    core, state, _ = cluster()
    state, first = core.submit_plan(state, plan("a", binds("p0@n1", "p1@n1", "p2@n1")), 1.0)
    assert [o.type for o in first] == ["PodBound"] * 3
    state, second = core.submit_plan(state, plan("b", binds("p3@n1")), 1.0)
    assert [(o.type, o.payload.reason) for o in second] == [
        ("PlanRejected", "pod default/p3 does not fit node n1: cpu requests 1000, 0 idle")
    ]
    # and a pod the first plan placed cannot be placed again
    _, third = core.submit_plan(state, plan("c", binds("p0@n5")), 1.0)
    assert third[0].payload.reason == "pod default/p0 is already bound to node n1"


def test_a_plan_then_its_own_events_from_the_log_count_once() -> None:
    core, state, log = cluster()
    accepted = plan(b=binds("c0@n1", "p0@n1"), e=evictions("victim@n5"))
    state, outputs = core.submit_plan(state, accepted, 1.0)
    n1 = state.ledger.nodes["n1"]
    expected = (n1.used["cpu"], len(n1.pods), dict(state.ledger.queue_allocated["capped"]))
    assert expected == (4000, 3, {"cpu": 3000, "memory": 2 * 1024**3 * 1000})
    # until its events come back, reconcile asks for them again (the loop keeps them in flight)
    assert core.reconcile(state, 1.0) == outputs
    for output in outputs:
        state = core.apply(
            state, log.event(output.type, f"default/{output.name}", output.payload, id=output.id)
        )
    n1 = state.ledger.nodes["n1"]
    assert (n1.used["cpu"], len(n1.pods), state.ledger.queue_allocated["capped"]) == expected
    assert state.ledger.nodes["n5"].used["cpu"] == 3000  # bound + victim + leaving, the victim still there
    assert core.reconcile(state, 1.0) == []
    assert state.inflight == {}


def test_a_plan_delivered_again_while_in_flight_is_not_decided_twice() -> None:
    core, state, _ = cluster()
    state, outputs = core.submit_plan(state, plan(b=binds("p0@n1")), 1.0)
    assert len(outputs) == 1
    state, again = core.submit_plan(state, plan(b=binds("p0@n1")), 1.0)
    assert again == []


def test_binds_to_a_silent_node_are_rejected_before_it_is_marked_not_ready() -> None:
    core, state, _ = cluster()
    state = core.heartbeat(state, ["n1"], 100.0)
    state = core.heartbeat(state, ["n5"], 80.0)
    _, ok = core.submit_plan(state, plan("a", binds("p0@n1")), 105.0)
    _, silent = core.submit_plan(state, plan("b", binds("p0@n5")), 105.0)
    assert ok[0].type == "PodBound"
    assert silent[0].payload.reason == "node n5 silent for 25.0s"


def test_plans_of_a_real_session_commit_and_settle_the_schedulers_view() -> None:
    """Scheduler view -> session -> plan messages -> binder -> events -> view: the loop closes, and the
    next session over the settled view has nothing left to do."""
    core, state, log = BinderCore(), BinderState(), EventLog()
    view = SchedulerView()
    # n1 fits gang a; b is enqueued but does not fit beside it; big never fits
    for obj in (node("n1", cpu=2), *gang("a", 2), *gang("b", 2, phase="Pending"), *gang("big", 9)):
        event = log.created(obj)
        state = core.apply(state, event)
        view.apply(event)
    snapshot = view.snapshot()
    owned = {"default/a", "default/b", "default/big"}
    messages = build_plans(run_session(snapshot), snapshot, "r1", owned)
    outputs = []
    for message in messages:
        message = decode_plan(encode_plan(message))
        view.assume(message)
        state, committed = core.submit_plan(state, message, 0.0)
        assert [o.type for o in committed if o.type == "PlanRejected"] == []
        outputs += committed
    assert sorted(o.type for o in outputs) == ["PodBound"] * 2 + ["PodGroupStatusChanged"] * 3
    assert run_session(view.snapshot()).plans == ()  # assumed: not placed twice
    for o in outputs:
        event = log.event(o.type, f"{o.namespace}/{o.name}", o.payload, id=o.id)
        state = core.apply(state, event)
        view.apply(event)
    assert view.assumed_plans() == () and state.inflight == {}
    assert {p.meta.name: p.spec.node_name for p in view.snapshot().pods if p.spec.node_name} == {
        "a-worker-0": "n1",
        "a-worker-1": "n1",
    }
    assert view.podgroup("default/b").status.phase == "Inqueue"
    for key in ("default/b", "default/big"):
        assert [c.type for c in view.podgroup(key).status.conditions] == ["Unschedulable"]
    # next: a's pods are bound, so a is Running; nothing is placed
    after = view.snapshot()
    [status] = build_plans(run_session(after), after, "r1", owned)
    assert (status.binds, {k: u.phase for k, u in status.podgroups.items()}) == ((), {"default/a": "Running"})
    state, [changed] = core.submit_plan(state, status, 0.0)
    view.apply(log.event(changed.type, "default/a", changed.payload, id=changed.id))
    settled = view.snapshot()
    assert build_plans(run_session(settled), settled, "r1", owned) == []


def test_a_plan_too_large_to_commit_atomically_is_refused_whole() -> None:
    _, state, _ = cluster()
    small = BinderCore(max_plan_events=2)
    state, outputs = small.submit_plan(
        state, plan(b=binds("p0@n1", "p1@n1"), podgroups={"default/g": INQUEUE}), 1.0
    )
    assert [(o.type, o.payload.reason) for o in outputs] == [
        ("PlanRejected", "plan of 3 events; at most 2 commit atomically")
    ]
    assert not state.inflight
