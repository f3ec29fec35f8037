"""Expand a Volcano Job into its PodGroup and Pods, as Volcano's job controller does.

Pure functions of the Job value. Naming: pods are `<job>-<task>-<index>`; the PodGroup is named after the
job itself (Volcano appends the job UID, `<job>-<uid>`, to survive delete/re-create races against the API
server; lahar's job-controller is the single writer of both objects on an ordered log, so the plain name is
unambiguous and is what users look for).
"""

from __future__ import annotations

from dataclasses import replace

from contracts.job_shape import (
    GROUP_NAME,
    INHERITED_PREFIXES,
    JOB_NAME,
    JOB_NAMESPACE,
    JOB_RETRY_COUNT,
    JOB_VERSION,
    PARTITION_ID,
    POD_GENERATION,
    QUEUE_NAME,
    TASK_INDEX,
    TASK_SPEC,
)
from contracts.kube_values import go_duration
from contracts.objects import (
    Job,
    LabelSelector,
    ObjectMeta,
    Pod,
    PodGroup,
    PodGroupStatus,
    PodSpec,
    PodStatus,
    PriorityClass,
    SubGroupPolicy,
    TaskSpec,
    frozen_map,
)
from contracts.pending import RUNNING_ESTIMATE
from contracts.resources import EMPTY, Resources


def _task_priority(task: TaskSpec, classes: dict[str, PriorityClass]) -> int:
    # only the task template's own class counts, as in Volcano (not the job's class its pods inherit)
    pc = classes.get(task.template.spec.priority_class_name)
    return pc.value if pc else 0


def min_resources(job: Job, classes: dict[str, PriorityClass] | None = None) -> Resources:
    """Volcano's calcPGMinResources: the requests of the first `minAvailable` pods, taking tasks by
    priority; when the job's minimum covers every task's minimum, each task's own minimum comes first."""
    classes = classes or {}
    tasks = sorted(job.tasks, key=lambda t: -_task_priority(t, classes))
    remaining = job.min_available or 0
    total = EMPTY
    counted = {t.name: 0 for t in tasks}
    if remaining >= sum(t.min_available or 0 for t in tasks):
        for task in tasks:
            take = min(task.min_available or 0, remaining)
            total = total + task.template.spec.effective_requests().times(take)
            counted[task.name] = take
            remaining -= take
    for task in tasks:
        take = min(task.replicas - counted[task.name], remaining)
        if take > 0:
            total = total + task.template.spec.effective_requests().times(take)
            remaining -= take
    return total


def podgroup_for(job: Job, classes: dict[str, PriorityClass] | None = None) -> PodGroup:
    meta = job.meta
    annotations = {k: v for k, v in meta.annotations.items() if k.startswith(INHERITED_PREFIXES)}
    if job.running_estimate is not None:
        # the scheduler reads how long the job's pods will run from its PodGroup (the starvation bound's
        # reservations: when the room they hold comes free)
        annotations[RUNNING_ESTIMATE] = go_duration(job.running_estimate)
    return PodGroup(
        meta=ObjectMeta(
            name=meta.name,
            namespace=meta.namespace,
            uid=f"{meta.uid or meta.key}-podgroup",
            annotations=frozen_map(annotations),
            creation_timestamp=meta.creation_timestamp,
        ),
        min_member=job.min_available or 0,
        min_task_member=frozen_map({t.name: t.min_available or 0 for t in job.tasks}),
        queue=job.queue,
        priority_class_name=job.priority_class_name,
        min_resources=min_resources(job, classes),
        network_topology=job.network_topology,
        sub_group_policy=sub_group_policies(job),
        status=PodGroupStatus(phase="Pending"),
    )


def sub_group_policies(job: Job) -> tuple[SubGroupPolicy, ...]:
    """Volcano's setPgSubGroupPolicy: one sub-group policy per partitioned task, in task order. Its pods
    are selected by their task label and split into sub-groups by their partition label; each sub-group
    is a gang of partitionSize pods placed within one HyperNode of the partition's networkTopology, and
    the job needs minPartitions of them."""
    return tuple(
        SubGroupPolicy(
            name=task.name,
            network_topology=task.partition_policy.network_topology,
            sub_group_size=task.partition_policy.partition_size,
            min_sub_groups=task.partition_policy.min_partitions,
            label_selector=LabelSelector(match_labels=frozen_map({TASK_SPEC: task.name})),
            match_label_keys=(PARTITION_ID,),
        )
        for task in job.tasks
        if task.partition_policy is not None
    )


def partition_id(task: TaskSpec, index: int) -> int | None:
    """The partition replica `index` of `task` belongs to (Volcano: index // partitionSize, 0 for a size
    that is not positive); None when the task is not partitioned."""
    policy = task.partition_policy
    if policy is None:
        return None
    return index // policy.partition_size if policy.partition_size > 0 else 0


def pod_for(
    job: Job,
    task: TaskSpec,
    index: int,
    *,
    created_at: float,
    generation: int = 0,
    retry_count: int = 0,
    version: int = 0,
) -> Pod:
    """The pod for replica `index` of `task` (Volcano's createJobPod). generation: the pod name's
    generation (its uid suffix); retry_count and version: the job's retryCount and status version when
    the pod is created (Volcano's job-retry-count and job-version annotations)."""
    meta = job.meta
    template = task.template
    name = f"{meta.name}-{task.name}-{index}"
    inherited = {k: v for k, v in meta.annotations.items() if k.startswith(INHERITED_PREFIXES)}
    annotations = {
        **inherited,
        **template.annotations,
        GROUP_NAME: meta.name,
        JOB_NAME: meta.name,
        QUEUE_NAME: job.queue,
        TASK_SPEC: task.name,
        TASK_INDEX: str(index),
        JOB_VERSION: str(version),
        JOB_RETRY_COUNT: str(retry_count),
        POD_GENERATION: str(generation),
    }
    labels = {
        **template.labels,
        JOB_NAME: meta.name,
        JOB_NAMESPACE: meta.namespace,
        QUEUE_NAME: job.queue,
        TASK_SPEC: task.name,
        TASK_INDEX: str(index),
    }
    partition = partition_id(task, index)
    if partition is not None:
        labels[PARTITION_ID] = str(partition)
    spec: PodSpec = template.spec
    spec = replace(
        spec,
        scheduler_name=job.scheduler_name,
        priority_class_name=spec.priority_class_name or job.priority_class_name,
        node_name="",
    )
    return Pod(
        meta=ObjectMeta(
            name=name,
            namespace=meta.namespace,
            uid=f"{meta.namespace}-{name}-{generation}",
            labels=frozen_map(labels),
            annotations=frozen_map(annotations),
            creation_timestamp=created_at,
        ),
        spec=spec,
        status=PodStatus(phase="Pending"),
    )
