"""reclaim: starving jobs take back resources from other queues (Volcano's reclaim).

Preemptors are jobs whose PodGroup left Pending, that pass JobValid, whose queue exists and that are
starving. Queues go in queue order, an overused queue sits out. Each starving job of the queue (job order)
gets one statement; its pending tasks (task order), while the job is still starving, reclaim unless
`preemptionPolicy: Never` or the queue may not grow by the task (Preemptive) or a pre-predicate fails.

A reclaiming task walks the nodes that eviction could fix, in the order the feasibility search found them
(Volcano does not score nodes here). On a node the candidates are Running (not merely Bound) preemptable
tasks of jobs in other queues that are reclaimable; the plugins' Reclaimable answer gives the victims. If
the victims could not make room the node is skipped; otherwise victims are evicted on a per-node trial
statement in victim order while the task does not fit future idle. If it then fits, the task is pipelined
there and the trial merged into the job's statement; else the trial is undone and the next node tried.
The job's statement is committed only if the job is pipelined.

`predicateErrorCacheEnable` is accepted and has no effect (feasibility is computed for all nodes at once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from contracts.evictions import RECLAIM
from services.scheduler.core.actions.common import (
    eligible_queue,
    eviction_candidates,
    preemption_never,
    victims_cover,
)
from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.placement import fits_future_idle
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import TaskInfo, TaskStatus

REASON = RECLAIM


class ReclaimAction(Action):
    name = "reclaim"
    arguments_spec: ClassVar[Mapping[str, type]] = {"predicateErrorCacheEnable": bool}

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        seen: set[str] = set()
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.owned_jobs.values():
            queue = eligible_queue(ssn, job)
            if queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if ssn.job_starving_fn(job):
                preemptors.setdefault(queue.name, PriorityQueue(ssn.job_order_fn)).push(job)
                tasks[job.uid] = PriorityQueue(ssn.task_order_fn, job.pending_tasks())

        while queues:
            queue = queues.pop()
            if ssn.overused_fn(queue):
                continue
            jobs = preemptors.get(queue.name)
            while jobs:
                job = jobs.pop()
                stmt = ssn.statement()
                pending = tasks[job.uid]
                while pending and ssn.job_starving_fn(job):
                    task = pending.pop()
                    if preemption_never(ssn, task) or not ssn.preemptive_fn(queue, task):
                        continue
                    if ssn.pre_predicate_fn(task):
                        continue
                    self.reclaim_for_task(ssn, stmt, task, job)
                if ssn.job_pipelined_fn(job):
                    stmt.commit()
                else:
                    stmt.discard()

    @staticmethod
    def reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo) -> None:
        for node in eviction_candidates(ssn, task):
            node = int(node)
            reclaimees = [t for t in ssn.nodes.tasks[node].values() if _reclaimable(ssn, t, job)]
            if not reclaimees:
                continue
            victims = ssn.reclaimable_fn(task, reclaimees)
            if not victims_cover(ssn, task, node, victims):
                continue
            ordered = PriorityQueue(ssn.victim_less(task), victims)
            trial = ssn.statement()
            while ordered and not fits_future_idle(ssn, task, node):
                trial.evict(ordered.pop(), REASON)
            if not fits_future_idle(ssn, task, node):
                trial.discard()
                continue
            trial.pipeline(task, node)
            stmt.merge(trial)
            return


def _reclaimable(ssn: Session, task: TaskInfo, reclaimer: JobInfo) -> bool:
    if task.status != TaskStatus.RUNNING or not task.preemptable:
        return False
    job = ssn.jobs.get(task.job)
    if job is None or job.queue == reclaimer.queue:
        return False
    queue = ssn.queues.get(job.queue)
    return queue is not None and queue.reclaimable
