"""The job-controller as a `shared.runner_types.Core`: fold (fold.py), reconcile (reconcile.py) and the
checkpoint: the state as plain data (objects through contracts.codec) in MessagePack. Derived parts —
the pod owners and the tallies — are rebuilt on load rather than stored."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgpack
import msgspec

from contracts import codec, payloads
from contracts.events import JOB_CONTROLLER
from contracts.objects import Job, PriorityClass
from contracts.typed_events import encode_payload
from services.job_controller.core import deadlines, fold, reconcile
from services.job_controller.core.state import (
    Cause,
    JobRecord,
    Pending,
    PodRecord,
    State,
    job_namespace,
    pod_key,
    retally,
)
from shared.runner_types import Event, Output

CHECKPOINT_VERSION = 2
# events that may let a job waiting for its queue to open (or for a priority class) create its PodGroup
_WAITING_JOBS_EVENTS = frozenset({"QueueStateChanged", "PriorityClassApplied", "PriorityClassDeleted"})


class JobControllerCore:
    name = JOB_CONTROLLER

    def initial(self) -> State:
        return State()

    def apply(self, state: State, event: Event) -> State:
        """Fold one event; updates `state` in place and returns it."""
        fold.apply(state, event)
        key = _job_of(state, event)
        if key is not None:
            deadlines.schedule(state.deadlines, key, state.jobs.get(key))
        return state

    def touched(self, state: State, event: Event) -> list[str]:
        """Job keys: the job an event is about (a pod's owner, a command's target); a queue's state or a
        priority class matters to every job still waiting to create its PodGroup."""
        key = _job_of(state, event)
        if key is not None:
            return [key]
        if event.type in _WAITING_JOBS_EVENTS:
            return [k for k, r in state.jobs.items() if r.active and r.podgroup is None]
        return []

    def due(self, state: State, now: float) -> list[str]:
        return deadlines.due(state.deadlines, now)

    def reconcile(self, state: State, now: float, keys: Collection[str] | None = None) -> list[Output]:
        return reconcile.reconcile(state, now, keys)

    def dump(self, state: State) -> bytes:
        packed: bytes = msgpack.packb(
            {"version": CHECKPOINT_VERSION, "state": to_plain(state)}, use_bin_type=True
        )
        return packed

    def load(self, data: bytes) -> State:
        document = msgpack.unpackb(data, raw=False)
        if document.get("version") != CHECKPOINT_VERSION:
            # an older layout is only a cache of the log: the loop replays instead
            raise ValueError(f"unsupported job-controller checkpoint version {document.get('version')!r}")
        return from_plain(document["state"])


# --- plain data ------------------------------------------------------------------------------------


def to_plain(state: State) -> dict[str, Any]:
    return {
        "jobs": [_record_to_plain(r) for r in state.jobs.values()],
        "queue_states": dict(state.queue_states),
        "priority_classes": [codec.encode(pc) for pc in state.priority_classes.values()],
    }


def _job_of(state: State, event: Event) -> str | None:
    if event.kind in ("job", "podgroup"):
        return pod_key(event.namespace or "", event.name)
    if event.kind == "pod":
        return state.pod_owner.get(pod_key(event.namespace or "", event.name))
    if event.type == "CommandIssued":
        command = event.payload_as(payloads.CommandIssued)
        return command.target if command.target_kind == "Job" else None
    return None


def from_plain(data: dict[str, Any]) -> State:
    state = State(queue_states=dict(data["queue_states"]))
    for item in data["priority_classes"]:
        pc = codec.decode(PriorityClass, item)
        state.priority_classes[pc.meta.name] = pc
    for item in data["jobs"]:
        record = _record_from_plain(item)
        retally(record)
        state.jobs[record.key] = record
        for name in record.pods:
            state.pod_owner[pod_key(job_namespace(record.key), name)] = record.key
    state.deadlines = deadlines.rebuild(state.jobs)
    return state


def _record_to_plain(r: JobRecord) -> dict[str, Any]:
    return {
        "key": r.key,
        "job": None if r.job is None else codec.encode(r.job),
        "incarnation": r.incarnation,
        "spec_cause": list(r.spec_cause),
        "deleted": None if r.deleted is None else list(r.deleted),
        "podgroup": r.podgroup,
        "podgroup_deleted": r.podgroup_deleted,
        "podgroup_cause": list(r.podgroup_cause),
        "pods": [_pod_to_plain(name, p) for name, p in r.pods.items()],
        "published": None if r.published is None else encode_payload(r.published),
        "status_generation": r.status_generation,
        "status_cause": list(r.status_cause),
        "last_cause": list(r.last_cause),
        "pending": [_pending_to_plain(p) for p in r.pending],
        "failures": dict(r.failures),
        "successor": None if r.successor is None else [codec.encode(r.successor[0]), list(r.successor[1])],
    }


def _record_from_plain(d: dict[str, Any]) -> JobRecord:
    successor = d["successor"]
    return JobRecord(
        key=d["key"],
        job=None if d["job"] is None else codec.decode(Job, d["job"]),
        incarnation=d["incarnation"],
        spec_cause=_cause(d["spec_cause"]),
        deleted=None if d["deleted"] is None else _cause(d["deleted"]),
        podgroup=d["podgroup"],
        podgroup_deleted=d["podgroup_deleted"],
        podgroup_cause=_cause(d["podgroup_cause"]),
        pods={p["name"]: _pod_from_plain(p) for p in d["pods"]},
        published=_published_from_plain(d["published"]),
        status_generation=d["status_generation"],
        status_cause=_cause(d["status_cause"]),
        last_cause=_cause(d["last_cause"]),
        pending=tuple(_pending_from_plain(p) for p in d["pending"]),
        failures=dict(d["failures"]),
        successor=None if successor is None else (codec.decode(Job, successor[0]), _cause(successor[1])),
    )


def _published_from_plain(d: dict[str, Any] | None) -> payloads.JobStatusChanged | None:
    if d is None:
        return None
    # checkpoints written before the record kept the whole payload lack `handled`: the keys of the
    # pending actions it ran, which were forgotten when it was folded and are read nowhere since
    return msgspec.convert({"handled": (), **d}, payloads.JobStatusChanged)


def _pod_to_plain(name: str, p: PodRecord) -> dict[str, Any]:
    return {
        "name": name,
        "uid": p.uid,
        "task": p.task,
        "index": p.index,
        "retry": p.retry,
        "created_at": p.created_at,
        "node": p.node,
        "phase": p.phase,
        "evicting": p.evicting,
        "deletion_node": p.deletion_node,
        "ended": p.ended,
        "end_cause": list(p.end_cause),
        "version": p.version,
        "job_retry": p.job_retry,
    }


def _pod_from_plain(d: dict[str, Any]) -> PodRecord:
    return PodRecord(
        uid=d["uid"],
        task=d["task"],
        index=d["index"],
        retry=d["retry"],
        created_at=float(d["created_at"]),
        node=d["node"],
        phase=d["phase"],
        evicting=d["evicting"],
        deletion_node=d["deletion_node"],
        ended=d["ended"],
        end_cause=_cause(d["end_cause"]),
        version=d["version"],
        job_retry=d["job_retry"],
    )


def _pending_to_plain(p: Pending) -> dict[str, Any]:
    return {
        "key": p.key,
        "cause": p.cause,
        "event": p.event,
        "action": p.action,
        "due": p.due,
        "task": p.task,
        "pod": p.pod,
        "index": p.index,
        "retry": p.retry,
        "counted": p.counted,
    }


def _pending_from_plain(d: dict[str, Any]) -> Pending:
    return Pending(
        key=d["key"],
        cause=d["cause"],
        event=d["event"],
        action=d["action"],
        due=None if d["due"] is None else float(d["due"]),
        task=d["task"],
        pod=d["pod"],
        index=d["index"],
        retry=d["retry"],
        counted=d["counted"],
    )


def _cause(value: list[Any]) -> Cause:
    return (int(value[0]), str(value[1]))
