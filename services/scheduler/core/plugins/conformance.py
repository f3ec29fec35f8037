"""conformance: never evict cluster-critical pods (Volcano's conformance plugin).

Pods with priorityClassName system-cluster-critical or system-node-critical, and every pod in kube-system,
are removed from the victim candidates of both preempt and reclaim.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from services.scheduler.core.framework.plugin import Plugin

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.task import TaskInfo

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE = "kube-system"


def evictable(task: TaskInfo) -> bool:
    return (
        task.namespace != SYSTEM_NAMESPACE
        and task.pod.spec.priority_class_name not in CRITICAL_PRIORITY_CLASSES
    )


class ConformancePlugin(Plugin):
    name = "conformance"

    def preemptable(
        self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        return [t for t in preemptees if evictable(t)]

    def reclaimable(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        return [t for t in reclaimees if evictable(t)]
