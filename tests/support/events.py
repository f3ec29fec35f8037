"""Hand-made log events for tests of the cores that fold the log (binder ledger and liveness, scheduler
view): numbered like the stream numbers them, with the subject kind the catalogue gives each type."""

from __future__ import annotations

from typing import Any

from contracts import payloads
from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from contracts.typed_events import encode_payload
from shared.runner_types import Event

# the event that introduces an object of each kind into the log
CREATED = {
    "Node": "NodeRegistered",
    "Pod": "PodCreated",
    "PodGroup": "PodGroupCreated",
    "Queue": "QueueApplied",
    "PriorityClass": "PriorityClassApplied",
    "HyperNode": "HyperNodeApplied",
}


class EventLog:
    """Numbers events as the log does. Events are stamped `at` when given, else 0.0, or their seq when
    `time_from_seq` (for folds that order by time)."""

    def __init__(self, *, time_from_seq: bool = False) -> None:
        self.seq = 0
        self.time_from_seq = time_from_seq

    def event(
        self, type: str, key: str, payload: Any = None, *, at: float | None = None, id: str = ""
    ) -> Event:
        self.seq += 1
        namespace, _, name = key.rpartition("/")
        if at is None:
            at = float(self.seq) if self.time_from_seq else 0.0
        return Event(
            seq=self.seq,
            type=type,
            kind=EVENT_TYPES[type].subject_kind,
            namespace=namespace or None,
            name=name,
            payload=encode_payload(payload) if isinstance(payload, payloads.Payload) else payload or {},
            id=id or f"event-{self.seq}",
            time=at,
            correlation_id=key,
        )

    def created(self, obj: Any, *, at: float | None = None) -> Event:
        return self.event(CREATED[obj.kind], obj.meta.key, {"object": encode_object(obj)}, at=at)


def job_status(phase: str, **fields: Any) -> dict[str, Any]:
    """A JobStatusChanged payload in the phase (the job's first lifecycle, pods counted as none)."""
    status = payloads.JobStatusChanged(
        phase=phase,
        counts=fields.pop("counts", {}),
        task_status_count=fields.pop("task_status_count", {}),
        min_available=fields.pop("min_available", 0),
        retry_count=fields.pop("retry_count", 0),
        version=fields.pop("version", 0),
        restart=fields.pop("restart", ()),
        handled=fields.pop("handled", ()),
        last_transition_time=fields.pop("last_transition_time", None),
        conditions=fields.pop("conditions", ()),
    )
    assert not fields, f"not JobStatusChanged fields: {sorted(fields)}"
    return encode_payload(status)
