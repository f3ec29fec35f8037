"""Turn an immutable ClusterSnapshot into a session's mutable working model (jobs, tasks, queues, nodes).

Every PodGroup becomes a job, owned or not, so that queue shares and victims are the whole cluster's. A
pod of a job this replica owns becomes a task. A pod of a job another replica owns is only counted on its
job when pending with a request (another replica places it), and also when it is on a node unless the
session may evict it (preempt or reclaim configured: `victims`); pods on nodes are charged to the node
table either way. So opening a session costs one task per pod this replica may place or evict, plus a
count per other pod, not a task per pod in the cluster.

Tasks are made from each pod's facts (`model/facts.py`), which the scheduler's view keeps between
sessions; only what depends on the session (priority, request vector, job) is resolved here.

A pending pod nominated to a node (room a preemption reserved for it, committed by the binder with the
evictions that free it) holds that room from the start of the session: as a Pipelined task on its node if
the session places its job, else as a charge on the node. So no other pod is placed into it, and the
allocate action binds it there once the room is free (actions/reservations.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from contracts.job_shape import QUEUE_NAME_ANNOTATION
from contracts.objects import ObjectMeta, Pod, PodGroup, PriorityClass
from contracts.resources import Resources
from services.scheduler.core.model.facts import TaskFacts
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.nodes import NodeTable
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.resource_index import ResourceIndex
from services.scheduler.core.model.task import TaskInfo, TaskStatus
from services.scheduler.core.snapshot import ClusterSnapshot

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
    implicit: set[str] = field(default_factory=set)  # keys of the implicit PodGroups of plain pods
    reserved: set[str] = field(default_factory=set)  # keys of the modelled jobs holding reserved room


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


def build_model(snapshot: ClusterSnapshot, owns: Owns | None = None, *, victims: bool = True) -> WorkingModel:
    """`victims`: whether pods of other replicas' jobs on nodes must be tasks (a preempt or reclaim action
    may evict them); without, they are only counted on their job and charged to their node."""
    classes = {pc.meta.name: pc for pc in snapshot.priority_classes}
    default_priority = _default_priority(classes)

    podgroups: dict[str, PodGroup] = {pg.meta.key: pg for pg in snapshot.podgroups}
    grouped: list[tuple[TaskFacts, str]] = []
    implicit_keys: set[str] = set()
    for facts in snapshot.facts():
        key = facts.group
        if not key and not facts.node:
            implicit = _implicit_podgroup(facts.pod)
            key = implicit.meta.key
            if key not in podgroups:
                podgroups[key] = implicit
                implicit_keys.add(key)
        # key "": a bound pod of no PodGroup, it only uses node capacity
        grouped.append((facts, key))

    # equal requests are one shared object (effective_requests is cached), so this is a short walk
    dims = {name for requests in {f.requests for f, _ in grouped} for name in requests}
    nodes = NodeTable(snapshot.nodes_as_base().widened(dims))
    resources = nodes.resources

    jobs: dict[str, JobInfo] = {}
    for key, pg in podgroups.items():
        priority = _priority_of(pg.priority_class_name, classes, default_priority)
        jobs[key] = JobInfo(pg, priority, owned=owns is None or owns(key))

    model = WorkingModel(resources, nodes, jobs, {}, classes, default_priority, implicit=implicit_keys)
    # tasks with equal requests share one read-only vector
    vectors: dict[Resources, tuple[np.ndarray, np.ndarray]] = {}
    charges = _Charges()
    node_index = nodes.index
    for facts, key in grouped:
        job = jobs.get(key) if key else None
        requests = facts.requests
        modelled = job is None or job.owned
        if not modelled and facts.waits and not (facts.best_effort and victims):
            # (a best-effort one stays a task where victims are: the gang plugin counts it as placed)
            job.add_unplaced(requests)  # type: ignore[union-attr]
            row = node_index.get(facts.nominated, -1) if facts.nominated else -1
            if row >= 0:
                nodes.reserve(row, resources.vector(requests))
            continue
        node = facts.node
        row = -1
        if node:
            found = node_index.get(node)
            if found is None:
                model.skipped_pods.append(f"{facts.key}: bound to unknown node {node}")
                continue
            row = found
        shared = vectors.get(requests)
        if shared is None:
            vector = resources.vector(requests)
            shared = vectors[requests] = (vector, np.flatnonzero(vector > 0))
        vector, columns = shared
        holds = row >= 0 and facts.status not in _FINISHED
        if holds:
            charges.add(row, vector, releasing=facts.status is TaskStatus.RELEASING)
        if not modelled and not victims:
            job.add_counted(requests, facts.role, facts.status)  # type: ignore[union-attr]
            continue
        if job is None and not victims and not key:
            continue  # a bound pod of no PodGroup: charged to its node, never moved by this session
        pod_priority = facts.pod_priority
        if pod_priority is None:
            fallback = job.priority if job is not None else default_priority
            pod_priority = _priority_of(facts.pod.spec.priority_class_name, classes, fallback)
        task = TaskInfo(facts, key, pod_priority, vector, columns)
        if row >= 0:
            task.node_index = row
            if holds:
                nodes.register(row, task)
        elif facts.nominated and facts.waits and job is not None:
            _hold_reservation(model, task)
        if job is None:
            if key:
                model.skipped_pods.append(f"{task.key}: PodGroup {key} not found")
            continue
        job.add_task(task)
    charges.apply(nodes)

    model.queues = {q.meta.name: QueueInfo(q) for q in snapshot.queues}
    return model


_FINISHED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


def _hold_reservation(model: WorkingModel, task: TaskInfo) -> None:
    """A pending task nominated to a known node starts the session Pipelined there (its job not yet
    indexed: the caller adds it next)."""
    row = model.nodes.index.get(task.pod.status.nominated_node_name)
    if row is None:
        return  # the node is gone: the pod is pending like any other
    task.status = TaskStatus.PIPELINED
    task.node = model.nodes.names[row]
    task.node_index = row
    model.nodes.add_task(row, task)
    model.reserved.add(task.job)


class _Charges:
    """The pods on nodes, gathered to be charged to the node table in one go (`NodeTable.charge`)."""

    __slots__ = ("releasing", "running")

    def __init__(self) -> None:
        # (rows, vectors) of pods that hold their node normally, and of Releasing ones
        self.running: tuple[list[int], list[np.ndarray]] = ([], [])
        self.releasing: tuple[list[int], list[np.ndarray]] = ([], [])

    def add(self, row: int, vector: np.ndarray, *, releasing: bool) -> None:
        rows, vectors = self.releasing if releasing else self.running
        rows.append(row)
        vectors.append(vector)

    def apply(self, nodes: NodeTable) -> None:
        for (rows, vectors), releasing in ((self.running, False), (self.releasing, True)):
            if rows:
                nodes.charge(np.asarray(rows, dtype=np.intp), np.stack(vectors), releasing=releasing)
