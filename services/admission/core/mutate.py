"""Volcano's mutating webhooks (jobs, queues, podgroups): the defaults an accepted object is stored with.

Job defaulting builds on the job-controller's `default_job` (queue, scheduler, maxRetry, task names and
minAvailable) so both services agree by construction, and adds what only the webhook does: the DNS policy
of host-network pods and the plugins the distributed-framework plugins depend on. Volcano mutates on CREATE
only; lahar also mutates the object of an update, because an update here replaces the whole spec (there is
no server-side merge that would keep the defaults stored at creation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from contracts.job_shape import default_job
from contracts.objects import Job, PodGroup, Queue, TaskSpec, frozen_map
from services.admission.core.context import DEFAULT_QUEUE, DEFAULT_SCHEDULER, ClusterContext

HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
# the distributed-framework plugins resolve peers through the svc plugin's hosts; mpi also needs ssh
NEEDS_SVC = ("tensorflow", "mpi", "pytorch", "ray")
NEEDS_SSH = ("mpi",)


def mutate_job(job: Job, scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)) -> Job:
    job = default_job(job, scheduler_names[0] if scheduler_names else DEFAULT_SCHEDULER)
    return replace(job, tasks=tuple(_host_network_dns(t) for t in job.tasks), plugins=_plugins(job))


def _host_network_dns(task: TaskSpec) -> TaskSpec:
    spec = task.template.spec
    if not spec.host_network or spec.dns_policy:
        return task
    # a host-network pod keeps cluster DNS only with this policy
    spec = replace(spec, dns_policy="ClusterFirstWithHostNet")
    return replace(task, template=replace(task.template, spec=spec))


def _plugins(job: Job) -> Mapping[str, tuple[str, ...]]:
    plugins = dict(job.plugins)
    if any(name in plugins for name in NEEDS_SVC):
        plugins.setdefault("svc", ())
    if any(name in plugins for name in NEEDS_SSH):
        plugins.setdefault("ssh", ())
    return frozen_map(plugins) if plugins != dict(job.plugins) else job.plugins


def mutate_queue(queue: Queue) -> Queue:
    annotations = dict(queue.meta.annotations)
    hierarchy = annotations.get(HIERARCHY, "")
    weights = annotations.get(HIERARCHY_WEIGHTS, "")
    meta = queue.meta
    if hierarchy and weights and not (hierarchy == "root" or hierarchy.startswith("root/")):
        # hdrf paths are rooted at the root queue, whose weight is 1
        annotations[HIERARCHY] = f"root/{hierarchy}"
        annotations[HIERARCHY_WEIGHTS] = f"1/{weights}"
        meta = replace(meta, annotations=frozen_map(annotations))
    return replace(
        queue,
        meta=meta,
        reclaimable=True if queue.reclaimable is None else queue.reclaimable,
        weight=queue.weight or 1,
    )


def mutate_podgroup(podgroup: PodGroup, context: ClusterContext) -> PodGroup:
    """A PodGroup left in the default queue goes to its namespace's default queue, if it has one."""
    queue = podgroup.queue or DEFAULT_QUEUE
    if queue == DEFAULT_QUEUE:
        queue = context.namespace_queues.get(podgroup.meta.namespace, DEFAULT_QUEUE)
    return replace(podgroup, queue=queue) if queue != podgroup.queue else podgroup
