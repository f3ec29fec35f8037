"""All nodes of a session as columns of numpy arrays (Volcano's NodeInfo, vectorised).

Accounting follows Volcano's NodeInfo: a task placed normally takes from `idle` into `used`; a Releasing
task counts in `used` and `releasing`; a Pipelined task only in `pipelined`. The resources a new task may
wait for are `future_idle = idle + releasing - pipelined`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from contracts.objects import Node, Taint
from contracts.resources import PODS
from services.scheduler.core.model.resource_index import ResourceIndex
from services.scheduler.core.model.task import TaskInfo, TaskStatus

DEFAULT_MAX_PODS = 110


class NodeTable:
    __slots__ = (
        "allocatable",
        "future",
        "idle",
        "index",
        "labels",
        "max_pods",
        "names",
        "nodes",
        "pipelined",
        "pod_count",
        "ready",
        "releasing",
        "resources",
        "taints",
        "tasks",
        "unschedulable",
        "used",
    )

    def __init__(self, nodes: Sequence[Node], resources: ResourceIndex) -> None:
        self.resources = resources
        self.nodes = tuple(nodes)
        self.names: list[str] = [n.meta.name for n in nodes]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        width = resources.width
        count = len(nodes)
        self.allocatable = np.zeros((count, width), dtype=np.int64)
        for i, node in enumerate(nodes):
            self.allocatable[i] = resources.vector(node.allocatable or node.capacity)
        self.used = np.zeros((count, width), dtype=np.int64)
        self.releasing = np.zeros((count, width), dtype=np.int64)
        self.pipelined = np.zeros((count, width), dtype=np.int64)
        self.idle = self.allocatable.copy()
        # idle + releasing - pipelined, kept incrementally because every fit check reads it
        self.future = self.allocatable.copy()
        self.pod_count = np.zeros(count, dtype=np.int64)
        self.max_pods = np.array(
            [(n.allocatable or n.capacity).get(PODS, DEFAULT_MAX_PODS * 1000) // 1000 for n in nodes],
            dtype=np.int64,
        )
        self.labels: list[Mapping[str, str]] = [n.meta.labels for n in nodes]
        self.taints: list[tuple[Taint, ...]] = [n.taints for n in nodes]
        self.unschedulable = np.array([n.unschedulable for n in nodes], dtype=bool)
        self.ready = np.array([n.ready for n in nodes], dtype=bool)
        self.tasks: list[dict[str, TaskInfo]] = [{} for _ in nodes]

    def __len__(self) -> int:
        return len(self.names)

    def future_idle(self) -> np.ndarray:
        """Read-only by convention: the live array, not a copy."""
        return self.future

    def future_idle_row(self, i: int) -> np.ndarray:
        return self.future[i]

    # --- accounting ---------------------------------------------------------------------------------
    def add_task(self, i: int, task: TaskInfo) -> None:
        vec = task.vector
        status = task.status
        if status == TaskStatus.PIPELINED:
            self.pipelined[i] += vec
            self.future[i] -= vec
        elif status == TaskStatus.RELEASING:
            self.releasing[i] += vec
            self.used[i] += vec
            self.idle[i] -= vec
        else:
            self.used[i] += vec
            self.idle[i] -= vec
            self.future[i] -= vec
        self.pod_count[i] += 1
        self.tasks[i][task.uid] = task

    def remove_task(self, i: int, task: TaskInfo) -> None:
        vec = task.vector
        status = task.status
        if status == TaskStatus.PIPELINED:
            self.pipelined[i] -= vec
            self.future[i] += vec
        elif status == TaskStatus.RELEASING:
            self.releasing[i] -= vec
            self.used[i] -= vec
            self.idle[i] += vec
        else:
            self.used[i] -= vec
            self.idle[i] += vec
            self.future[i] += vec
        self.pod_count[i] -= 1
        del self.tasks[i][task.uid]

    def total_allocatable(self) -> np.ndarray:
        return self.allocatable.sum(axis=0)

    def total_used(self) -> np.ndarray:
        return self.used.sum(axis=0)
