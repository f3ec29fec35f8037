"""Fold one event into the job-controller's state (in place; see state.py).

Keys come from the event's subject (`<namespace>/<name>`), which is the object's identity on the log.
A pod's lifecycle events are folded by pod_lifecycle.py's rules, the ones plain pods follow too.

The events that lifecycle policies react to are resolved as they are folded (policies.py); a
JobStatusChanged consumes the pending actions it ran, and JobCleanedUp (the job-controller's own TTL
clean-up) deletes the job as JobDeleted does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from contracts import codec, payloads
from contracts.job_shape import (
    JOB_NAME,
    JOB_RETRY_COUNT,
    JOB_VERSION,
    POD_GENERATION,
    TASK_INDEX,
    TASK_SPEC,
    default_job,
)
from contracts.objects import Job, PodGroup, PriorityClass
from contracts.podgroup_owner import is_plain
from services.job_controller.core import lifecycle, pod_lifecycle, policies
from services.job_controller.core.state import (
    Cause,
    JobRecord,
    PodRecord,
    State,
    changed,
    forget_if_done,
    new_record,
    put_pod,
    retally,
)
from shared.runner_types import Event

T = TypeVar("T")


def apply(state: State, event: Event) -> State:
    handler = _HANDLERS.get(event.type)
    if handler is not None:
        handler(state, event)
    return state


def _key(event: Event) -> str:
    return f"{event.namespace}/{event.name}"


def _cause(event: Event) -> Cause:
    return (event.seq, event.id)


def _decoded(event: Event, payload: type[payloads.ObjectPayload], cls: type[T]) -> T:
    """The object an event carries, as `cls` (a DecodeError names what else it is)."""
    obj = event.payload_as(payload).decoded()
    if not isinstance(obj, cls):
        raise codec.DecodeError(f"{event.type}: expected a {cls.__name__}, got a {obj.kind}")
    return obj


# --- jobs ------------------------------------------------------------------------------------------


def _job_submitted(state: State, event: Event) -> None:
    job = default_job(_decoded(event, payloads.JobSubmitted, Job))
    cause = _cause(event)
    record = state.jobs.get(_key(event))
    if record is None:
        state.jobs[_key(event)] = new_record(_key(event), job, cause)
    elif record.active:
        # a re-submission of a live job is an update of its spec
        _set_spec(record, job, cause)
        policies.raise_event(record, event, "JobUpdated")
    else:
        # the previous incarnation is still being torn down; this one starts when that completes
        record.successor = (job, cause)


def _job_updated(state: State, event: Event) -> None:
    job = default_job(_decoded(event, payloads.JobUpdated, Job))
    record = state.jobs.get(_key(event))
    # unknown or deleting: on the ordered log the job was deleted before this update
    if record is None:
        return
    if record.active:
        _set_spec(record, job, _cause(event))
        policies.raise_event(record, event, "JobUpdated")
    elif record.successor is not None:
        record.successor = (job, record.successor[1])


def _set_spec(record: JobRecord, job: Job, cause: Cause) -> None:
    record.job = job
    record.spec_cause = cause
    record.last_cause = cause
    retally(record)


def _job_deleted(state: State, event: Event) -> None:
    record = state.jobs.get(_key(event))
    if record is None:
        return
    if record.successor is not None:
        record.successor = None
        return
    if record.deleted is None:
        record.deleted = _cause(event)
        record.last_cause = _cause(event)
        retally(record)
        forget_if_done(state, record)


def _job_cleaned_up(state: State, event: Event) -> None:
    """The TTL after the job finished ran out: deleted, if it is still the incarnation that expired."""
    record = state.jobs.get(_key(event))
    incarnation = event.payload_as(payloads.JobCleanedUp).incarnation
    if record is not None and record.active and incarnation == record.incarnation:
        _job_deleted(state, event)


def _job_status_changed(state: State, event: Event) -> None:
    record = state.jobs.get(_key(event))
    if record is not None:
        lifecycle.read_back(record, event.payload_as(payloads.JobStatusChanged))
        record.status_generation += 1
        record.status_cause = _cause(event)


def _command_issued(state: State, event: Event) -> None:
    command = event.payload_as(payloads.CommandIssued)
    if command.target_kind != "Job":
        return
    record = state.jobs.get(command.target)  # a Job target is named by its key
    if record is not None:
        policies.command(record, event, command.action)


# --- podgroups -------------------------------------------------------------------------------------


def _podgroup_created(state: State, event: Event) -> None:
    podgroup = _decoded(event, payloads.PodGroupCreated, PodGroup)
    if is_plain(podgroup):
        return  # a plain pod's own group or a user's (plain/)
    record = _record_or_orphan(state, _key(event), event)
    if record.podgroup is not None:
        return  # one PodGroup per incarnation: a second delivery must not reset its phase
    record.podgroup = podgroup.status.phase
    record.podgroup_deleted = False
    record.podgroup_cause = record.last_cause = _cause(event)


def _podgroup_status_changed(state: State, event: Event) -> None:
    record = state.jobs.get(_key(event))
    if record is None or not record.podgroup_exists:
        return
    before = record.podgroup
    record.podgroup = event.payload_as(payloads.PodGroupStatusChanged).phase
    record.podgroup_cause = record.last_cause = _cause(event)
    policies.podgroup_phase_changed(record, event, before)


def _podgroup_deleted(state: State, event: Event) -> None:
    record = state.jobs.get(_key(event))
    if record is None:
        return
    record.podgroup_deleted = True
    record.podgroup_cause = record.last_cause = _cause(event)
    forget_if_done(state, record)


# --- pods ------------------------------------------------------------------------------------------


def _created_pod_meta(event: Event) -> tuple[str, float, Mapping[str, str]]:
    """The uid, creation time and annotations of the pod a PodCreated carries, read from its encoding:
    only they matter here, and decoding the pod (or even its ObjectMeta, 20 µs) through the codec was most
    of what folding a PodCreated cost. The payload's class checked that it is a Pod; a field of the wrong
    type is a DecodeError naming its path."""
    meta = event.payload_as(payloads.PodCreated).object["object"].get("meta")
    if not isinstance(meta, Mapping):
        raise codec.DecodeError("PodCreated: object.meta: expected a mapping")
    uid = meta.get("uid", "")
    created = meta.get("creation_timestamp", 0.0)
    annotations = meta.get("annotations") or {}
    wrong = [
        path
        for path, ok in (
            ("uid", isinstance(uid, str)),
            ("creation_timestamp", isinstance(created, int | float) and not isinstance(created, bool)),
            ("annotations", isinstance(annotations, Mapping) and all(map(_is_str, annotations.values()))),
        )
        if not ok
    ]
    if wrong:
        raise codec.DecodeError(f"PodCreated: wrong type of {', '.join('object.meta.' + p for p in wrong)}")
    return uid, float(created), annotations


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _pod_created(state: State, event: Event) -> None:
    uid, created_at, annotations = _created_pod_meta(event)
    if JOB_NAME not in annotations:
        return  # a plain pod (plain/)
    record = _record_or_orphan(state, f"{event.namespace}/{annotations[JOB_NAME]}", event)
    # pods written before the generation annotation existed carried it as the job-retry-count
    retry = int(annotations.get(POD_GENERATION, annotations.get(JOB_RETRY_COUNT, "0")))
    previous = record.pods.get(event.name)
    if previous is not None and previous.retry >= retry:
        return
    created = PodRecord(
        uid=uid,
        task=annotations[TASK_SPEC],
        index=int(annotations[TASK_INDEX]),
        retry=retry,
        created_at=created_at,
        version=int(annotations.get(JOB_VERSION, "0")),
        job_retry=int(annotations.get(JOB_RETRY_COUNT, "0")) if POD_GENERATION in annotations else 0,
    )
    put_pod(record, event.name, created)
    record.last_cause = _cause(event)
    state.pod_owner[_key(event)] = record.key
    policies.pod_created(record, event, event.name, created)


def _pod_event(state: State, event: Event) -> None:
    """A pod's lifecycle event (pod_lifecycle.py), applied to the pod's current generation."""
    record = state.jobs.get(state.pod_owner.get(_key(event), ""))
    pod = record.pods.get(event.name) if record is not None else None
    if record is None or pod is None:
        return
    change = pod_lifecycle.transition(pod, event)
    if change is None:
        return
    if "ended" in change or "deletion_node" in change:
        change["end_cause"] = _cause(event)  # what ended this generation (or asked for its end)
    after = changed(pod, change)
    policies.pod_changed(record, event, event.name, pod, after)
    put_pod(record, event.name, after)
    record.last_cause = _cause(event)
    forget_if_done(state, record)


# --- other services' objects the controller consults ----------------------------------------------


def _queue_state_changed(state: State, event: Event) -> None:
    state.queue_states[event.name] = event.payload_as(payloads.QueueStateChanged).state


def _priority_class_applied(state: State, event: Event) -> None:
    pc = _decoded(event, payloads.PriorityClassApplied, PriorityClass)
    state.priority_classes[pc.meta.name] = pc


def _priority_class_deleted(state: State, event: Event) -> None:
    state.priority_classes.pop(event.name, None)


# --- record lifetime -------------------------------------------------------------------------------


def _record_or_orphan(state: State, key: str, event: Event) -> JobRecord:
    """The record of `key`; a PodGroup or pod of an unknown job starts an orphan record, which reconcile
    deletes (it can only be an output that landed after its job's deletion completed)."""
    record = state.jobs.get(key)
    if record is None:
        record = state.jobs[key] = new_record(key, None, _cause(event))
    return record


_HANDLERS: Mapping[str, Callable[[State, Event], None]] = {
    "JobSubmitted": _job_submitted,
    "JobUpdated": _job_updated,
    "JobDeleted": _job_deleted,
    "JobCleanedUp": _job_cleaned_up,
    "JobStatusChanged": _job_status_changed,
    "CommandIssued": _command_issued,
    "PodGroupCreated": _podgroup_created,
    "PodGroupStatusChanged": _podgroup_status_changed,
    "PodGroupDeleted": _podgroup_deleted,
    "PodCreated": _pod_created,
    **dict.fromkeys(pod_lifecycle.EVENTS, _pod_event),
    "QueueStateChanged": _queue_state_changed,
    "PriorityClassApplied": _priority_class_applied,
    "PriorityClassDeleted": _priority_class_deleted,
}
HANDLED_EVENTS = frozenset(_HANDLERS)
