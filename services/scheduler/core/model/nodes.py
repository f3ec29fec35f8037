"""All nodes of a session as columns of numpy arrays (Volcano's NodeInfo, vectorised).

Accounting follows Volcano's NodeInfo: a task placed normally takes from `idle` into `used`; a Releasing
task counts in `used` and `releasing`; a Pipelined task only in `pipelined`. The resources a new task may
wait for are `future_idle = idle + releasing - pipelined`. Pod slots follow the same rule: `pod_count`
counts every task on the node, `releasing_pods` the Releasing ones, whose slots come back once they stop.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from contracts.objects import Taint
from services.scheduler.core.model.node_base import NodeBase
from services.scheduler.core.model.task import TaskInfo, TaskStatus


class NodeTable:
    """A session's nodes: the static columns of a NodeBase (shared, read-only) and the accounting columns
    this session changes."""

    __slots__ = (
        "allocatable",
        "diverging",
        "future",
        "idle",
        "index",
        "labels",
        "max_pods",
        "names",
        "pipelined",
        "pod_count",
        "ready",
        "releasing",
        "releasing_pods",
        "resources",
        "taints",
        "tasks",
        "unschedulable",
        "used",
    )

    def __init__(self, base: NodeBase) -> None:
        self.resources = base.resources
        self.names: tuple[str, ...] = base.names
        self.index: Mapping[str, int] = base.index
        self.allocatable = base.allocatable
        self.max_pods = base.max_pods
        self.labels: tuple[Mapping[str, str], ...] = base.labels
        self.taints: tuple[tuple[Taint, ...], ...] = base.taints
        self.unschedulable = base.unschedulable
        self.ready = base.ready
        count, width = base.allocatable.shape
        self.used = np.zeros((count, width), dtype=np.int64)
        self.releasing = np.zeros((count, width), dtype=np.int64)
        self.pipelined = np.zeros((count, width), dtype=np.int64)
        self.idle = base.allocatable.copy()
        # idle + releasing - pipelined, kept incrementally because every fit check reads it
        self.future = base.allocatable.copy()
        # what makes `future` differ from `idle`: Pipelined and Releasing tasks, and reserved room
        self.diverging = 0
        self.pod_count = np.zeros(count, dtype=np.int64)
        self.releasing_pods = np.zeros(count, dtype=np.int64)
        self.tasks: list[dict[str, TaskInfo]] = [{} for _ in range(count)]

    def __len__(self) -> int:
        return len(self.names)

    def future_idle(self) -> np.ndarray:
        """Read-only by convention: the live array, not a copy."""
        return self.future

    def future_is_idle(self) -> bool:
        """No node has anything pipelined, reserved or releasing: its future idle is its idle, and a
        request that fits one fits the other."""
        return self.diverging == 0

    def future_idle_row(self, i: int) -> np.ndarray:
        row: np.ndarray = self.future[i]
        return row

    # --- accounting ---------------------------------------------------------------------------------
    def add_task(self, i: int, task: TaskInfo) -> None:
        vec = task.vector
        status = task.status
        if status == TaskStatus.PIPELINED:
            self.pipelined[i] += vec
            self.future[i] -= vec
            self.diverging += 1
        elif status == TaskStatus.RELEASING:
            self.releasing[i] += vec
            self.used[i] += vec
            self.idle[i] -= vec
            self.releasing_pods[i] += 1
            self.diverging += 1
        else:
            self.used[i] += vec
            self.idle[i] -= vec
            self.future[i] -= vec
        self.pod_count[i] += 1
        self.tasks[i][task.uid] = task

    def reserve(self, i: int, vec: np.ndarray) -> None:
        """Room on node i held for a pod another replica places (nominated there by a preemption): as a
        Pipelined task's, without a task."""
        self.pipelined[i] += vec
        self.future[i] -= vec
        self.pod_count[i] += 1
        self.diverging += 1

    def future_pods(self, i: int) -> int:
        """Pod slots taken on node i once its Releasing tasks have stopped."""
        return int(self.pod_count[i] - self.releasing_pods[i])

    def register(self, i: int, task: TaskInfo) -> None:
        """A task already charged (`charge`) is on node i: only listed, for victim searches."""
        self.tasks[i][task.uid] = task

    def charge(self, rows: np.ndarray, vectors: np.ndarray, *, releasing: bool = False) -> None:
        """Charge many placed pods at once, as `add_task` would one by one: pod k is on node rows[k] and
        asks for vectors[k] (running or bound, or Releasing). Opening a session charges every pod on a
        node this way, with one numpy call per column set instead of a few per pod."""
        if not len(rows):
            return
        np.add.at(self.used, rows, vectors)
        np.subtract.at(self.idle, rows, vectors)
        if releasing:
            np.add.at(self.releasing, rows, vectors)
            self.releasing_pods += np.bincount(rows, minlength=len(self.releasing_pods))
            self.diverging += len(rows)
        else:
            np.subtract.at(self.future, rows, vectors)
        self.pod_count += np.bincount(rows, minlength=len(self.pod_count))

    def remove_task(self, i: int, task: TaskInfo) -> None:
        vec = task.vector
        status = task.status
        if status == TaskStatus.PIPELINED:
            self.pipelined[i] -= vec
            self.future[i] += vec
            self.diverging -= 1
        elif status == TaskStatus.RELEASING:
            self.releasing[i] -= vec
            self.used[i] -= vec
            self.idle[i] += vec
            self.releasing_pods[i] -= 1
            self.diverging -= 1
        else:
            self.used[i] -= vec
            self.idle[i] += vec
            self.future[i] += vec
        self.pod_count[i] -= 1
        del self.tasks[i][task.uid]

    def total_allocatable(self) -> np.ndarray:
        total: np.ndarray = self.allocatable.sum(axis=0)
        return total

    def total_used(self) -> np.ndarray:
        total: np.ndarray = self.used.sum(axis=0)
        return total
