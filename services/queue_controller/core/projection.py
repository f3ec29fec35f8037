"""The queue-controller core with its read model: Queues (spec and published status), PriorityClasses and
HyperNodes (as admission accepted them), and which of them an event changed.

`ProjectedCore` (a shared.projected_core.Projection) wraps `QueueControllerCore`: beside the
controller's state it keeps the applied PriorityClasses and HyperNodes (the controller itself does not
need them), and marks the objects each event changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from contracts import codec, payloads
from contracts.events import QUEUE_CONTROLLER
from contracts.objects import ObjectMeta, Queue, QueueStatus
from contracts.read_model_kinds import KINDS_BY_WRITER
from services.queue_controller.core.core import QueueControllerCore
from services.queue_controller.core.fold import HANDLED_EVENTS
from services.queue_controller.core.state import QueueRecord, State
from shared.projected_core import ObjectKey, ProjectedState, Projection
from shared.runner_types import Event

KINDS: tuple[str, ...] = KINDS_BY_WRITER[QUEUE_CONTROLLER]  # all cluster-scoped

# the events whose subject object is stored as applied, by subject kind
_APPLIED = {"PriorityClassApplied": "priorityclass", "HyperNodeApplied": "hypernode"}
_APPLIED_PAYLOADS: Mapping[str, type[payloads.ObjectPayload]] = {
    "PriorityClassApplied": payloads.PriorityClassApplied,
    "HyperNodeApplied": payloads.HyperNodeApplied,
}
_DELETED = {"PriorityClassDeleted": "priorityclass", "HyperNodeDeleted": "hypernode"}
# the events that change what a queue's read-model value shows
_QUEUE_EVENTS = frozenset({"QueueApplied", "QueueDeleted", "QueueStateChanged"})


def _no_objects() -> dict[str, dict[str, Mapping[str, Any]]]:
    return {kind: {} for kind in _APPLIED.values()}


@dataclass(slots=True)
class Projected(ProjectedState[State]):
    # kind -> name -> the applied object as admission encoded it (codec.encode_object)
    applied: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=_no_objects)


class ProjectedCore(Projection[State, Projected]):
    """QueueControllerCore plus its read model (see the module docstring)."""

    kinds = KINDS
    reads = HANDLED_EVENTS | _APPLIED.keys() | _DELETED.keys()

    def __init__(self, inner: QueueControllerCore | None = None) -> None:
        super().__init__(inner or QueueControllerCore())

    def initial(self) -> Projected:
        return Projected(self.inner.initial())

    def apply(self, state: Projected, event: Event) -> Projected:
        self.inner.apply(state.core, event)
        for queue in state.core.changed:  # its state or its PodGroup counts
            state.dirty[("queue", None, queue)] = event.seq
        if event.type in _QUEUE_EVENTS:
            state.dirty[("queue", None, event.name)] = event.seq
        elif event.type in _APPLIED:
            applied = event.payload_as(_APPLIED_PAYLOADS[event.type])
            state.applied[_APPLIED[event.type]][event.name] = applied.object
            state.dirty[(_APPLIED[event.type], None, event.name)] = event.seq
        elif event.type in _DELETED and event.name in state.applied[_DELETED[event.type]]:
            del state.applied[_DELETED[event.type]][event.name]
            state.dirty[(_DELETED[event.type], None, event.name)] = event.seq
        return state

    def render(self, state: Projected, key: ObjectKey) -> Mapping[str, Any] | None:
        kind, _, name = key
        if kind == "queue":
            record = state.core.queues.get(name)
            return (
                None if record is None else codec.encode_object(queue_object(record, state.core.counts(name)))
            )
        return state.applied.get(kind, {}).get(name)

    def reconcile_keys(self, state: Projected) -> list[str]:
        """Every key a full reconcile covers (the runner's boundary reconciles them one by one when a full
        reconcile raises)."""
        return list(state.core.queues)

    def keys(self, state: Projected) -> Iterator[ObjectKey]:
        for name in state.core.queues:
            yield ("queue", None, name)
        for kind, objects in state.applied.items():
            for name in objects:
                yield (kind, None, name)

    def details_to_plain(self, state: Projected) -> dict[str, Any]:
        return {"applied": state.applied}

    def from_checkpoint(self, core: State, document: Mapping[str, Any]) -> Projected:
        applied = {kind: dict(document["applied"].get(kind, {})) for kind in _APPLIED.values()}
        return Projected(core, applied=applied)


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
