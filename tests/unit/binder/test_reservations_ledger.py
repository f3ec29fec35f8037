"""Reservations at the binder: a preemption's plan (victims and the room they free for its pods) commits
whole or not at all, the ledger holds the reserved room against every other bind until its pod is bound,
and the scheduler's plan round-trips it (verify.py, ledger.py, core.py)."""

from __future__ import annotations

import pytest
from support.builders import node, pod, podgroup
from support.events import EventLog

from contracts import payloads
from contracts.plans import Bind, Eviction, PlanMessage, Reservation, decode_plan, encode_plan
from services.binder.core.core import BinderCore, BinderState
from services.binder.core.ledger import ledger_from_plain, ledger_to_plain
from services.binder.core.verify import verify
from services.scheduler.view import SchedulerView


def cluster() -> tuple[BinderCore, BinderState, EventLog]:
    """n1: 4 cpu, 2 pods max, full: low-0 and low-1 (2 cpu each); n2: 4 cpu, free, NotReady; n3: 4 cpu
    with 2 cpu free and a terminating 2-cpu pod. Pending: high-0, high-1 (2 cpu each, gang high), other
    (2 cpu), gone (being deleted)."""
    objects = [
        node("n1", cpu=4, pods=2),
        node("n2", cpu=4),
        node("n3", cpu=4),
        podgroup("low"),
        podgroup("high", min_member=2),
        podgroup("other"),
        pod("low-0", "low", cpu=2, node_name="n1"),
        pod("low-1", "low", cpu=2, node_name="n1"),
        pod("leaving", "low", cpu=2, node_name="n3", deleting=True),
        pod("high-0", "high", cpu=2),
        pod("high-1", "high", cpu=2),
        pod("other", "other", cpu=2),
        pod("gone", "other", cpu=2, deleting=True),
    ]
    core, state, log = BinderCore(), BinderState(), EventLog()
    for obj in objects:
        state = core.apply(state, log.created(obj))
    state = core.apply(state, log.event("NodeNotReady", "n2", {"last_heartbeat": 0.0}))
    return core, state, log


def evict(*pairs: str) -> tuple[Eviction, ...]:
    return tuple(
        Eviction(f"default/{p.split('@')[0]}", "default/low", p.split("@")[1], "preempt") for p in pairs
    )


def reserve(*pairs: str) -> tuple[Reservation, ...]:
    return tuple(
        Reservation(f"default/{p.split('@')[0]}", "default/high", p.split("@")[1], "preempt: evicting")
        for p in pairs
    )


def plan(pid: str = "plan-1", *, e: tuple = (), r: tuple = (), b: tuple = ()) -> PlanMessage:
    return PlanMessage(pid, "r1", 7, b, e, {}, r)


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        (plan(e=evict("low-0@n1"), r=reserve("high-0@n1")), ""),
        (plan(e=evict("low-0@n1", "low-1@n1"), r=reserve("high-0@n1", "high-1@n1")), ""),
        (
            plan(e=evict("low-0@n1"), r=reserve("high-0@n1", "high-1@n1")),
            "no pod slot can be reserved for pod default/high-1 on node n1 (2 pods)",
        ),
        (
            plan(r=(*reserve("high-0@n3", "high-1@n3"), Reservation("default/other", "default/other", "n3"))),
            "no room can be reserved for pod default/other on node n3: cpu requests 2000, 0 free once its"
            " terminating pods stopped",
        ),
        (plan(r=reserve("high-0@n1")), "no pod slot can be reserved for pod default/high-0 on node n1"),
        (plan(r=reserve("high-0@n3", "high-1@n3")), ""),
        (plan(e=evict("low-0@n1"), r=reserve("high-0@n2")), "node n2 is NotReady"),
        (
            plan(e=evict("low-0@n1"), r=(Reservation("default/gone", "default/other", "n1"),)),
            "pod default/gone is terminating: no room can be reserved for it",
        ),
        (
            plan(e=evict("low-0@n1"), r=(Reservation("default/low-1", "default/low", "n1"),)),
            "pod default/low-1 is bound to node n1",
        ),
    ],
    ids=[
        "one-victim-one-pod",
        "a-gang-two-victims",
        "a-gang-one-victim-short",
        "more-than-the-room",
        "full-node-no-victim",
        "room-a-terminating-pod-frees",
        "not-ready",
        "terminating-pod",
        "bound-pod",
    ],
)
def test_a_plan_with_reservations_is_checked_whole(candidate: PlanMessage, reason: str) -> None:
    _, state, _ = cluster()
    verdict = verify(state.ledger, candidate)
    assert verdict.accepted == (not reason)
    assert reason in verdict.reason if reason else verdict.reason == ""


def test_evictions_and_reservations_commit_as_one_batch() -> None:
    core, state, _ = cluster()
    candidate = plan(e=evict("low-0@n1"), r=reserve("high-0@n1"))
    state, outputs = core.submit_plan(state, candidate, 1.0)
    assert [(o.type, o.name, o.correlation_id) for o in outputs] == [
        ("PodEvicting", "low-0", "default/low"),
        ("PodNominated", "high-0", "default/high"),
    ]
    assert {o.batch for o in outputs} == {"plan-1"}
    assert outputs[1].payload == payloads.PodNominated(node="n1", reason="preempt: evicting", plan="plan-1")
    n1 = state.ledger.nodes["n1"]
    assert (n1.releasing["cpu"], n1.reserved["cpu"], n1.reservations) == (2000, 2000, {"default/high-0"})


def test_refused_whole_a_reservation_that_does_not_fit_leaves_the_victims_alone() -> None:
    core, state, _ = cluster()
    before = core.dump(state)
    candidate = plan(e=evict("low-0@n1"), r=reserve("high-0@n1", "high-1@n1"))
    state, [rejected] = core.submit_plan(state, candidate, 1.0)
    assert rejected.type == "PlanRejected"
    assert rejected.name == "high"  # the preemptor's PodGroup: its replica hears of it
    assert core.dump(state) == before


def test_reserved_room_is_held_against_other_binds_until_its_pod_is_bound() -> None:
    core, state, log = cluster()
    state, outputs = core.submit_plan(state, plan(e=evict("low-0@n1"), r=reserve("high-0@n1")), 1.0)
    for output in outputs:
        state = core.apply(
            state, log.event(output.type, f"default/{output.name}", output.payload, id=output.id)
        )
    state = core.apply(state, log.event("PodTerminated", "default/low-0", payloads.PodTerminated(node="n1")))
    stolen = plan("steal", b=(Bind("default/other", "default/other", "n1"),))
    verdict = verify(state.ledger, stolen)
    assert not verdict.accepted
    assert verdict.reason == "node n1: its free pod slots are reserved (for default/high-0)"
    own = plan("own", b=(Bind("default/high-0", "default/high", "n1"),))
    state, [bound] = core.submit_plan(state, own, 2.0)
    assert bound.type == "PodBound"
    n1 = state.ledger.nodes["n1"]
    assert (n1.reserved.get("cpu", 0), n1.reservations, state.ledger.pods["default/high-0"].nominated) == (
        0,
        set(),
        "",
    )


def test_reserved_resources_are_held_too() -> None:
    core, state, _ = cluster()
    # n3: 2 cpu free now, 2 more once `leaving` stops; high-0 holds 2 of the 4
    state, outputs = core.submit_plan(state, plan(r=reserve("high-0@n3")), 1.0)
    assert [o.type for o in outputs] == ["PodNominated"]
    other = plan("other", b=(Bind("default/other", "default/other", "n3"),))
    assert verify(state.ledger, other).accepted  # 2 idle now, and 2 left beside the room reserved
    state, _ = core.submit_plan(state, other, 1.0)
    more = PlanMessage("more", "r1", 7, (), (), {}, (Reservation("default/high-1", "default/high", "n3"),))
    assert "0 free once its terminating pods stopped" in verify(state.ledger, more).reason


def test_a_pod_nominated_again_moves_its_room() -> None:
    core, state, log = cluster()
    state = core.apply(
        state,
        log.event("PodNominated", "default/high-0", payloads.PodNominated(node="n3", reason="", plan="p")),
    )
    state = core.apply(
        state,
        log.event("PodNominated", "default/high-0", payloads.PodNominated(node="n1", reason="", plan="q")),
    )
    nodes = state.ledger.nodes
    assert (nodes["n3"].reservations, nodes["n1"].reservations) == (set(), {"default/high-0"})
    state = core.apply(
        state, log.event("PodDeletionRequested", "default/high-0", {"node": None, "reason": "deleted"})
    )
    assert nodes["n1"].reservations == set()  # a pod being deleted holds nothing


def test_the_checkpoint_keeps_the_reserved_room() -> None:
    core, state, _ = cluster()
    state, _ = core.submit_plan(state, plan(e=evict("low-0@n1"), r=reserve("high-0@n1")), 1.0)
    again = ledger_from_plain(ledger_to_plain(state.ledger))
    n1 = again.nodes["n1"]
    assert (n1.releasing, n1.reserved, n1.terminating, n1.reservations) == (
        state.ledger.nodes["n1"].releasing,
        state.ledger.nodes["n1"].reserved,
        {"default/low-0"},
        {"default/high-0"},
    )


def test_the_wire_carries_reservations_and_the_view_assumes_them() -> None:
    message = plan(e=evict("low-0@n1"), r=reserve("high-0@n1"))
    decoded = decode_plan(encode_plan(message))
    assert decoded == message
    assert decoded.subject == "default/high"
    view = SchedulerView()
    log = EventLog()
    for obj in (
        node("n1"),
        podgroup("high"),
        pod("high-0", "high"),
        podgroup("low"),
        pod("low-0", "low", node_name="n1"),
    ):
        view.apply(log.created(obj))
    view.assume(decoded)
    assert view.pod("default/high-0").status.nominated_node_name == "n1"
    assert view.pod("default/low-0").meta.deletion_timestamp is not None
    view.apply(
        log.event(
            "PodNominated", "default/high-0", payloads.PodNominated(node="n1", reason="", plan="plan-1")
        )
    )
    view.apply(
        log.event(
            "PodEvicting", "default/low-0", payloads.PodEvicting(node="n1", reason="preempt", plan="plan-1")
        )
    )
    assert view.assumed_plans() == ()
    assert view.pod("default/high-0").status.nominated_node_name == "n1"
    view.apply(log.event("PodBound", "default/high-0", payloads.PodBound(node="n1", plan="plan-2")))
    bound = view.pod("default/high-0")
    assert (bound.spec.node_name, bound.status.nominated_node_name) == ("n1", "")


def test_a_gang_is_bound_into_its_reserved_room_in_one_plan() -> None:
    """Both pods of the gang were nominated to n1 (two victims); once they stopped, one plan binds both:
    each gives back its own reserved room as it takes it (found by the stack test)."""
    core, state, log = cluster()
    room = plan(e=evict("low-0@n1", "low-1@n1"), r=reserve("high-0@n1", "high-1@n1"))
    state, outputs = core.submit_plan(state, room, 1.0)
    for output in outputs:
        state = core.apply(
            state, log.event(output.type, f"default/{output.name}", output.payload, id=output.id)
        )
    for victim in ("low-0", "low-1"):
        state = core.apply(
            state, log.event("PodTerminated", f"default/{victim}", payloads.PodTerminated(node="n1"))
        )
    both = plan(
        "bind", b=(Bind("default/high-0", "default/high", "n1"), Bind("default/high-1", "default/high", "n1"))
    )
    assert verify(state.ledger, both).reason == ""
    # nominated there again (a second preemption for the same gang), their room is not counted twice
    again = plan("again", r=reserve("high-0@n1", "high-1@n1"))
    assert verify(state.ledger, again).reason == ""
