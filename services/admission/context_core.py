"""Admission's view of the cluster, folded from the event log, and the pure planning of one request.

The view holds what admission's rules read (`ClusterContext`: queues with their states, priority classes,
jobs, hypernodes, the pods each queue has allocated) plus, per object, the sequence of the last event
admission wrote about it, so each accepted event is published with `expected_last_subject_seq` = that
sequence over admission's own events of the object: two admission instances deciding about the same object
cannot both write it.

Pure: no I/O, no clock. Like the controllers' states, the view is a mutable container the fold updates in
place (the runner holds the only reference); the `ClusterContext` handed to `decide` is an immutable
value built from it on demand and cached until the next relevant event.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import msgpack

from contracts import codec, payloads
from contracts.errors import FieldError
from contracts.events import ADMISSION, EVENT_TYPES, event_types_written_by
from contracts.objects import (
    CLUSTER_SCOPED,
    ApiObject,
    HyperNode,
    Job,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
)
from contracts.objects_flow import CronJob, JobFlow, JobTemplate
from contracts.payloads import ObjectPayload, decode_as
from contracts.podgroup_owner import owner_pod
from services.admission import own_writes
from services.admission.core.context import ClusterContext, implicit_queues
from services.admission.core.decide import COMMAND, DELETE, Decision, Emit, Request, decide
from services.admission.core.implicit_podgroup import GROUP_NAME
from services.admission.core.overlay import Overlay
from services.admission.core.tenants import TENANT_KIND, Tenant, fold_tenant
from services.admission.own_writes import OwnWrites
from shared.runner_types import Event, Key, Output, deterministic_id

CHECKPOINT_VERSION = 1
# subjects admission writes to, whose last sequence guards its writes
GUARDED_KINDS = frozenset(
    {"job", "queue", "priorityclass", "hypernode", "command", "pod", "podgroup", TENANT_KIND}
    | {"cronjob", "jobtemplate", "jobflow"}
)
# a pod counts against its queue from its binding until it stops (Volcano's queue status.allocated): its
# queue is its PodGroup's, which the binding names (_group_queue). Neither its creation nor its start is
# read: a pod runs only where it was bound, so the runner skips a PodCreated and a PodRunning message of
# every gang before decoding them (a PodCreated carries a whole Pod).
_ALLOCATING = frozenset({"PodBound", "PodEvicting"})
_RELEASING = frozenset({"PodSucceeded", "PodFailed", "PodTerminated", "PodLost"})
_TABLES = {
    "job": "jobs",
    "queue": "queues",
    "priorityclass": "priority_classes",
    "hypernode": "hypernodes",
    "pod": "plain_pods",
    "podgroup": "podgroups",
    "cronjob": "cronjobs",
    "jobtemplate": "jobtemplates",
    "jobflow": "jobflows",
}


def subject_key(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind}/{namespace if namespace is not None else '_'}/{name}"


@dataclass(slots=True)
class View:
    jobs: dict[str, Job] = field(default_factory=dict)  # "namespace/name"
    queues: dict[str, Queue] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    hypernodes: dict[str, HyperNode] = field(default_factory=dict)
    plain_pods: dict[str, Pod] = field(default_factory=dict)  # submitted without a Job
    podgroups: dict[str, PodGroup] = field(default_factory=dict)  # submitted, and plain pods' own
    pods: dict[str, list[Any]] = field(default_factory=dict)  # a bound pod's key -> [queue, allocated]
    allocated: dict[str, int] = field(default_factory=dict)  # queue -> its allocated pods (from `pods`)
    subjects: dict[str, int] = field(default_factory=dict)  # subject_key -> last seq
    tenants: dict[str, Tenant] = field(default_factory=dict)  # the registry, by name
    cronjobs: dict[str, CronJob] = field(default_factory=dict)  # "namespace/name", like the next two
    jobtemplates: dict[str, JobTemplate] = field(default_factory=dict)
    jobflows: dict[str, JobFlow] = field(default_factory=dict)
    seq: int = 0
    # admission's own decided objects awaiting their fold (own_writes.py; not checkpointed)
    awaiting_fold: OwnWrites = field(default_factory=dict)

    def subject_seq(self, kind: str, namespace: str | None, name: str) -> int:
        return self.subjects.get(subject_key(kind, namespace, name), 0)

    def context(self) -> ClusterContext:
        """The context of a decision: read-only views of the live tables, built in O(1). Decide with it
        before the next event is folded (deciding is synchronous, so it always is)."""
        implicit = {q.meta.name: q for q in implicit_queues() if q.meta.name not in self.queues}
        return ClusterContext(
            queues=Overlay(self.queues, implicit),
            priority_classes=MappingProxyType(self.priority_classes),
            jobs=MappingProxyType(self.jobs),
            hypernodes=MappingProxyType(self.hypernodes),
            plain_pods=MappingProxyType(self.plain_pods),
            podgroups=MappingProxyType(self.podgroups),
            queue_pods=MappingProxyType(self.allocated),
            tenants=MappingProxyType(self.tenants),
            cronjobs=MappingProxyType(self.cronjobs),
            jobtemplates=MappingProxyType(self.jobtemplates),
            jobflows=MappingProxyType(self.jobflows),
        )


def count_allocated(view: View, queue: str, delta: int) -> None:
    count = view.allocated.get(queue, 0) + delta
    if count:
        view.allocated[queue] = count
    else:
        view.allocated.pop(queue, None)


def fold(view: View, event: Event) -> View:
    """Apply one event. An object in a payload that does not decode (a bug of its writer) is skipped:
    every other service reads the same log, and stopping admission would not repair it. (The payload's
    fields were checked on the way in; the object inside is decoded here.)"""
    view.seq = event.seq
    if event.kind in GUARDED_KINDS and event.producer == ADMISSION:
        view.subjects[subject_key(event.kind, event.namespace, event.name)] = event.seq
    handler = _HANDLERS.get(event.type)
    if handler is not None:
        try:
            handler(view, event)
        except (codec.DecodeError, KeyError, TypeError, ValueError, AttributeError):
            return view
    return view


def _key(event: Event) -> str:
    return f"{event.namespace}/{event.name}" if event.namespace is not None else event.name


def _put(table: str) -> Callable[[View, Event], None]:
    def handler(view: View, event: Event) -> None:
        obj = own_writes.take(view.awaiting_fold, event) or event.payload_as(ObjectPayload).decoded()
        getattr(view, table)[obj.meta.key] = obj

    return handler


def _drop(table: str) -> Callable[[View, Event], None]:
    def handler(view: View, event: Event) -> None:
        getattr(view, table).pop(_key(event), None)

    return handler


def _tenant(view: View, event: Event) -> None:
    payload = event.payload_as(payloads.TenantApplied) if event.type == "TenantApplied" else None
    fold_tenant(view.tenants, event.type, event.name, payload or payloads.Empty())


def _queue_state(view: View, event: Event) -> None:
    queue = view.queues.get(event.name)
    if queue is not None:
        state = event.payload_as(payloads.QueueStateChanged).state
        view.queues[event.name] = replace(queue, status=replace(queue.status, state=state))


def _pod_submitted(view: View, event: Event) -> None:
    submitted = event.payload_as(payloads.PodSubmitted)
    pod = submitted.decoded()
    view.plain_pods[pod.meta.key] = pod
    if submitted.podgroup is not None:
        group = decode_as(submitted.podgroup, PodGroup)
        view.podgroups[group.meta.key] = group


def _pod_withdrawn(view: View, event: Event) -> None:
    pod = view.plain_pods.pop(_key(event), None)
    if pod is None:
        return
    key = f"{pod.meta.namespace}/{pod.meta.annotations.get(GROUP_NAME, '')}"
    group = view.podgroups.get(key)
    if group is not None and owner_pod(group) == pod.meta.name:
        del view.podgroups[key]  # its own group goes with it


def _group_queue(view: View, group: str) -> str | None:
    """The queue of the PodGroup `group` ("namespace/name") names: a Job's (the job-controller names a
    Job's PodGroup after it) or one admission stored (a plain pod's own group, a submitted PodGroup)."""
    job = view.jobs.get(group)
    if job is not None:
        return job.queue
    podgroup = view.podgroups.get(group)
    return podgroup.queue if podgroup is not None else None


def _pod_phase(allocated: bool) -> Callable[[View, Event], None]:
    def handler(view: View, event: Event) -> None:
        key = _key(event)
        pod = view.pods.get(key)
        if allocated:
            if pod is None:
                # the binder correlates a binding (and an eviction) with the pod's PodGroup, whose queue
                # is the pod's; a group already gone (deleted as the pod was bound) counts it nowhere
                queue = _group_queue(view, event.correlation_id)
                if queue is None:
                    return
                pod = view.pods[key] = [queue, False]
            if not pod[1]:
                count_allocated(view, pod[0], 1)
            pod[1] = True
        elif pod is not None:
            if pod[1]:
                count_allocated(view, pod[0], -1)
            del view.pods[key]  # finished: it never allocates again (a retry is bound anew)

    return handler


# the events whose object the view stores as it is, and where (own_writes.py keeps admission's own
# decided objects for their fold)
_STORED = {
    "JobSubmitted": "jobs",
    "JobUpdated": "jobs",
    "QueueApplied": "queues",
    "PriorityClassApplied": "priority_classes",
    "HyperNodeApplied": "hypernodes",
    "PodGroupSubmitted": "podgroups",
    "CronJobApplied": "cronjobs",
    "JobTemplateApplied": "jobtemplates",
    "JobFlowApplied": "jobflows",
}
STORED_OBJECT_EVENTS = frozenset(_STORED)
_HANDLERS: Mapping[str, Callable[[View, Event], None]] = {
    **{name: _put(table) for name, table in _STORED.items()},
    "JobDeleted": _drop("jobs"),
    "JobCleanedUp": _drop("jobs"),
    "QueueDeleted": _drop("queues"),
    "QueueStateChanged": _queue_state,
    "PriorityClassDeleted": _drop("priority_classes"),
    "HyperNodeDeleted": _drop("hypernodes"),
    "PodSubmitted": _pod_submitted,
    "PodWithdrawn": _pod_withdrawn,
    "PodGroupWithdrawn": _drop("podgroups"),
    "CronJobDeleted": _drop("cronjobs"),
    "JobTemplateDeleted": _drop("jobtemplates"),
    "JobFlowDeleted": _drop("jobflows"),
    "TenantApplied": _tenant,
    "TenantDeleted": _tenant,
    **{name: _pod_phase(True) for name in _ALLOCATING},
    **{name: _pod_phase(False) for name in _RELEASING},
}
# what the view folds, and admission's own events (the guard of its compare-and-sets)
READS = frozenset(_HANDLERS) | frozenset(event_types_written_by(ADMISSION))


# --- planning a request ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Write:
    """One event to publish: its subject's object, the CAS guard (None: an earlier write of the same
    request guards the subject) and the correlation id (the job key where there is a job)."""

    emit: Emit
    kind: str
    namespace: str | None
    name: str
    expected_last_subject_seq: int | None
    correlation_id: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """One request's object and what happened to it: created, configured, unchanged, deleted, issued."""

    kind: str
    namespace: str
    name: str
    action: str


@dataclass(frozen=True, slots=True)
class Plan:
    accepted: bool
    outcomes: tuple[Outcome, ...] = ()
    writes: tuple[Write, ...] = ()
    errors: tuple[FieldError, ...] = ()


# the kinds admission stores, which get their identity (uid, creation time) when created
STORED_KINDS = frozenset(
    {"Job", "Queue", "PriorityClass", "HyperNode", "Pod", "PodGroup", "CronJob", "JobTemplate", "JobFlow"}
)


def stamp(obj: ApiObject, context: ClusterContext, uid: str, now: float) -> ApiObject:
    """A new object gets its identity here (the API server's job in Kubernetes); an existing one keeps
    its own, which `decide` carries over."""
    if obj.kind not in STORED_KINDS:
        return obj
    if context.existing(obj.kind, obj.meta.namespace, obj.meta.name) is not None:
        return obj
    return replace(obj, meta=replace(obj.meta, uid=uid, creation_timestamp=now))


def plan(requests: Sequence[Request], view: View, request_id: str, now: float) -> Plan:
    """Decide every request in order, each against the cluster as the earlier ones leave it (so a job may
    name a queue created by the same manifest); all are accepted or none."""
    return plan_in(view.context(), requests, view, request_id, now)[0]


def plan_in(
    context: ClusterContext, requests: Sequence[Request], view: View, request_id: str, now: float
) -> tuple[Plan, ClusterContext]:
    """plan() against a given context (the view's, with earlier decisions of a batch assumed), and the
    context as the plan leaves it if it is accepted (unchanged if not)."""
    start = context
    outcomes: list[Outcome] = []
    writes: list[Write] = []
    errors: list[FieldError] = []
    guarded: set[str] = set()
    for index, request in enumerate(requests):
        if request.object is not None and request.operation != COMMAND:
            uid = deterministic_id("admission", "uid", request_id, index)
            request = replace(request, object=stamp(request.object, context, uid, now))
        existed = _existing(request, context) is not None
        decision = decide(request, context)
        if not decision.accepted:
            errors.extend(decision.errors)
            continue
        outcomes.append(_outcome(request, decision, existed))
        for emit in decision.events:
            write = _write(emit, view, guarded)
            guarded.add(subject_key(write.kind, write.namespace, write.name))
            writes.append(write)
        context = assume(context, decision, deleted=request.operation == DELETE)
    if errors:
        return Plan(False, errors=tuple(errors)), start
    return Plan(True, tuple(outcomes), tuple(writes)), context


def _existing(request: Request, context: ClusterContext) -> ApiObject | None:
    if request.operation == DELETE:
        return context.existing(request.kind, request.namespace, request.name)
    obj = request.object
    return None if obj is None else context.existing(obj.kind, obj.meta.namespace, obj.meta.name)


def _outcome(request: Request, decision: Decision, existed: bool) -> Outcome:
    obj = decision.objects[0]
    namespace = "" if obj.kind in CLUSTER_SCOPED else obj.meta.namespace
    if request.operation == DELETE:
        action = "deleted"
    elif obj.kind == "Command":
        action = "issued"
    elif not decision.events:
        action = "unchanged"
    else:
        action = "configured" if existed else "created"
    return Outcome(obj.kind, namespace, obj.meta.name, action)


def _write(emit: Emit, view: View, guarded: set[str]) -> Write:
    obj = emit.object
    kind = EVENT_TYPES[emit.type].subject_kind
    namespace = None if obj.kind in CLUSTER_SCOPED else obj.meta.namespace
    key = subject_key(kind, namespace, obj.meta.name)
    expected = None if key in guarded else view.subjects.get(key, 0)
    payload = emit.payload
    correlation = payload.target if isinstance(payload, payloads.CommandIssued) else obj.meta.key
    return Write(emit, kind, namespace, obj.meta.name, expected, correlation)


def assume(context: ClusterContext, decision: Decision, *, deleted: bool = False) -> ClusterContext:
    """The context once the decision's objects are stored (or removed): an overlay over the tables, so a
    step costs what it changes, not the size of the cluster."""
    for obj in decision.objects:
        table = _TABLES.get(obj.kind.lower())
        if table is None:
            continue
        current = Overlay(getattr(context, table))
        changed = current.without(obj.meta.key) if deleted else current.with_value(obj.meta.key, obj)
        context = replace(context, **{table: changed})  # type: ignore[arg-type]  # `table` names an Overlay field
    return context


# --- the Core protocol -----------------------------------------------------------------------------


class AdmissionViewCore:
    """The view as a runner core: it only folds; admission writes in answer to requests, never in
    reconcile."""

    name = "admission"
    reads = READS

    def initial(self) -> View:
        return View()

    def apply(self, state: View, event: Event) -> View:
        return fold(state, event)

    def touched(self, state: View, event: Event) -> tuple[()]:
        return ()

    def due(self, state: View, now: float) -> tuple[()]:
        return ()

    def reconcile(self, state: View, now: float, keys: Collection[Key] | None = None) -> list[Output]:
        return []

    def dump(self, state: View) -> bytes:
        document = {
            "version": CHECKPOINT_VERSION,
            "seq": state.seq,
            "objects": [
                codec.encode_object(obj)
                for table in (
                    state.jobs,
                    state.queues,
                    state.priority_classes,
                    state.hypernodes,
                    state.plain_pods,
                    state.podgroups,
                    state.cronjobs,
                    state.jobtemplates,
                    state.jobflows,
                )
                for obj in table.values()
            ],
            "pods": state.pods,
            "subjects": state.subjects,
            "tenants": [t.to_dict() for t in state.tenants.values()],
        }
        return msgpack.packb(document, use_bin_type=True)

    def load(self, data: bytes) -> View:
        document = msgpack.unpackb(data, raw=False)
        if document.get("version") != CHECKPOINT_VERSION:
            raise ValueError(f"unsupported admission checkpoint version {document.get('version')!r}")
        # only bound pods: one created but not yet bound (kept while the view read PodCreated) is
        # counted from its binding, like any other
        pods = {key: pod for key, pod in document["pods"].items() if pod[1]}
        view = View(pods=pods, subjects=document["subjects"], seq=document["seq"])
        for tenant in document.get("tenants", ()):  # a checkpoint older than the registry has none
            view.tenants[tenant["name"]] = Tenant.from_dict(tenant)
        for encoded in document["objects"]:
            obj = codec.decode_object(encoded)
            getattr(view, _TABLES[obj.kind.lower()])[obj.meta.key] = obj
        for queue, allocated in view.pods.values():
            if allocated:
                count_allocated(view, queue, 1)
        return view
