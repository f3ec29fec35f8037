"""The values of the Python client (shared.client): kind names, admission's answers, read-model values,
the result of waiting for a job, and a job's history from the event log.

Read-model keys use the event subject kinds (`job`, `podgroup`, `pod`, `queue`, `priorityclass`,
`hypernode`, `node`, `cronjob`, `jobflow`, `jobtemplate`: `/lahar/objects/<kind>/<namespace or _>/<name>`);
values are
`contracts.codec.encode_object` mappings ({"kind", "object"}).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from contracts import codec
from contracts.objects import ApiObject

# read-model kind -> API kind
API_KINDS: Mapping[str, str] = {
    "job": "Job",
    "podgroup": "PodGroup",
    "pod": "Pod",
    "queue": "Queue",
    "priorityclass": "PriorityClass",
    "hypernode": "HyperNode",
    "node": "Node",
    "cronjob": "CronJob",
    "jobflow": "JobFlow",
    "jobtemplate": "JobTemplate",
}
NAMESPACED = frozenset({"job", "podgroup", "pod", "cronjob", "jobflow", "jobtemplate"})
# what a user may type (kubectl's and vcctl's names and short names)
ALIASES: Mapping[str, str] = {
    **{name: "job" for name in ("jobs", "job", "vcjob", "vcjobs", "vj")},
    **{name: "podgroup" for name in ("podgroups", "podgroup", "pg")},
    **{name: "pod" for name in ("pods", "pod", "po")},
    **{name: "queue" for name in ("queues", "queue", "q")},
    **{name: "node" for name in ("nodes", "node", "no")},
    **{name: "priorityclass" for name in ("priorityclasses", "priorityclass", "pc")},
    **{name: "hypernode" for name in ("hypernodes", "hypernode", "hn")},
    # kubectl's cj, and the short names of Volcano's CRDs (cronvj, cronvcjob, jf, jt)
    **{name: "cronjob" for name in ("cronjobs", "cronjob", "cj", "cronvj", "cronvcjob", "cronvcjobs")},
    **{name: "jobflow" for name in ("jobflows", "jobflow", "jf")},
    **{name: "jobtemplate" for name in ("jobtemplates", "jobtemplate", "jt")},
}
FINAL_JOB_PHASES = frozenset({"Completed", "Failed", "Terminated", "Aborted"})


class UnknownKind(ValueError):
    def __init__(self, kind: str) -> None:
        super().__init__(f"unknown kind {kind!r}; expected one of {', '.join(sorted(ALIASES))}")


def resolve_kind(name: str) -> str:
    """The read-model kind a user's kind name means ("vcjob" -> "job", "Queue" -> "queue")."""
    kind = ALIASES.get(name.lower())
    if kind is None:
        raise UnknownKind(name)
    return kind


def decode_stored(kind: str, value: Mapping[str, Any]) -> ApiObject:
    """A read-model value as an object; a bare encoded object (no {"kind", "object"} wrapper) is read as
    the key's kind."""
    if "kind" in value and "object" in value:
        return codec.decode_object(value)
    return codec.decode_object({"kind": API_KINDS[kind], "object": value})


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One event of a job's history. cause: the event (type and object) or request that caused it."""

    seq: int
    time: float
    type: str
    kind: str
    namespace: str | None
    name: str
    producer: str
    id: str
    cause: str
    payload: Mapping[str, Any] = field(default_factory=dict)

    @property
    def object(self) -> str:
        return f"{self.kind}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time,
            "type": self.type,
            "object": self.object,
            "namespace": self.namespace,
            "producer": self.producer,
            "id": self.id,
            "cause": self.cause,
            "payload": dict(self.payload),
        }


@dataclass(frozen=True, slots=True)
class RawEvent:
    seq: int
    time: float
    type: str
    kind: str
    namespace: str | None
    name: str
    producer: str
    id: str
    correlation_id: str
    causation_id: str | None
    payload: Mapping[str, Any]


def job_history(events: Iterable[RawEvent], namespace: str, name: str) -> list[HistoryEntry]:
    """The events about one job, in log order: those correlated to it (its pods', its PodGroup's and
    commands on it) and those on its own subject, each with its cause named."""
    key = f"{namespace}/{name}"
    return history_of(
        event
        for event in events
        if (event.kind == "job" and event.namespace == namespace and event.name == name)
        or event.correlation_id == key
    )


def history_of(events: Iterable[RawEvent]) -> list[HistoryEntry]:
    """Events as a history, in the order given, each with its cause named (as "<type> <kind>/<name>" when
    the cause is among the events before it)."""
    seen: dict[str, str] = {}
    history: list[HistoryEntry] = []
    for event in events:
        history.append(
            HistoryEntry(
                seq=event.seq,
                time=event.time,
                type=event.type,
                kind=event.kind,
                namespace=event.namespace,
                name=event.name,
                producer=event.producer,
                id=event.id,
                cause=_cause(event, seen),
                payload=_redacted(event.type, event.payload),
            )
        )
        seen[event.id] = f"{event.type} {event.kind}/{event.name}"
    return history


# events whose payload `data` holds secrets: a history shows their names, not their content
SECRET_EVENTS = frozenset({"JobSecretCreated"})


def _redacted(event_type: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    data = payload.get("data")
    if event_type not in SECRET_EVENTS or not isinstance(data, Mapping):
        return payload
    return {**payload, "data": {key: "<redacted>" for key in data}}


def _cause(event: RawEvent, seen: Mapping[str, str]) -> str:
    """The causing event as "<type> <kind>/<name>" when it is in the history, else its id (a request's
    for admission's events, a plan's for the binder's)."""
    cause = event.causation_id
    if not cause:
        return ""
    if cause in seen:
        return seen[cause]
    return f"request {cause}" if event.producer == "admission" else cause


@dataclass(frozen=True, slots=True)
class Answer:
    """Admission's reply (see services/admission/api.py)."""

    accepted: bool
    code: str
    dry_run: bool
    objects: tuple[Mapping[str, str], ...]
    errors: tuple[Mapping[str, str], ...]
    seq: int
    warnings: tuple[Mapping[str, str], ...] = ()  # unknown fields, when the apply asked for warnings

    @classmethod
    def of(cls, reply: Mapping[str, Any]) -> Answer:
        return cls(
            accepted=bool(reply.get("accepted")),
            code=str(reply.get("code", "")),
            dry_run=bool(reply.get("dry_run")),
            objects=tuple(reply.get("objects") or ()),
            errors=tuple(reply.get("errors") or ()),
            seq=int(reply.get("seq") or 0),
            warnings=tuple(reply.get("warnings") or ()),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "code": self.code,
            "dry_run": self.dry_run,
            "objects": [dict(o) for o in self.objects],
            "errors": [dict(e) for e in self.errors],
            "warnings": [dict(w) for w in self.warnings],
            "seq": self.seq,
        }


@dataclass(frozen=True, slots=True)
class WaitResult:
    """reached: the job or pod got to the wanted phase. phase: where it stopped ("" never seen,
    "Deleted"). object: its last state seen."""

    reached: bool
    phase: str
    object: ApiObject | None
    timed_out: bool = False


FINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})
DELETED = "Deleted"  # the phase `wait_for` reports for an object that is gone
# what `wait_for` can wait for: kind -> (the object's phase, the phases it does not leave)
WAITABLE: Mapping[str, tuple[Callable[[Any], str], frozenset[str]]] = {
    "job": (lambda job: job.status.state.phase, FINAL_JOB_PHASES),
    "pod": (lambda pod: pod.status.phase, FINAL_POD_PHASES),
}


def changed_object(kind: str, change: str, value: bytes) -> ApiObject | None:
    """The object a watched read-model write holds; None for a delete or a tombstone."""
    if change == "delete":
        return None
    document = msgpack.unpackb(value, raw=False)
    stored = document.get("object")
    return None if stored is None else decode_stored(kind, stored)
