"""Fold one event into the plain pods' and PodGroups' state (in place; see state.py).

A pod's lifecycle events are folded by pod_lifecycle.py's rules, the ones a Job's pods follow; a plain
pod's status also shows what they said (exit code, reason, times), and a pod stopped or lost before it
finished ends Failed. `apply` returns the keys of the read-model objects the event may have changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from contracts import codec, payloads
from contracts.job_shape import JOB_NAME
from contracts.objects import ObjectMeta, Pod, PodGroup
from contracts.payloads import EncodedObject
from contracts.podgroup_owner import is_plain, may_be_plain, owner_pod
from services.job_controller.core import pod_lifecycle
from services.job_controller.core.objects import podgroup_conditions
from services.job_controller.core.plain.state import (
    PlainGroup,
    PlainPod,
    PlainState,
    drop_pod,
    own_group,
    put_pod,
)
from services.job_controller.core.state import Cause
from shared.projected_core import ObjectKey
from shared.runner_types import Event

T = TypeVar("T")


def apply(state: PlainState, event: Event) -> list[ObjectKey]:
    handler = _HANDLERS.get(event.type)
    if handler is None:
        return []
    key = f"{event.namespace}/{event.name}"
    if event.kind == "pod":
        record = state.pods.get(key)
        before = record.group_key if record is not None else None
        handler(state, event, key)
        after = state.pods.get(key)
        groups = {g for g in (before, after.group_key if after is not None else None) if g}
        touched = record is not None or after is not None
        return [_pod_key(key), *map(_group_key, groups)] if touched else []
    group = state.groups.get(key)
    handler(state, event, key)
    group = group or state.groups.get(key)
    if group is None:
        return []
    # a pod's own group taking its pod along
    owner = [] if group.owner is None else [_pod_key(f"{group.podgroup.meta.namespace}/{group.owner}")]
    return [_group_key(key), *owner]


def _pod_key(key: str) -> ObjectKey:
    namespace, _, name = key.partition("/")
    return ("pod", namespace, name)


def _group_key(key: str) -> ObjectKey:
    namespace, _, name = key.partition("/")
    return ("podgroup", namespace, name)


def _cause(event: Event) -> Cause:
    return (event.seq, event.id)


def _decoded(document: EncodedObject, cls: type[T]) -> T:
    obj = codec.decode_object(document)
    if not isinstance(obj, cls):
        raise codec.DecodeError(f"expected a {cls.__name__}, got a {obj.kind}")
    return obj


# --- admission's events ----------------------------------------------------------------------------


def _pod_submitted(state: PlainState, event: Event, key: str) -> None:
    submitted = event.payload_as(payloads.PodSubmitted)
    pod = _decoded(submitted.object, Pod)
    group = None if submitted.podgroup is None else _decoded(submitted.podgroup, PodGroup)
    record = state.pods.get(key)
    if record is None:
        _start_pod(state, pod, group, _cause(event))
    elif record.withdrawn is not None:
        record.successor = (pod, group, _cause(event))  # starts once the previous one is removed
    # else: a second submission of a live pod (admission guards against it): the first one stands


def _start_pod(state: PlainState, pod: Pod, group: PodGroup | None, cause: Cause) -> None:
    record = PlainPod(pod, cause)
    put_pod(state, record)
    if group is not None and group.meta.key not in state.groups:
        state.groups[group.meta.key] = PlainGroup(group, cause, owner=pod.meta.name)


def _pod_withdrawn(state: PlainState, event: Event, key: str) -> None:
    record = state.pods.get(key)
    if record is None:
        return
    if record.successor is not None:
        record.successor = None  # the resubmission is withdrawn before it started
    elif record.withdrawn is None:
        record.withdrawn = _cause(event)
    forget_if_done(state, record)


def _podgroup_submitted(state: PlainState, event: Event, key: str) -> None:
    group = _decoded(event.payload_as(payloads.PodGroupSubmitted).object, PodGroup)
    record = state.groups.get(key)
    if record is None:
        state.groups[key] = PlainGroup(group, _cause(event))
    elif record.withdrawn is not None:
        record.successor = (group, _cause(event))


def _podgroup_withdrawn(state: PlainState, event: Event, key: str) -> None:
    record = state.groups.get(key)
    if record is None or record.owner is not None:
        return  # a pod's own group goes with its pod
    if record.successor is not None:
        record.successor = None
    elif record.withdrawn is None:
        record.withdrawn = _cause(event)
    _forget_group_if_done(state, record)


# --- the job-controller's own events ---------------------------------------------------------------


def _podgroup_created(state: PlainState, event: Event, key: str) -> None:
    document = event.payload_as(payloads.PodGroupCreated).object
    if not may_be_plain(document):
        return  # a Job's (decoding it here would double what its PodGroupCreated costs)
    group = _decoded(document, PodGroup)
    if not is_plain(group):
        return  # a Job's
    record = state.groups.get(key)
    if record is None:
        # an orphan: created after its record was forgotten; reconcile deletes it
        record = state.groups[key] = PlainGroup(group, _cause(event), owner=owner_pod(group))
        record.withdrawn = _cause(event)
    record.created = True


def _podgroup_status_changed(state: PlainState, event: Event, key: str) -> None:
    record = state.groups.get(key)
    if record is not None and record.exists:
        status = event.payload_as(payloads.PodGroupStatusChanged)
        record.phase = status.phase
        record.conditions = podgroup_conditions(status)


def _podgroup_deleted(state: PlainState, event: Event, key: str) -> None:
    record = state.groups.get(key)
    if record is None or not record.created:
        return
    record.deleted = True
    _forget_group_if_done(state, record)
    if record.owner is not None:
        owner = state.pods.get(f"{record.podgroup.meta.namespace}/{record.owner}")
        if owner is not None:
            forget_if_done(state, owner)


def _pod_created(state: PlainState, event: Event, key: str) -> None:
    document = event.payload_as(payloads.PodCreated).object
    annotations = document["object"]["meta"].get("annotations")
    if isinstance(annotations, dict) and JOB_NAME in annotations:
        return  # a Job's pod: the Job fold decodes its meta (first), so it is not decoded twice
    meta = codec.decode(ObjectMeta, document["object"]["meta"])
    if JOB_NAME in meta.annotations:
        return  # a Job's pod
    record = state.pods.get(key)
    if record is None or record.pod.meta.uid != meta.uid:
        if record is not None:
            return  # a late creation of an earlier incarnation: the current record's own PodCreated rules
        # an orphan: created after its record was forgotten; reconcile stops it
        record = PlainPod(_decoded(document, Pod), _cause(event))
        record.withdrawn = _cause(event)
        put_pod(state, record)
    record.created = True


def _pod_nominated(state: PlainState, event: Event, key: str) -> None:
    """Room reserved for a waiting pod: its status shows the node until it is bound."""
    record = state.pods.get(key)
    node = pod_lifecycle.nomination(record, event) if record is not None and record.created else None
    if record is not None and node is not None:
        record.details = replace(record.details, nominated_node_name=node)


def _pod_event(state: PlainState, event: Event, key: str) -> None:
    """A pod's lifecycle event (pod_lifecycle.py), with what the pod's status shows of it."""
    record = state.pods.get(key)
    if record is None or not record.created:
        return
    change = pod_lifecycle.transition(record, event)
    if change is None:
        return
    for name, value in change.items():
        setattr(record, name, value)
    record.details = pod_lifecycle.status_details(record.details, event)
    if change.get("ended") and not record.finished:
        # a pod no controller creates again ends Failed (Kubernetes' evicted bare pod)
        record.phase = "Failed"
        record.details = replace(record.details, reason=_end_reason(event))
    if pod_lifecycle.asks_stop(event) and record.deletion_time is None:
        record.deletion_time = event.time
    if record.done and record.done_cause is None:
        record.done_cause = _cause(event)
    forget_if_done(state, record)


def _end_reason(event: Event) -> str:
    data = event.data
    if isinstance(data, payloads.PodTerminated):
        return data.reason or "Terminated"
    return "NodeLost"


# --- record lifetime -------------------------------------------------------------------------------


def forget_if_done(state: PlainState, record: PlainPod) -> None:
    """Drop a withdrawn pod once nothing of it is left, then start its successor if any."""
    if record.withdrawn is None or (record.created and not record.gone):
        return
    group = own_group(state, record)
    if group is not None and group.created and not group.deleted:
        return  # reconcile deletes it first
    if state.pods.get(record.key) is not record:
        return
    drop_pod(state, record)
    if group is not None:
        state.groups.pop(group.key, None)
    if record.successor is not None:
        pod, podgroup, cause = record.successor
        _start_pod(state, pod, podgroup, cause)


def _forget_group_if_done(state: PlainState, record: PlainGroup) -> None:
    if record.owner is not None or record.withdrawn is None or (record.created and not record.deleted):
        return
    del state.groups[record.key]
    if record.successor is not None:
        group, cause = record.successor
        state.groups[record.key] = PlainGroup(group, cause)


_HANDLERS: Mapping[str, Callable[[PlainState, Event, str], None]] = {
    "PodSubmitted": _pod_submitted,
    "PodWithdrawn": _pod_withdrawn,
    "PodGroupSubmitted": _podgroup_submitted,
    "PodGroupWithdrawn": _podgroup_withdrawn,
    "PodGroupCreated": _podgroup_created,
    "PodGroupStatusChanged": _podgroup_status_changed,
    "PodGroupDeleted": _podgroup_deleted,
    "PodCreated": _pod_created,
    **dict.fromkeys(pod_lifecycle.EVENTS, _pod_event),
    pod_lifecycle.NOMINATED: _pod_nominated,
}
HANDLED_EVENTS = frozenset(_HANDLERS)
