"""Names one kind of object takes from another. A Job's PodGroup is named after the Job and its pods
`<job>-<task>-<index>`; plain Pods and PodGroups live in the same namespaces, and two objects must never
share one subject of the log. So a plain pod may not take a name a Job's pod has (or would have), nor
join a Job's PodGroup; a PodGroup may not take a Job's name; a Job may not claim the name of a plain
pod or PodGroup.
"""

from __future__ import annotations

from contracts.errors import FieldError
from contracts.objects import ApiObject, Job, Pod, PodGroup
from contracts.parse_fields import join_path
from services.admission.core.context import ClusterContext
from services.admission.core.implicit_podgroup import GROUP_NAME


def claim_errors(obj: ApiObject, context: ClusterContext, document: str) -> list[FieldError]:
    if isinstance(obj, Pod):
        return _pod_claims(obj, context, document)
    if isinstance(obj, PodGroup) and obj.meta.key in context.jobs:
        message = f"Job {obj.meta.key!r} has a PodGroup of this name; choose another name"
        return [FieldError(document, "metadata.name", message)]
    if isinstance(obj, Job):
        return _job_claims(obj, context, document)
    return []


def job_pod_slot(job: Job, pod_name: str) -> tuple[str, int] | None:
    """(task, index) when `pod_name` is the name of one of the job's pods."""
    prefix = f"{job.meta.name}-"
    if not pod_name.startswith(prefix):
        return None
    task_name, _, index = pod_name[len(prefix) :].rpartition("-")
    if not index.isdigit() or (len(index) > 1 and index.startswith("0")):
        return None
    task = next((t for t in job.tasks if t.name == task_name), None)
    return (task_name, int(index)) if task is not None and int(index) < task.replicas else None


def job_of_pod(namespace: str, pod_name: str, context: ClusterContext) -> Job | None:
    """The Job whose pod this name is, if any."""
    for job in context.jobs.values():
        if job.meta.namespace == namespace and job_pod_slot(job, pod_name) is not None:
            return job
    return None


def _pod_claims(pod: Pod, context: ClusterContext, document: str) -> list[FieldError]:
    errors = []
    job = job_of_pod(pod.meta.namespace, pod.meta.name, context)
    if job is not None:
        message = f"the name belongs to a pod of Job {job.meta.key!r}; choose another name"
        errors.append(FieldError(document, "metadata.name", message))
    group = pod.meta.annotations.get(GROUP_NAME, "")
    if group and f"{pod.meta.namespace}/{group}" in context.jobs:
        message = f"PodGroup {group!r} is Job {group!r}'s, whose pods the Job makes; submit them in the Job"
        errors.append(FieldError(document, join_path("metadata.annotations", GROUP_NAME), message))
    return errors


def _job_claims(job: Job, context: ClusterContext, document: str) -> list[FieldError]:
    errors = []
    if job.meta.key in context.podgroups:
        message = f"a PodGroup named {job.meta.name!r} exists, and a Job's PodGroup takes the Job's name"
        errors.append(FieldError(document, "metadata.name", message))
    for key, pod in sorted(context.plain_pods.items()):
        slot = job_pod_slot(job, pod.meta.name) if pod.meta.namespace == job.meta.namespace else None
        if slot is not None:
            task_index = next(i for i, t in enumerate(job.tasks) if t.name == slot[0])
            message = f"replica {slot[1]} would be named {pod.meta.name!r}, which Pod {key!r} has"
            errors.append(FieldError(document, f"spec.tasks[{task_index}].replicas", message))
    return errors
