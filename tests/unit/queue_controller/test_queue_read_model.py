"""The queue-controller's read model: Queues with their published status, PriorityClasses and HyperNodes
as applied, which objects an event marks dirty, across a checkpoint too."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contracts import codec
from contracts.objects import HyperNode, ObjectMeta, PodGroup, PriorityClass, Queue
from services.queue_controller.core.projection import Projected, ProjectedCore
from shared.runner_types import Event


class Log:
    def __init__(self) -> None:
        self.core = ProjectedCore()
        self.state: Projected = self.core.initial()
        self.seq = 0

    def add(
        self, type: str, kind: str, name: str, payload: Any = None, *, namespace: str | None = None
    ) -> Event:
        self.seq += 1
        event = Event(
            seq=self.seq,
            type=type,
            kind=kind,
            namespace=namespace,
            name=name,
            payload=payload or {},
            id=str(uuid.UUID(int=self.seq)),
            time=float(self.seq),
            correlation_id="test",
        )
        self.state = self.core.apply(self.state, event)
        return event

    def settle(self) -> None:
        for o in self.core.reconcile(self.state, 0.0):
            self.add(o.type, o.kind, o.name, o.plain_payload)
        assert self.core.reconcile(self.state, 0.0) == []

    def obj(self, kind: str, name: str) -> Any:
        value = self.core.render(self.state, (kind, None, name))
        return None if value is None else codec.decode_object(value)


def applied(kind: str, obj: Any) -> dict[str, Any]:
    return {"object": codec.encode_object(obj)}


@pytest.mark.parametrize(
    ("kind", "obj"),
    [
        ("priorityclass", PriorityClass(ObjectMeta("high", ""), value=1000)),
        ("hypernode", HyperNode(ObjectMeta("s0", ""), tier=1)),
    ],
)
def test_applied_objects_are_stored_as_admitted_until_deleted(kind: str, obj: Any) -> None:
    log = Log()
    event = log.add(f"{obj.kind}Applied", kind, obj.meta.name, applied(kind, obj))
    assert log.state.dirty == {(kind, None, obj.meta.name): event.seq}
    assert log.obj(kind, obj.meta.name) == obj
    log.state.dirty.clear()
    deleted = log.add(f"{obj.kind}Deleted", kind, obj.meta.name)
    assert log.state.dirty == {(kind, None, obj.meta.name): deleted.seq}
    assert log.obj(kind, obj.meta.name) is None
    log.state.dirty.clear()
    log.add(f"{obj.kind}Deleted", kind, obj.meta.name)
    assert log.state.dirty == {}  # nothing left to delete


def test_a_queue_shows_the_state_published_for_it_and_its_podgroups_counts() -> None:
    log = Log()
    log.add("QueueApplied", "queue", "q1", applied("queue", Queue(ObjectMeta("q1", ""), weight=3)))
    assert log.obj("queue", "q1").status.state == "Open"  # nothing published yet: the state it starts in
    log.settle()
    log.state.dirty.clear()
    pg = PodGroup(ObjectMeta("train", "team-a"), queue="q1")
    created = log.add("PodGroupCreated", "podgroup", "train", applied("podgroup", pg), namespace="team-a")
    assert log.state.dirty == {("queue", None, "q1"): created.seq}  # its counts changed
    assert log.obj("queue", "q1").status.pending == 1
    log.add(
        "CommandIssued", "command", "c1", {"action": "CloseQueue", "target_kind": "Queue", "target": "q1"}
    )
    assert log.obj("queue", "q1").status.state == "Open"  # decided, not yet published
    log.state.dirty.clear()
    log.settle()
    assert set(log.state.dirty) == {("queue", None, "q1")}
    queue = log.obj("queue", "q1")
    assert (queue.status.state, queue.status.pending, queue.weight) == ("Closing", 1, 3)


def test_the_default_queue_exists_from_the_start_and_survives_a_checkpoint() -> None:
    log = Log()
    assert list(log.core.keys(log.state)) == [("queue", None, "default")]
    assert log.obj("queue", "default").is_reclaimable
    log.add(
        "PriorityClassApplied", "priorityclass", "high", applied("x", PriorityClass(ObjectMeta("high", "")))
    )
    log.settle()
    restored = log.core.load(log.core.dump(log.state))
    assert restored.dirty == {}
    for key in log.core.keys(log.state):
        assert log.core.render(restored, key) == log.core.render(log.state, key)
    assert set(log.core.keys(restored)) == {("queue", None, "default"), ("priorityclass", None, "high")}
