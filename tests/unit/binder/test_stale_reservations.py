"""Room that can no longer come is not held: once nothing on a node is being released, reservations it
cannot honour any more (it shrank, or was cordoned) are voided, with the rest of their PodGroup's, the
binder's half of the rule by which the scheduler gives a job's reservations up (stale_reservations.py)."""

from __future__ import annotations

import pytest
from support.builders import node, pod, podgroup
from support.events import EventLog

from contracts import payloads
from contracts.plans import Bind, Eviction, PlanMessage, Reservation
from services.binder.core.core import BinderCore, BinderState
from services.binder.core.ledger import ledger_from_plain, ledger_to_plain
from services.binder.core.verify import verify


def preempted() -> tuple[BinderCore, BinderState, EventLog]:
    """n1 and n2, 4 cpu each, full of low pods; gang high (2 x 2 cpu) has evicted low-0 (n1) and low-2
    (n2) and holds room on both, the victims still stopping; `other` (1 cpu) pends."""
    objects = [
        node("n1", cpu=4),
        node("n2", cpu=4),
        podgroup("low"),
        podgroup("high", min_member=2),
        podgroup("other"),
        pod("low-0", "low", cpu=2, node_name="n1"),
        pod("low-1", "low", cpu=2, node_name="n1"),
        pod("low-2", "low", cpu=2, node_name="n2"),
        pod("low-3", "low", cpu=2, node_name="n2"),
        pod("high-0", "high", cpu=2),
        pod("high-1", "high", cpu=2),
        pod("other", "other", cpu=1),
    ]
    core, state, log = BinderCore(), BinderState(), EventLog()
    for obj in objects:
        state = core.apply(state, log.created(obj))
    plan = PlanMessage(
        "p",
        "r1",
        7,
        (),
        tuple(
            Eviction(f"default/{v}", "default/low", n, "preempt")
            for v, n in (("low-0", "n1"), ("low-2", "n2"))
        ),
        {},
        tuple(
            Reservation(f"default/{p}", "default/high", n) for p, n in (("high-0", "n1"), ("high-1", "n2"))
        ),
    )
    state, outputs = core.submit_plan(state, plan, 1.0)
    for output in outputs:
        state = core.apply(
            state, log.event(output.type, f"default/{output.name}", output.payload, id=output.id)
        )
    return core, state, log


def shrink(log: EventLog, name: str, cpu: int, *, cordon: bool = False) -> object:
    return log.created(node(name, cpu=cpu, unschedulable=cordon))


def stopped(log: EventLog, victim: str, node_name: str) -> object:
    return log.event("PodTerminated", f"default/{victim}", payloads.PodTerminated(node=node_name))


def reservations(state: BinderState) -> dict[str, set[str]]:
    return {name: set(entry.reservations) for name, entry in state.ledger.nodes.items()}


def test_room_still_being_released_is_held_even_on_a_node_that_shrank() -> None:
    core, state, log = preempted()
    state = core.apply(state, shrink(log, "n1", 2))  # low-1 (2 cpu) fills it, but low-0 still stops
    assert reservations(state) == {"n1": {"default/high-0"}, "n2": {"default/high-1"}}


@pytest.mark.parametrize(
    ("change", "voided"),
    [
        (lambda log: shrink(log, "n1", 2), True),  # low-1 alone fills it: high-0's room cannot come
        (lambda log: shrink(log, "n1", 4, cordon=True), True),  # cordoned: nothing more goes there
        (lambda log: shrink(log, "n1", 4), False),  # unchanged: the room came, high-0 will be bound there
        (lambda log: shrink(log, "n1", 6), False),
    ],
    ids=["shrunk", "cordoned", "unchanged", "grown"],
)
def test_once_nothing_is_released_room_that_cannot_come_is_given_up_with_its_gangs(change, voided) -> None:  # type: ignore[no-untyped-def]
    core, state, log = preempted()
    state = core.apply(state, change(log))
    state = core.apply(state, stopped(log, "low-0", "n1"))
    if not voided:
        assert reservations(state) == {"n1": {"default/high-0"}, "n2": {"default/high-1"}}
        return
    # high-1's room on n2 goes too: the scheduler gives the whole job's reservations up together
    assert reservations(state) == {"n1": set(), "n2": set()}
    assert {p: state.ledger.pods[f"default/{p}"].nominated for p in ("high-0", "high-1")} == {
        "high-0": "",
        "high-1": "",
    }
    n2 = state.ledger.nodes["n2"]
    assert n2.reserved.get("cpu", 0) == 0
    # once low-2 has stopped, what the scheduler now offers `other` on n2 is not refused for high's sake
    state = core.apply(state, stopped(log, "low-2", "n2"))
    take = PlanMessage("take", "r1", 8, (Bind("default/other", "default/other", "n2"),), (), {}, ())
    assert verify(state.ledger, take).accepted


def test_a_node_that_shrinks_after_its_victims_stopped_gives_up_the_room_at_once() -> None:
    core, state, log = preempted()
    state = core.apply(state, stopped(log, "low-0", "n1"))
    assert reservations(state)["n1"] == {"default/high-0"}
    state = core.apply(state, shrink(log, "n1", 2))
    assert reservations(state) == {"n1": set(), "n2": set()}


def test_voiding_is_a_fold_the_checkpoint_and_a_replay_agree_on() -> None:
    core, state, log = preempted()
    state = core.apply(state, shrink(log, "n1", 2))
    state = core.apply(state, stopped(log, "low-0", "n1"))
    again = ledger_from_plain(ledger_to_plain(state.ledger))
    assert {n: set(e.reservations) for n, e in again.nodes.items()} == reservations(state)

    def held(nodes):  # type: ignore[no-untyped-def]
        return {n: {d: v for d, v in e.reserved.items() if v} for n, e in nodes.items()}

    assert held(again.nodes) == held(state.ledger.nodes)


def test_a_pod_without_a_podgroup_loses_only_its_own_room() -> None:
    from services.binder.core.stale_reservations import stale_reservations

    core, state, log = preempted()
    for key in ("default/high-0", "default/high-1"):
        state.ledger.pods[key].podgroup = ""
    state = core.apply(state, shrink(log, "n1", 2))
    state.ledger.nodes["n1"].terminating.clear()  # as if low-0 had stopped
    assert stale_reservations(state.ledger, "n1") == ["default/high-0"]
