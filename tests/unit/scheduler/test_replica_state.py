"""A replica's state outside the view proper: its checkpoint form (objects as the log says, no
assumptions), the trace each PodGroup belongs to, and what a session means for the metrics."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import gang, hypernode, node, pod, priority_class, queue
from support.events import job_status

from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from contracts.plans import Bind, PlanMessage
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.snapshot import podgroup_key
from services.scheduler.metrics import SessionOutcome, session_outcome
from services.scheduler.state import SchedulerState, ViewCore
from shared.runner_types import Event

CREATED = {
    "Node": "NodeRegistered",
    "Pod": "PodCreated",
    "PodGroup": "PodGroupCreated",
    "Queue": "QueueApplied",
    "PriorityClass": "PriorityClassApplied",
    "HyperNode": "HyperNodeApplied",
}
CORE = ViewCore("scheduler-0")


def event(seq: int, type: str, key: str, payload: dict[str, Any], traceparent: str | None = None) -> Event:
    namespace, _, name = key.rpartition("/")
    kind = EVENT_TYPES[type].subject_kind
    return Event(
        seq, type, kind, namespace or None, name, payload, f"e{seq}", float(seq), key, None, traceparent
    )


def fold(objects: list[Any], *changes: tuple[str, str, dict[str, Any]]) -> SchedulerState:
    state = CORE.initial()
    steps = [(CREATED[o.kind], o.meta.key, {"object": encode_object(o)}) for o in objects] + list(changes)
    for seq, (type, key, payload) in enumerate(steps, start=1):
        state = CORE.apply(state, event(seq, type, key, payload, f"00-{seq:032x}-{seq:016x}-01"))
    return state


OBJECTS = [
    node("n1"),
    node("n2"),
    queue("q1", 2),
    priority_class("high", 100),
    hypernode("s0", 1, nodes=["n1", "n2"]),
    *gang("g1", 2),
    pod("plain", None),
]


def test_a_checkpoint_holds_the_log_objects_and_traces_without_assumptions() -> None:
    state = fold(
        OBJECTS,
        ("NodeNotReady", "n2", {"last_heartbeat": 1.0}),
        ("PodBound", "default/g1-worker-0", {"node": "n1", "plan": "p0"}),
    )
    expected = state.view.snapshot()
    state.view.assume(
        PlanMessage("p1", "scheduler-0", state.view.seq, (Bind("default/g1-worker-1", "default/g1", "n1"),))
    )
    assert state.view.snapshot() != expected

    loaded = CORE.load(CORE.dump(state))
    assert loaded.view.snapshot() == expected
    assert (loaded.view.seq, loaded.view.time) == (state.view.seq, state.view.time)
    assert loaded.traces == state.traces and loaded.view.assumed_plans() == ()
    assert CORE.dump(loaded) == CORE.dump(state)


def test_each_podgroup_keeps_the_trace_of_its_latest_creation_event() -> None:
    state = fold(OBJECTS)
    plain = next(o for o in OBJECTS if o.meta.name == "plain")
    seq_of = {o.meta.key: i for i, o in enumerate(OBJECTS, start=1)}
    assert (
        state.traces["default/g1"]
        == f"00-{seq_of['default/g1-worker-1']:032x}-{seq_of['default/g1-worker-1']:016x}-01"
    )
    assert podgroup_key(plain) == "default/podgroup-default-plain" and podgroup_key(plain) in state.traces

    state = CORE.apply(state, event(50, "PodTerminated", "default/plain", {"node": "n1", "reason": "x"}))
    state = CORE.apply(state, event(51, "PodGroupDeleted", "default/g1", {}))
    assert "default/g1" not in state.traces and podgroup_key(plain) not in state.traces


@pytest.mark.parametrize(
    ("owned", "expected"),
    [
        (set(), SessionOutcome(0, 0, 0)),
        ({"default/fits"}, SessionOutcome(1, 1, 0)),
        ({"default/fits", "default/huge"}, SessionOutcome(2, 1, 1)),
    ],
    ids=["nothing", "the-fitting-gang", "both"],
)
def test_session_outcome_counts_only_owned_podgroups(owned: set[str], expected: SessionOutcome) -> None:
    state = fold([node("n1", cpu=4), *gang("fits", 2), *gang("huge", 3, cpu=8)])
    snapshot = state.view.snapshot()
    assert session_outcome(run_session(snapshot), owned) == expected


def test_a_checkpoint_remembers_which_jobs_are_final() -> None:
    # a final Job's finished PodGroup leaves the snapshot; after a restart from the checkpoint no event
    # says the Job is final again, so the checkpoint must
    state = fold(
        gang("g1", 2),
        *[
            (t, f"default/g1-worker-{i}", {"node": "n1", "plan": "p1"})
            for i in (0, 1)
            for t in ("PodBound", "PodFailed")
        ],
        ("JobStatusChanged", "default/g1", job_status("Failed")),
    )
    assert state.view.final_jobs() == {"default/g1"}
    loaded = CORE.load(CORE.dump(state))
    assert loaded.view.final_jobs() == {"default/g1"}
    assert loaded.view.snapshot() == state.view.snapshot()
