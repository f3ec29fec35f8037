"""Turn an immutable ClusterSnapshot into a session's mutable working model (jobs, tasks, queues, nodes).

Every PodGroup becomes a job, owned or not, so that queue shares and victims are the whole cluster's. A
pod becomes a task unless it is a pending pod with a request in a job this replica does not own: such a
pod is only counted on its job (another replica places it), so opening a session costs one task per pod
that is on a node or that this replica may place, not one per pending pod in the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from contracts.objects import ObjectMeta, Pod, PodGroup, PriorityClass
from contracts.resources import Resources
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.nodes import NodeTable
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.resource_index import ResourceIndex
from services.scheduler.core.model.task import TaskInfo, TaskStatus
from services.scheduler.core.snapshot import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION, ClusterSnapshot

# which PodGroups (by key) this session places; None: every one
Owns = Callable[[str], bool]


@dataclass(slots=True)
class WorkingModel:
    resources: ResourceIndex
    nodes: NodeTable
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    priority_classes: dict[str, PriorityClass]
    default_priority: int
    skipped_pods: list[str] = field(default_factory=list)


def _default_priority(classes: dict[str, PriorityClass]) -> int:
    defaults = [pc.value for pc in classes.values() if pc.global_default]
    return max(defaults) if defaults else 0


def _priority_of(name: str, classes: dict[str, PriorityClass], default: int) -> int:
    pc = classes.get(name) if name else None
    return pc.value if pc is not None else default


def _implicit_podgroup(pod: Pod) -> PodGroup:
    """Volcano's podgroup controller gives a plain pod its own PodGroup of one member."""
    queue = pod.meta.annotations.get(QUEUE_NAME_ANNOTATION, "default")
    return PodGroup(
        meta=ObjectMeta(
            name=f"podgroup-{pod.meta.uid or pod.meta.name}",
            namespace=pod.meta.namespace,
            uid=f"podgroup-{pod.meta.uid or pod.meta.name}",
            annotations=pod.meta.annotations,
            creation_timestamp=pod.meta.creation_timestamp,
        ),
        min_member=1,
        queue=queue,
        priority_class_name=pod.spec.priority_class_name,
        min_resources=pod.spec.effective_requests(),
    )


def _only_counted(pod: Pod, requests: Resources) -> bool:
    """Whether a pod of another replica's job can be only counted: pending, unbound, asking for something.
    (Best-effort pods stay tasks: the gang plugin counts them as placed, also in victim jobs.)"""
    return (
        not pod.spec.node_name
        and pod.status.phase == "Pending"
        and pod.meta.deletion_timestamp is None
        and not requests.is_empty()
    )


def build_model(snapshot: ClusterSnapshot, owns: Owns | None = None) -> WorkingModel:
    classes = {pc.meta.name: pc for pc in snapshot.priority_classes}
    default_priority = _default_priority(classes)

    podgroups: dict[str, PodGroup] = {pg.meta.key: pg for pg in snapshot.podgroups}
    grouped: list[tuple[Pod, str, Resources]] = []
    for pod in snapshot.pods:
        group = pod.meta.annotations.get(GROUP_NAME_ANNOTATION, "")
        if group:
            key = f"{pod.meta.namespace}/{group}"
        elif pod.spec.node_name:
            key = ""  # a bound pod of no PodGroup: it only uses node capacity
        else:
            implicit = _implicit_podgroup(pod)
            podgroups.setdefault(implicit.meta.key, implicit)
            key = implicit.meta.key
        grouped.append((pod, key, pod.spec.effective_requests()))

    # equal requests are one shared object (effective_requests is cached), so this is a short walk
    dims = {name for requests in {r for _, _, r in grouped} for name in requests}
    nodes = NodeTable(snapshot.nodes_as_base().widened(dims))
    resources = nodes.resources

    jobs: dict[str, JobInfo] = {}
    for key, pg in podgroups.items():
        priority = _priority_of(pg.priority_class_name, classes, default_priority)
        jobs[key] = JobInfo(pg, priority, owned=owns is None or owns(key))

    model = WorkingModel(resources, nodes, jobs, {}, classes, default_priority)
    # tasks with equal requests share one read-only vector
    vectors: dict[Resources, tuple[np.ndarray, np.ndarray]] = {}
    for pod, key, requests in grouped:
        job = jobs.get(key) if key else None
        if job is not None and not job.owned and _only_counted(pod, requests):
            job.add_unplaced(requests)
            continue
        pod_priority = pod.spec.priority
        if pod_priority is None:
            fallback = job.priority if job is not None else default_priority
            pod_priority = _priority_of(pod.spec.priority_class_name, classes, fallback)
        shared = vectors.get(requests)
        if shared is None:
            vector = resources.vector(requests)
            shared = vectors[requests] = (vector, np.flatnonzero(vector > 0))
        vector, columns = shared
        task = TaskInfo(pod, key, pod_priority, vector, columns, requests)
        if task.node:
            index = nodes.index.get(task.node)
            if index is None:
                model.skipped_pods.append(f"{task.key}: bound to unknown node {task.node}")
                continue
            task.node_index = index
            if task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
                nodes.add_task(index, task)
        if job is None:
            if key:
                model.skipped_pods.append(f"{task.key}: PodGroup {key} not found")
            continue
        job.add_task(task)

    model.queues = {q.meta.name: QueueInfo(q) for q in snapshot.queues}
    return model
