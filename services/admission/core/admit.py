"""Admit one object: default it (mutating webhooks), then check it (validating webhooks) against the
cluster context. Shared by `decide` (API requests) and `lahar validate` (offline, over files)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from contracts.errors import FieldError
from contracts.names import dns_label_problem, dns_subdomain_problem, metadata_problems
from contracts.objects import (
    CLUSTER_SCOPED,
    ApiObject,
    Command,
    HyperNode,
    Job,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    frozen_map,
)
from contracts.objects_flow import CronJob, JobFlow, JobTemplate
from contracts.podgroup_owner import OWNER, SUBMITTED
from contracts.sim_annotations import object_errors as sim_annotation_errors
from services.admission.core.command_rules import validate_command
from services.admission.core.context import DEFAULT_SCHEDULER, ClusterContext, implicit_queues
from services.admission.core.hypernode_rules import validate_hypernode
from services.admission.core.implicit_podgroup import GROUP_NAME, podgroup_for_pod
from services.admission.core.job_rules import validate_job
from services.admission.core.job_update import validate_job_update
from services.admission.core.mutate import mutate_job, mutate_podgroup, mutate_queue
from services.admission.core.pod_rules import validate_pod
from services.admission.core.podgroup_rules import validate_podgroup
from services.admission.core.priority_rules import validate_priority_class
from services.admission.core.queue_hierarchy import validate_queue_hierarchy
from services.admission.core.queue_rules import validate_queue_spec
from services.admission.core.workload_rules import validate_cronjob, validate_jobflow, validate_jobtemplate


@dataclass(frozen=True, slots=True)
class Admitted:
    """The defaulted object and every problem found; `podgroup` is the PodGroup a plain pod gets."""

    object: ApiObject
    errors: tuple[FieldError, ...] = ()
    podgroup: PodGroup | None = None


def describe(obj: ApiObject) -> str:
    """How a document without a file is named in errors, e.g. "Job default/train" or "Queue research"."""
    return f"{obj.kind} {obj.meta.key}"


def validate_meta(obj: ApiObject, document: str) -> list[FieldError]:
    errors = []
    problem = dns_subdomain_problem(obj.meta.name)
    if problem:
        errors.append(FieldError(document, "metadata.name", f"invalid name: {problem}"))
    if obj.kind not in CLUSTER_SCOPED:
        problem = dns_label_problem(obj.meta.namespace)
        if problem:
            errors.append(FieldError(document, "metadata.namespace", f"invalid namespace: {problem}"))
    errors.extend(
        FieldError(document, path, problem)
        for path, problem in metadata_problems(obj.meta.labels, obj.meta.annotations)
    )
    return errors


def admit(obj: ApiObject, context: ClusterContext, document: str, old: ApiObject | None = None) -> Admitted:
    """`old` is the stored object when `obj` replaces it (an update), None for a create."""
    errors = validate_meta(obj, document)
    errors += sim_annotation_errors(obj, document)  # lahar's simulation knobs, on any kind and its templates
    podgroup = None
    if isinstance(obj, Job):
        obj = mutate_job(obj, context.scheduler_names)
        if isinstance(old, Job):
            errors += validate_job_update(old, obj, document)
            errors += validate_job(obj, context, document, check_queue=False)
        else:
            errors += validate_job(obj, context, document)
    elif isinstance(obj, Queue):
        obj = mutate_queue(obj)
        errors += validate_queue_spec(obj, context, document)
        errors += validate_queue_hierarchy(obj, old if isinstance(old, Queue) else None, context, document)
    elif isinstance(obj, PodGroup):
        obj = mutate_podgroup(obj, context)
        annotations = frozen_map({**obj.meta.annotations, OWNER: SUBMITTED})
        obj = replace(obj, meta=replace(obj.meta, annotations=annotations))
        errors += validate_podgroup(obj, context, document)
    elif isinstance(obj, Pod):
        errors += validate_pod(obj, context, document)
        podgroup = podgroup_for_pod(obj, context.scheduler_names)
        if podgroup is not None:
            podgroup = mutate_podgroup(podgroup, context)
            annotations = frozen_map({**obj.meta.annotations, GROUP_NAME: podgroup.meta.name})
            obj = replace(obj, meta=replace(obj.meta, annotations=annotations))
    elif isinstance(obj, HyperNode):
        errors += validate_hypernode(obj, document)
    elif isinstance(obj, PriorityClass):
        errors += validate_priority_class(
            obj, context, document, old if isinstance(old, PriorityClass) else None
        )
    elif isinstance(obj, Command):
        errors += validate_command(obj, context, document)
    elif isinstance(obj, CronJob):
        errors += validate_cronjob(obj, context, document)
    elif isinstance(obj, JobTemplate):
        errors += validate_jobtemplate(obj, context, document)
    elif isinstance(obj, JobFlow):
        errors += validate_jobflow(obj, document)
    return Admitted(obj, tuple(errors), podgroup)


def context_from_objects(
    objects: Iterable[ApiObject], *, scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)
) -> ClusterContext:
    """A context holding `objects` as the current state, as admission would have stored them (queues
    defaulted), plus the implicit root and default queues unless the objects define them."""
    queues = {q.meta.name: q for q in implicit_queues()}
    classes: dict[str, PriorityClass] = {}
    jobs: dict[str, Job] = {}
    hypernodes: dict[str, HyperNode] = {}
    pods: dict[str, Pod] = {}
    podgroups: dict[str, PodGroup] = {}
    workloads: dict[str, dict[str, ApiObject]] = {"CronJob": {}, "JobTemplate": {}, "JobFlow": {}}
    for obj in objects:
        if isinstance(obj, Queue):
            queues[obj.meta.name] = mutate_queue(obj)
        elif isinstance(obj, PriorityClass):
            classes[obj.meta.name] = obj
        elif isinstance(obj, Job):
            jobs[obj.meta.key] = obj
        elif isinstance(obj, HyperNode):
            hypernodes[obj.meta.name] = obj
        elif isinstance(obj, Pod):
            pods[obj.meta.key] = obj
        elif isinstance(obj, PodGroup):
            podgroups[obj.meta.key] = obj
        elif obj.kind in workloads:
            workloads[obj.kind][obj.meta.key] = obj
    return ClusterContext(
        queues=frozen_map(queues),
        priority_classes=frozen_map(classes),
        jobs=frozen_map(jobs),
        hypernodes=frozen_map(hypernodes),
        plain_pods=frozen_map(pods),
        podgroups=frozen_map(podgroups),
        scheduler_names=scheduler_names,
        cronjobs=frozen_map(workloads["CronJob"]),
        jobtemplates=frozen_map(workloads["JobTemplate"]),
        jobflows=frozen_map(workloads["JobFlow"]),
    )
