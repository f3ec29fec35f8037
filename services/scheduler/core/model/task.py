"""A pod as the scheduler sees it in one session: its request, its status in Volcano's task lattice and
where it is placed."""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING

import numpy as np

from contracts.job_shape import TASK_SPEC
from contracts.objects import Pod
from contracts.parse_fields import duration_seconds
from contracts.resources import Resources

if TYPE_CHECKING:
    from services.scheduler.core.model.facts import TaskFacts

TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
COOLDOWN_TIME_KEY = "volcano.sh/cooldown-time"

_INDEX_SUFFIX = re.compile(r"-(\d+)$")


class TaskStatus(enum.IntEnum):
    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 3
    BINDING = 4
    BOUND = 5
    RUNNING = 6
    RELEASING = 7
    SUCCEEDED = 8
    FAILED = 9
    UNKNOWN = 10


ALLOCATED_STATUSES = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
SCHEDULED_STATUSES = frozenset(
    {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED}
)
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})


def status_of_pod(pod: Pod) -> TaskStatus:
    """Volcano's getTaskStatus: derive the task status from the pod phase and placement."""
    phase = pod.status.phase
    if phase == "Running":
        return TaskStatus.RELEASING if pod.meta.deletion_timestamp is not None else TaskStatus.RUNNING
    if phase == "Pending":
        if pod.meta.deletion_timestamp is not None:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if pod.spec.node_name else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def pod_role(pod: Pod) -> str:
    return pod.meta.annotations.get(TASK_SPEC) or pod.meta.labels.get(TASK_SPEC, "")


def pod_index(pod: Pod) -> int:
    """The replica index parsed from the `<job>-<task>-<index>` name suffix; -1 when there is none."""
    match = _INDEX_SUFFIX.search(pod.meta.name)
    return int(match.group(1)) if match else -1


def pod_preemptable(pod: Pod, default: bool = True) -> bool:
    """Annotation first, then label, default true (Volcano's GetPodPreemptable)."""
    value = pod.meta.annotations.get(PREEMPTABLE_KEY)
    if value is None:
        value = pod.meta.labels.get(PREEMPTABLE_KEY)
    if value is None:
        return default
    return value.lower() == "true"


def pod_cooldown_s(pod: Pod) -> float | None:
    """Volcano's cdp cool-down (`volcano.sh/cooldown-time`, a Go duration; label first, then annotation):
    how long after it started a running pod may not be preempted or reclaimed. None when unset, or
    malformed or not positive, which Volcano also reads as no protection."""
    value = pod.meta.labels.get(COOLDOWN_TIME_KEY)
    if value is None:
        value = pod.meta.annotations.get(COOLDOWN_TIME_KEY)
    if value is None:
        return None
    try:
        seconds = duration_seconds(value)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


class TaskInfo:
    """Mutable per-session state of one pod. Identity fields never change; `status`, `node` and
    `node_index` move as the session's Statement allocates, pipelines and evicts."""

    __slots__ = (
        "best_effort",
        "cooldown",
        "creation_timestamp",
        "index",
        "init_resreq",
        "init_vector",
        "job",
        "key",
        "name",
        "namespace",
        "node",
        "node_index",
        "pod",
        "preemptable",
        "priority",
        "requested_columns",
        "resreq",
        "role",
        "signature",
        "status",
        "uid",
        "vector",
    )

    def __init__(
        self,
        facts: TaskFacts,
        job: str,
        priority: int,
        vector: np.ndarray,
        requested_columns: np.ndarray,
    ) -> None:
        """A task from its pod's facts (`model/facts.py`): `priority` is the pod's priority as the session
        resolves it (priority class, job), which a task-priority annotation overrides."""
        self.pod = facts.pod
        self.uid = facts.uid
        self.key = facts.key
        self.name = facts.name
        self.namespace = facts.namespace
        self.job = job
        self.role = facts.role
        self.index = facts.index
        self.creation_timestamp = facts.creation_timestamp
        task_priority = facts.task_priority
        self.priority = priority if task_priority is None else task_priority
        self.resreq: Resources = facts.requests
        self.init_resreq: Resources = facts.requests
        self.vector = vector
        # effective and init requests coincide once sidecars and init containers are folded in
        self.init_vector = vector
        self.requested_columns = requested_columns
        self.best_effort = facts.best_effort
        self.preemptable = facts.preemptable
        self.cooldown = facts.cooldown
        self.status = facts.status
        self.node = facts.node
        self.node_index = -1
        self.signature = facts.signature

    def __repr__(self) -> str:
        return f"Task({self.key} {self.status.name} node={self.node or '-'})"
