"""What admission knows about the cluster when it decides: a plain value the shell builds from the log.

Volcano's webhooks read listers (queues, priority classes); here the same facts arrive as one immutable
input, so every rule is a pure function of (object, context).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contracts.objects import (
    FROZEN_EMPTY,
    ApiObject,
    HyperNode,
    Job,
    ObjectMeta,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
)
from contracts.objects_flow import CronJob, JobFlow, JobTemplate
from contracts.resources import MILLI, PODS
from services.admission.core.tenants import Tenant

ROOT_QUEUE = "root"
DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER = "volcano"
MAX_QUEUE_DEPTH = 5  # Volcano's --max-queue-depth default
# Kubernetes creates these two classes itself; they exist in every cluster
BUILTIN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
# the namespaced kinds admission stores
NAMESPACED_KINDS = frozenset({"Job", "Pod", "PodGroup", "CronJob", "JobTemplate", "JobFlow"})


@dataclass(frozen=True, slots=True)
class ClusterContext:
    """Current queues (already defaulted), priority classes, jobs (by "namespace/name") and hypernodes;
    `plain_pods` and `podgroups` are the Pods and PodGroups users submitted without a Job (by
    "namespace/name"; `podgroups` also holds each plain pod's own group); `queue_pods` counts the pods
    a queue has allocated (bound or running), which Volcano reads from the queue's status.allocated;
    `namespace_queues` is each namespace's default queue (Volcano's namespace annotation
    scheduling.volcano.sh/queue-name)."""

    queues: Mapping[str, Queue] = FROZEN_EMPTY
    priority_classes: Mapping[str, PriorityClass] = FROZEN_EMPTY
    jobs: Mapping[str, Job] = FROZEN_EMPTY
    hypernodes: Mapping[str, HyperNode] = FROZEN_EMPTY
    plain_pods: Mapping[str, Pod] = FROZEN_EMPTY
    podgroups: Mapping[str, PodGroup] = FROZEN_EMPTY
    queue_pods: Mapping[str, int] = FROZEN_EMPTY
    namespace_queues: Mapping[str, str] = FROZEN_EMPTY
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)
    max_queue_depth: int = MAX_QUEUE_DEPTH
    tenants: Mapping[str, Tenant] = FROZEN_EMPTY  # by name (core/tenants.py; who may write where)
    cronjobs: Mapping[str, CronJob] = FROZEN_EMPTY  # by "namespace/name", like the next two
    jobtemplates: Mapping[str, JobTemplate] = FROZEN_EMPTY
    jobflows: Mapping[str, JobFlow] = FROZEN_EMPTY

    def children(self, name: str) -> list[Queue]:
        """Queues whose parent is `name`; a queue without a parent hangs under root, as Volcano's queue
        controller sets it."""
        return sorted(
            (
                q
                for q in self.queues.values()
                if q.meta.name not in (name, ROOT_QUEUE) and parent_of(q) == name
            ),
            key=lambda q: q.meta.name,
        )

    def allocated_pods(self, name: str) -> int:
        if name in self.queue_pods:
            return self.queue_pods[name]
        queue = self.queues.get(name)
        return queue.status.allocated.get(PODS, 0) // MILLI if queue is not None else 0

    def has_priority_class(self, name: str) -> bool:
        return name in self.priority_classes or name in BUILTIN_PRIORITY_CLASSES

    def existing(self, kind: str, namespace: str, name: str) -> ApiObject | None:
        """The current object of a kind admission stores, or None."""
        if kind in NAMESPACED_KINDS:
            tables: dict[str, Mapping[str, ApiObject]] = {
                "Job": self.jobs,
                "Pod": self.plain_pods,
                "PodGroup": self.podgroups,
                "CronJob": self.cronjobs,
                "JobTemplate": self.jobtemplates,
                "JobFlow": self.jobflows,
            }
            namespaced = tables[kind]
            return namespaced.get(f"{namespace}/{name}")
        cluster_scoped: dict[str, Mapping[str, ApiObject]] = {
            "Queue": self.queues,
            "PriorityClass": self.priority_classes,
            "HyperNode": self.hypernodes,
        }
        table = cluster_scoped.get(kind)
        return table.get(name) if table is not None else None


def parent_of(queue: Queue) -> str:
    if queue.meta.name == ROOT_QUEUE:
        return ""
    return queue.parent or ROOT_QUEUE


def implicit_queues() -> tuple[Queue, Queue]:
    """The queues every cluster has (Volcano's scheduler cache creates them): root, not reclaimable, and
    default under it."""
    root = Queue(meta=ObjectMeta(ROOT_QUEUE, "", uid=ROOT_QUEUE), reclaimable=False)
    default = Queue(meta=ObjectMeta(DEFAULT_QUEUE, "", uid=DEFAULT_QUEUE), reclaimable=True)
    return root, default
