"""The queue-controller core with its read model: Queues (spec and published status), PriorityClasses and
HyperNodes (as admission accepted them), and which of them an event changed.

`ProjectedCore` is a `shared.runner_types.Core` wrapping `QueueControllerCore`: it folds every event into
the controller's state unchanged and, beside it, keeps the applied PriorityClasses and HyperNodes (the
controller itself does not need them) and marks the objects the event changed as dirty, with the event's
seq. The shell writes the dirty objects after each batch and clears them; the dirty marks are not
checkpointed (a new leader rewrites everything).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import msgpack

from contracts import codec
from contracts.objects import ObjectMeta, Queue, QueueStatus
from services.queue_controller.core.core import QueueControllerCore
from services.queue_controller.core.fold import HANDLED_EVENTS
from services.queue_controller.core.state import QueueRecord, State
from shared.runner_types import Event, Output

CHECKPOINT_VERSION = 1
KINDS = ("queue", "priorityclass", "hypernode")

# (kind, namespace, name) of a read-model object; all three kinds are cluster-scoped
ObjectKey = tuple[str, str | None, str]

# the events whose subject object is stored as applied, by subject kind
_APPLIED = {"PriorityClassApplied": "priorityclass", "HyperNodeApplied": "hypernode"}
_DELETED = {"PriorityClassDeleted": "priorityclass", "HyperNodeDeleted": "hypernode"}
# the events that change what a queue's read-model value shows
_QUEUE_EVENTS = frozenset({"QueueApplied", "QueueDeleted", "QueueStateChanged"})


@dataclass(slots=True)
class Projected:
    core: State
    # kind -> name -> the applied object as admission encoded it (codec.encode_object)
    applied: dict[str, dict[str, Mapping[str, Any]]] = field(
        default_factory=lambda: {kind: {} for kind in _APPLIED.values()}
    )
    dirty: dict[ObjectKey, int] = field(default_factory=dict)  # changed objects -> seq of the change


class ProjectedCore:
    """QueueControllerCore plus its read model (see the module docstring)."""

    kinds = KINDS
    reads = HANDLED_EVENTS | _APPLIED.keys() | _DELETED.keys()

    def __init__(self, inner: QueueControllerCore | None = None) -> None:
        self.inner = inner or QueueControllerCore()
        self.name = self.inner.name

    def initial(self) -> Projected:
        return Projected(self.inner.initial())

    def apply(self, state: Projected, event: Event) -> Projected:
        self.inner.apply(state.core, event)
        for queue in state.core.changed:  # its state or its PodGroup counts
            state.dirty[("queue", None, queue)] = event.seq
        if event.type in _QUEUE_EVENTS:
            state.dirty[("queue", None, event.name)] = event.seq
        elif event.type in _APPLIED:
            state.applied[_APPLIED[event.type]][event.name] = event.payload["object"]
            state.dirty[(_APPLIED[event.type], None, event.name)] = event.seq
        elif event.type in _DELETED and event.name in state.applied[_DELETED[event.type]]:
            del state.applied[_DELETED[event.type]][event.name]
            state.dirty[(_DELETED[event.type], None, event.name)] = event.seq
        return state

    def touched(self, state: Projected, event: Event) -> list[str]:
        return self.inner.touched(state.core, event)

    def due(self, state: Projected, now: float) -> list[str]:
        return self.inner.due(state.core, now)

    def reconcile(self, state: Projected, now: float, keys: Collection[str] | None = None) -> list[Output]:
        return self.inner.reconcile(state.core, now, keys)

    def dirty(self, state: Projected) -> dict[ObjectKey, int]:
        return state.dirty

    def render(self, state: Projected, key: ObjectKey) -> Mapping[str, Any] | None:
        """The read-model value of an object: codec.encode_object of it, None when it does not exist."""
        kind, _, name = key
        if kind == "queue":
            record = state.core.queues.get(name)
            return (
                None if record is None else codec.encode_object(queue_object(record, state.core.counts(name)))
            )
        return state.applied.get(kind, {}).get(name)

    def keys(self, state: Projected) -> Iterator[ObjectKey]:
        """Every object that exists."""
        for name in state.core.queues:
            yield ("queue", None, name)
        for kind, objects in state.applied.items():
            for name in objects:
                yield (kind, None, name)

    def dump(self, state: Projected) -> bytes:
        document = {
            "version": CHECKPOINT_VERSION,
            "core": self.inner.dump(state.core),
            "applied": state.applied,
        }
        return msgpack.packb(document, use_bin_type=True)

    def load(self, data: bytes) -> Projected:
        document = msgpack.unpackb(data, raw=False)
        if document.get("version") != CHECKPOINT_VERSION:
            raise ValueError(f"unsupported queue-controller checkpoint version {document.get('version')!r}")
        applied = {kind: dict(document["applied"].get(kind, {})) for kind in _APPLIED.values()}
        return Projected(self.inner.load(document["core"]), applied=applied)


def queue_object(record: QueueRecord, counts: Mapping[str, int]) -> Queue:
    """The queue with the state last published for it and its PodGroups' counts (the implicit `default`
    queue as Volcano installs it: weight 1, reclaimable)."""
    queue = record.queue or Queue(meta=ObjectMeta(name=record.name, namespace=""), reclaimable=True)
    status = QueueStatus(
        state=record.published_state or record.state,
        pending=counts.get("pending", 0),
        running=counts.get("running", 0),
        inqueue=counts.get("inqueue", 0),
        completed=counts.get("completed", 0),
        unknown=counts.get("unknown", 0),
    )
    return replace(queue, status=status)
