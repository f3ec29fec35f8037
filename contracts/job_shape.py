"""What a Volcano Job's pods and PodGroup are named and labelled, and the defaults a Job gets: rules that
admission (its mutation), the job-controller (its expansion), the node agent (the job plugins' pod
environment) and the tools share, so they live here rather than in any one service.

Naming: pods are `<job>-<task>-<index>`; the PodGroup is named after the job itself (see
services/job_controller/core/expand.py for why lahar drops Volcano's UID suffix).
"""

from __future__ import annotations

from dataclasses import replace

from contracts.objects import Job

GROUP_NAME = "scheduling.k8s.io/group-name"
# a pod's queue when it names one (Volcano's annotation on plain pods), and the queue of those that do not
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
DEFAULT_QUEUE = "default"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_VERSION = "volcano.sh/job-version"
JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
PREEMPTABLE = "volcano.sh/preemptable"
# which partition of its task a pod belongs to (a task with a partitionPolicy): index // partitionSize
PARTITION_ID = "volcano.sh/partition-id"
# the pod's generation: how many pods of this name the job had before (also the uid's suffix)
POD_GENERATION = "lahar.dev/pod-generation"
# annotations on the Job that its pods inherit (simulation knobs and Volcano's preemptable flag)
INHERITED_PREFIXES = ("lahar.dev/", PREEMPTABLE)

DEFAULT_MAX_RETRY = 3


def default_job(job: Job, scheduler_name: str = "volcano") -> Job:
    """Volcano's job mutation webhook: queue, scheduler, maxRetry, task names and minAvailable."""
    tasks = []
    for i, task in enumerate(job.tasks):
        min_available = task.min_available
        if min_available is None:
            policy = task.partition_policy
            if policy is not None and policy.min_partitions > 0:
                min_available = policy.min_partitions * policy.partition_size
            else:
                min_available = task.replicas
        tasks.append(
            replace(
                task,
                name=task.name or f"default{i}",
                min_available=min_available,
                max_retry=task.max_retry or DEFAULT_MAX_RETRY,
            )
        )
    job_min = job.min_available
    if not job_min:
        job_min = sum(t.min_available or 0 for t in tasks)
    return replace(
        job,
        tasks=tuple(tasks),
        queue=job.queue or "default",
        scheduler_name=job.scheduler_name or scheduler_name,
        max_retry=job.max_retry or DEFAULT_MAX_RETRY,
        min_available=job_min,
    )


def pod_name(job_name: str, task_name: str, index: int) -> str:
    """The name `pod_for` gives replica `index` of a task, without building the pod."""
    return f"{job_name}-{task_name}-{index}"
