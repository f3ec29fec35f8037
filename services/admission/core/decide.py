"""Admission's decision for one API request: accept (with the defaulted objects and the events that record
them) or reject (with every error). A pure function of the request and the cluster context.

Operations: create, update, apply (create or update, whichever fits), delete and command, on the kinds
admission records in the log: Job, Queue, PriorityClass, HyperNode, CronJob, JobTemplate and JobFlow
specs, plain Pods and PodGroups
(users' own, without a Job: the job-controller creates them, and a plain pod's own PodGroup, from the
PodSubmitted and PodGroupSubmitted admission writes), and Commands. Nodes register themselves through
their node agent, so the API turns that kind away.

Plain Pods and PodGroups are immutable, as a Pod's spec is in Kubernetes: applying one unchanged records
nothing, any change is refused with the fields it touches (delete it and submit it again). A Job's pods
and PodGroup are the Job's: they cannot be deleted on their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

from contracts import payloads
from contracts.codec import encode_object
from contracts.errors import FieldError
from contracts.events import EVENT_TYPES
from contracts.objects import (
    CLUSTER_SCOPED,
    ApiObject,
    Command,
    Job,
    JobStatus,
    Pod,
    PodGroup,
    PodGroupStatus,
    PodStatus,
    Queue,
    QueueStatus,
)
from contracts.objects_flow import (
    CronJob,
    CronJobStatus,
    JobFlow,
    JobFlowStatus,
    JobTemplate,
    JobTemplateStatus,
)
from contracts.podgroup_owner import owner_pod
from services.admission.core.admit import admit, describe, validate_meta
from services.admission.core.command_rules import target_key, validate_command
from services.admission.core.context import ClusterContext
from services.admission.core.immutable import changed_fields
from services.admission.core.implicit_podgroup import GROUP_NAME
from services.admission.core.name_claims import claim_errors, job_of_pod
from services.admission.core.queue_hierarchy import validate_queue_delete

CREATE, UPDATE, APPLY, DELETE, COMMAND = "create", "update", "apply", "delete", "command"
OPERATIONS = (CREATE, UPDATE, APPLY, DELETE, COMMAND)

# kind -> (event on create, event on update)
APPLIED_EVENTS: Mapping[str, tuple[str, str]] = {
    "Job": ("JobSubmitted", "JobUpdated"),
    "Queue": ("QueueApplied", "QueueApplied"),
    "PriorityClass": ("PriorityClassApplied", "PriorityClassApplied"),
    "HyperNode": ("HyperNodeApplied", "HyperNodeApplied"),
    "Pod": ("PodSubmitted", ""),  # immutable: no update event
    "PodGroup": ("PodGroupSubmitted", ""),
    "CronJob": ("CronJobApplied", "CronJobApplied"),
    "JobTemplate": ("JobTemplateApplied", "JobTemplateApplied"),
    "JobFlow": ("JobFlowApplied", "JobFlowApplied"),
}
DELETED_EVENTS: Mapping[str, str] = {
    "Job": "JobDeleted",
    "Queue": "QueueDeleted",
    "PriorityClass": "PriorityClassDeleted",
    "HyperNode": "HyperNodeDeleted",
    "Pod": "PodWithdrawn",
    "PodGroup": "PodGroupWithdrawn",
    "CronJob": "CronJobDeleted",
    "JobTemplate": "JobTemplateDeleted",
    "JobFlow": "JobFlowDeleted",
}
IMMUTABLE_KINDS = frozenset({"Pod", "PodGroup"})
_MADE_ELSEWHERE = {
    "Node": "nodes register themselves through their node agent",
}


@dataclass(frozen=True, slots=True)
class Request:
    """`object` for create/update/apply and command (a Command); `kind`, `namespace`, `name` for delete.
    `source` is set for manifests from the intake stream, whose rejection must itself be recorded (nobody
    waits for a reply); `document` names the document in errors (default "<Kind> <key>")."""

    operation: str
    object: ApiObject | None = None
    kind: str = ""
    namespace: str = ""
    name: str = ""
    source: str = ""
    document: str = ""


class Emit(NamedTuple):
    """An event admission is to append: its type (contracts.events), the object it is about, its payload."""

    type: str
    object: ApiObject
    payload: payloads.Payload


@dataclass(frozen=True, slots=True)
class Decision:
    accepted: bool
    objects: tuple[ApiObject, ...] = ()
    events: tuple[Emit, ...] = ()
    errors: tuple[FieldError, ...] = ()


def decide(request: Request, context: ClusterContext) -> Decision:
    if request.operation == DELETE:
        return _delete(request, context)
    obj = request.object
    if request.operation not in OPERATIONS:
        message = f"expected one of {', '.join(OPERATIONS)}, got {request.operation!r}"
        return _reject(request, [FieldError(request.document or "request", "operation", message)])
    if obj is None:
        return _reject(
            request, [FieldError(request.document or "request", "", "the request carries no object")]
        )
    if request.operation == COMMAND or isinstance(obj, Command):
        return _command(request, obj, context)
    return _write(request, obj, context)


def manifest_rejected(errors: Iterable[FieldError], source: str) -> payloads.ManifestRejected:
    """The record of a manifest from the intake stream that was refused, with every error."""
    fields = tuple(
        payloads.RejectedField(document=e.document, path=e.path, message=e.message) for e in errors
    )
    return payloads.ManifestRejected(errors=fields, source=source)


def _reject(request: Request, errors: list[FieldError]) -> Decision:
    events: tuple[Emit, ...] = ()
    if request.source and request.object is not None:
        events = (Emit("ManifestRejected", request.object, manifest_rejected(errors, request.source)),)
    return Decision(False, events=events, errors=tuple(errors))


def _write(request: Request, obj: ApiObject, context: ClusterContext) -> Decision:
    document = request.document or describe(obj)
    if obj.kind not in APPLIED_EVENTS:
        reason = _MADE_ELSEWHERE.get(obj.kind, "admission does not store this kind")
        return _reject(
            request, [FieldError(document, "kind", f"{obj.kind} objects are not accepted: {reason}")]
        )
    old = context.existing(obj.kind, obj.meta.namespace, obj.meta.name)
    if request.operation == CREATE and old is not None:
        message = f"{obj.kind} {obj.meta.key!r} already exists (apply or update it instead)"
        return _reject(request, [FieldError(document, "metadata.name", message)])
    if request.operation == UPDATE and old is None:
        return _reject(
            request, [FieldError(document, "metadata.name", f"{obj.kind} {obj.meta.key!r} not found")]
        )
    if obj.kind in IMMUTABLE_KINDS and old is not None:
        return _unchanged_or_refused(request, obj, old, context, document)
    admitted = admit(obj, context, document, old)
    errors = list(admitted.errors) + claim_errors(admitted.object, context, document)
    if errors:
        return _reject(request, errors)
    if isinstance(admitted.object, Pod):
        return _submit_pod(admitted.object, admitted.podgroup)
    new = _fresh(admitted.object) if old is None else _carry(old, admitted.object)
    if new == old:
        return Decision(True, objects=(new,))  # re-applying an unchanged object records nothing
    event = APPLIED_EVENTS[obj.kind][0 if old is None else 1]
    return Decision(True, objects=(new,), events=(Emit(event, new, _applied(event, new)),))


def _applied(event: str, obj: ApiObject) -> payloads.Payload:
    """The payload of an event that records an applied object: the object, encoded."""
    cls = EVENT_TYPES[event].payload_class
    assert issubclass(cls, payloads.ObjectPayload)  # every APPLIED_EVENTS type carries its object
    return cls(object=encode_object(obj))


def _fresh(obj: ApiObject) -> ApiObject:
    """A new object's status is its controller's to write; a queue keeps the state it asks for."""
    if isinstance(obj, Job):
        return replace(obj, status=JobStatus())
    if isinstance(obj, Queue):
        return replace(obj, status=QueueStatus(state=obj.status.state))
    if isinstance(obj, PodGroup):
        return replace(obj, status=PodGroupStatus())
    if isinstance(obj, CronJob):
        return replace(obj, status=CronJobStatus())
    if isinstance(obj, JobTemplate):
        return replace(obj, status=JobTemplateStatus())
    if isinstance(obj, JobFlow):
        return replace(obj, status=JobFlowStatus())
    return obj


def _submit_pod(pod: Pod, podgroup: PodGroup | None) -> Decision:
    """PodSubmitted carries the pod and the PodGroup it gets of its own (None when it names one)."""
    pod = replace(pod, status=PodStatus())
    group = None if podgroup is None else replace(podgroup, status=PodGroupStatus())
    payload = payloads.PodSubmitted(
        object=encode_object(pod), podgroup=None if group is None else encode_object(group)
    )
    objects = (pod,) if group is None else (pod, group)
    return Decision(True, objects=objects, events=(Emit("PodSubmitted", pod, payload),))


def _unchanged_or_refused(
    request: Request, obj: ApiObject, old: ApiObject, context: ClusterContext, document: str
) -> Decision:
    """Applying a stored Pod or PodGroup again records nothing; changing it is refused. The manifest is
    compared as admission would have stored it (defaults, its own group's name from the stored uid)."""
    meta = replace(obj.meta, uid=old.meta.uid, creation_timestamp=old.meta.creation_timestamp)
    changed = changed_fields(old, admit(replace(obj, meta=meta), context, document).object)
    if not changed:
        return Decision(True, objects=(old,))
    message = f"a {obj.kind} cannot be changed once submitted; delete it and submit it again"
    return _reject(request, [FieldError(document, path, message) for path in changed])


def _carry(old: ApiObject, new: ApiObject) -> ApiObject:
    """An update keeps the object's identity and its controller-owned status."""
    meta = replace(new.meta, uid=old.meta.uid, creation_timestamp=old.meta.creation_timestamp)
    if isinstance(new, Job) and isinstance(old, Job):
        return replace(new, meta=meta, status=old.status)
    if isinstance(new, Queue) and isinstance(old, Queue):
        return replace(new, meta=meta, status=old.status)
    if isinstance(new, CronJob | JobTemplate | JobFlow):
        return replace(_fresh(new), meta=meta)  # their status lives in the controller's read model
    return replace(new, meta=meta)


def _delete(request: Request, context: ClusterContext) -> Decision:
    kind = request.kind
    namespace = "" if kind in CLUSTER_SCOPED else request.namespace or "default"
    key = f"{namespace}/{request.name}" if namespace else request.name
    document = request.document or f"{kind} {key}"
    if kind not in DELETED_EVENTS:
        return _reject(
            request, [FieldError(document, "kind", f"{kind or 'an empty kind'} objects cannot be deleted")]
        )
    existing = context.existing(kind, namespace, request.name)
    if kind == "Queue":
        errors = validate_queue_delete(request.name, context, document)
    elif existing is None:
        errors = [FieldError(document, "metadata.name", _not_found(kind, namespace, request.name, context))]
    elif isinstance(existing, PodGroup) and owner_pod(existing) is not None:
        message = f"PodGroup {key!r} is Pod {owner_pod(existing)!r}'s own; delete the pod"
        errors = [FieldError(document, "metadata.name", message)]
    else:
        errors = []
    if errors or existing is None:
        return _reject(request, errors)
    objects: tuple[ApiObject, ...] = (existing,)
    if isinstance(existing, Pod):  # its own PodGroup goes with it
        own = context.podgroups.get(f"{namespace}/{existing.meta.annotations.get(GROUP_NAME, '')}")
        objects += (own,) if own is not None and owner_pod(own) == existing.meta.name else ()
    return Decision(True, objects=objects, events=(Emit(DELETED_EVENTS[kind], existing, payloads.Empty()),))


def _not_found(kind: str, namespace: str, name: str, context: ClusterContext) -> str:
    key = f"{namespace}/{name}"
    job = job_of_pod(namespace, name, context) if kind == "Pod" else None
    if job is not None:
        return f"Pod {key!r} is a pod of Job {job.meta.key!r}, which manages it; delete or suspend the Job"
    if kind == "PodGroup" and key in context.jobs:
        return f"PodGroup {key!r} is Job {key!r}'s; delete the Job"
    return f"{kind} {key!r} not found"


def _command(request: Request, obj: ApiObject, context: ClusterContext) -> Decision:
    document = request.document or describe(obj)
    if not isinstance(obj, Command):
        return _reject(request, [FieldError(document, "kind", f"expected a Command, got {obj.kind}")])
    command = obj
    if not command.meta.name and command.target is not None:
        # vcctl names commands after their target and action (it adds a random suffix; ids dedupe here)
        name = f"{command.target.name}-{command.action.lower()}"
        command = replace(command, meta=replace(command.meta, name=name))
    errors = validate_meta(command, document) + validate_command(command, context, document)
    if errors or command.target is None:  # (validate_command reports a missing target)
        return _reject(request, errors)
    payload = payloads.CommandIssued(
        action=command.action, target_kind=command.target.kind, target=target_key(command)
    )
    return Decision(True, objects=(command,), events=(Emit("CommandIssued", command, payload),))
