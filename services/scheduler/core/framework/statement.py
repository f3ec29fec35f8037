"""A Statement: the in-session transaction log of allocate / pipeline / evict operations.

Operations change the session immediately (node accounting, job task-status index, plugin shares), so the
next decision sees them. `commit()` turns them into a Plan value; `discard()` undoes them in reverse order.
Pipelined tasks get no bind. In a statement that evicts (preempt, reclaim) they are what the evictions
are for: commit records them as reservations, which the binder commits with the evictions, all or
nothing, and holds for them until they are bound. Elsewhere (a gang that allocate could only pipeline)
a pipelined task is a reservation of this session only and commit records nothing for it.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from contracts.evictions import eviction_cause
from contracts.plans import Bind, Eviction, Reservation
from services.scheduler.core.framework.plan import Plan
from services.scheduler.core.model.task import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session


class Op(enum.Enum):
    ALLOCATE = "allocate"
    PIPELINE = "pipeline"
    EVICT = "evict"


class Statement:
    __slots__ = ("_ops", "ssn")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self._ops: list[tuple[Op, TaskInfo, int, str, TaskStatus]] = []

    def __len__(self) -> int:
        return len(self._ops)

    def _place(self, task: TaskInfo, node_index: int, status: TaskStatus) -> None:
        ssn = self.ssn
        job = ssn.jobs[task.job]
        previous = task.status
        job.update_task_status(task, status)
        task.node = ssn.nodes.names[node_index]
        task.node_index = node_index
        ssn.nodes.add_task(node_index, task)
        ssn.fire_allocate(task)
        op = Op.ALLOCATE if status == TaskStatus.ALLOCATED else Op.PIPELINE
        self._ops.append((op, task, node_index, "", previous))

    def allocate(self, task: TaskInfo, node_index: int) -> None:
        self._place(task, node_index, TaskStatus.ALLOCATED)

    def pipeline(self, task: TaskInfo, node_index: int) -> None:
        self._place(task, node_index, TaskStatus.PIPELINED)

    def evict(self, task: TaskInfo, reason: str) -> None:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        previous = task.status
        ssn.nodes.remove_task(task.node_index, task)
        if job is not None:
            job.update_task_status(task, TaskStatus.RELEASING)
        else:
            task.status = TaskStatus.RELEASING
        ssn.nodes.add_task(task.node_index, task)
        ssn.fire_deallocate(task)
        self._ops.append((Op.EVICT, task, task.node_index, reason, previous))

    def operations(self) -> list[tuple[Op, TaskInfo, int]]:
        """The placements and evictions so far, in order (to replay a trial elsewhere)."""
        return [(op, task, node_index) for op, task, node_index, _, _ in self._ops]

    def journal(self) -> list[tuple[Op, TaskInfo, int, str]]:
        """The operations so far with their eviction reasons, for `replay` on another statement after
        this one is discarded (a trial that won among several)."""
        return [(op, task, node_index, reason) for op, task, node_index, reason, _ in self._ops]

    def replay(self, journal: list[tuple[Op, TaskInfo, int, str]]) -> None:
        for op, task, node_index, reason in journal:
            if op is Op.EVICT:
                self.evict(task, reason)
            elif op is Op.ALLOCATE:
                self.allocate(task, node_index)
            else:
                self.pipeline(task, node_index)

    def merge(self, other: Statement) -> None:
        """Adopt another statement's operations (a per-node trial statement that succeeded)."""
        self._ops.extend(other._ops)
        other._ops = []

    def discard(self) -> None:
        ssn = self.ssn
        for op, task, node_index, _, previous in reversed(self._ops):
            job = ssn.jobs.get(task.job)
            ssn.nodes.remove_task(node_index, task)
            if op is Op.EVICT:
                if job is not None:
                    job.update_task_status(task, previous)
                else:
                    task.status = previous
                ssn.nodes.add_task(node_index, task)
                ssn.fire_allocate(task)
            else:
                assert job is not None
                job.update_task_status(task, previous)
                ssn.fire_deallocate(task)  # handlers still see where the task was
                task.node = ""
                task.node_index = -1
        self._ops = []

    def commit(self) -> Plan:
        """Record the plan; allocated tasks become Binding (the binder makes them Bound)."""
        ssn = self.ssn
        binds: list[Bind] = []
        evictions: list[Eviction] = []
        pipelined: list[tuple[TaskInfo, str]] = []
        actor = next((task.job for op, task, *_ in self._ops if op is not Op.EVICT), "")
        for op, task, node_index, reason, _ in self._ops:
            node = ssn.nodes.names[node_index]
            if op is Op.ALLOCATE:
                job = ssn.jobs[task.job]
                job.update_task_status(task, TaskStatus.BINDING)
                binds.append(Bind(task.key, task.job, node))
            elif op is Op.EVICT:
                evictions.append(Eviction(task.key, task.job, node, reason))
            else:
                pipelined.append((task, node))
        self._ops = []
        reservations = _reservations(pipelined, evictions) if evictions else ()
        plan = Plan(tuple(binds), tuple(evictions), actor, reservations)
        if plan:
            ssn.plans.append(plan)
        return plan


def _reservations(
    pipelined: list[tuple[TaskInfo, str]], evictions: list[Eviction]
) -> tuple[Reservation, ...]:
    """The statement's pipelined tasks as reservations, each saying which of its evictions free its node."""
    cause = eviction_cause(evictions[0].reason)
    victims: dict[str, list[str]] = {}
    for eviction in evictions:
        victims.setdefault(eviction.node, []).append(eviction.task)
    out = []
    for task, node in pipelined:
        freed = victims.get(node)
        why = f"evicting {', '.join(freed)} on {node}" if freed else f"room already being freed on {node}"
        out.append(Reservation(task.key, task.job, node, f"{cause}: {why}"))
    return tuple(out)
