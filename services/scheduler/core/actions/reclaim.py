"""reclaim: starving jobs take back resources from other queues (Volcano's reclaim, made transactional
and minimal).

Preemptors are jobs whose PodGroup left Pending, that pass JobValid, whose queue exists and that are
starving. Queues go in queue order, an overused queue sits out. Each starving job of the queue (job order)
gets one statement; its pending tasks (task order), while the job is still starving, reclaim unless
`preemptionPolicy: Never` or the queue may not grow by the task (Preemptive) or a pre-predicate fails.

A reclaiming task looks at the nodes that eviction could fix, in the order the feasibility search found
them (Volcano does not score nodes here). On a node the candidates are Running (not merely Bound)
preemptable pods of jobs in other queues that are reclaimable, past their cool-down
(`volcano.sh/cooldown-time`), and that the plugins' Reclaimable answer allows. The victims are the
cheapest irreducible set that makes the task fit the node once they are gone (resources, a pod slot,
predicates: victims.py); of up to MAX_CANDIDATES nodes that can make room, the one whose victims cost
least wins, and the task is pipelined there. The job's statement is committed only if the job is
pipelined: its evictions and the room reserved for its pods are then one plan, which the binder commits
all or nothing; otherwise nothing is evicted. Every decision is written on the reclaimer's PodGroup
(explain.py).

No reclaim cycles: a queue reclaims only while it may grow within its deserved share (Preemptive) and
only from queues the fairness plugins find above theirs (Reclaimable), so the victims' queue cannot take
the room back: it would have to be under its share while the reclaimer's is over it.

A hard network-topology job (Volcano 1.15) chooses its victims inside one HyperNode of its allowed tier
where the whole gang then fits (domain_eviction.py); a partitioned job (subGroupPolicy) only where each
partition it needs fits whole inside one HyperNode of its tier (partition_eviction.py).

`predicateErrorCacheEnable` is accepted and has no effect (feasibility is computed for all nodes at once).
Deviations from Volcano, on purpose (docs/deviations.md): Volcano evicts in victim order while the task
does not fit and takes the first node that works, and checks neither pod slots nor predicates after.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from contracts.evictions import RECLAIM
from services.scheduler.core.actions.common import (
    eligible_queue,
    eviction_candidates,
    fits_once_released,
    in_cooldown,
    preemption_never,
)
from services.scheduler.core.actions.domain_eviction import hard_topology
from services.scheduler.core.actions.explain import Attempts, record
from services.scheduler.core.actions.partition_eviction import evict_within_domains, is_partitioned
from services.scheduler.core.actions.victims import NOTHING_TO_EVICT, VictimSearch
from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import TaskInfo, TaskStatus

REASON = RECLAIM
MAX_CANDIDATES = 100  # nodes that can make room, of which the cheapest is taken
NOT_RECLAIMABLE = "only pods of queues that are not reclaimable"
COOLING_DOWN = "only pods still in their cool-down (volcano.sh/cooldown-time)"


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
                if hard_topology(job) or is_partitioned(job):
                    self.reclaim_in_one_domain(ssn, queue, job, tasks[job.uid])
                    continue
                stmt = ssn.statement()
                attempts = Attempts(REASON)
                pending = tasks[job.uid]
                while pending and ssn.job_starving_fn(job):
                    task = pending.pop()
                    why = _may_not_reclaim(ssn, queue, task)
                    if why:
                        attempts.no_room(task, why)
                        continue
                    self.reclaim_for_task(ssn, stmt, task, job, attempts)
                committed = ssn.job_pipelined_fn(job)
                if committed:
                    stmt.commit()
                else:
                    stmt.discard()
                record(ssn, job, attempts, committed=committed)

    def reclaim_in_one_domain(
        self, ssn: Session, queue: QueueInfo, job: JobInfo, pending: PriorityQueue[TaskInfo]
    ) -> None:
        """A hard network-topology job: victims inside one HyperNode where the whole gang then fits; a
        partitioned one: each partition it needs inside one HyperNode of its tier."""

        def place(
            stmt: Statement, task: TaskInfo, allowed: np.ndarray | None, where: str, attempts: Attempts
        ) -> None:
            why = _may_not_reclaim(ssn, queue, task)
            if why:
                attempts.no_room(task, why)
                return
            self.reclaim_for_task(ssn, stmt, task, job, attempts, allowed=allowed, where=where)

        evict_within_domains(ssn, job, pending, REASON, place)

    @staticmethod
    def reclaim_for_task(
        ssn: Session,
        stmt: Statement,
        task: TaskInfo,
        job: JobInfo,
        attempts: Attempts,
        *,
        allowed: np.ndarray | None = None,
        where: str = "",
    ) -> bool:
        fit = eviction_candidates(ssn, task, allowed)
        if not len(fit.candidates):
            attempts.no_room(task, fit.reasons)
            return False
        now = ssn.now

        def reclaimable_queue(victim: TaskInfo) -> bool:
            queue = ssn.queues.get(ssn.jobs[victim.job].queue)
            return queue is not None and queue.reclaimable

        search = VictimSearch(
            ssn,
            task,
            [
                (NOTHING_TO_EVICT, lambda victim: _other_queue(ssn, victim, job)),
                (NOT_RECLAIMABLE, reclaimable_queue),
                (COOLING_DOWN, lambda victim: not in_cooldown(victim, now)),
            ],
            "reclaimable",
            lambda node: fits_once_released(ssn, task, node),
            f"{REASON}: for {task.key} (job {job.uid}, queue {job.queue}){where}",
        )
        choice = search.best((int(node) for node in fit.candidates), MAX_CANDIDATES)
        return search.settle(choice, stmt, attempts)


def _may_not_reclaim(ssn: Session, queue: QueueInfo, task: TaskInfo) -> str:
    """Why the task may not reclaim at all ("" when it may)."""
    if preemption_never(ssn, task):
        return "its preemptionPolicy is Never"
    if not ssn.preemptive_fn(queue, task):
        return f"queue {queue.name} may not grow by it (it would pass its deserved share)"
    return ssn.pre_predicate_fn(task) or ""


def _other_queue(ssn: Session, task: TaskInfo, reclaimer: JobInfo) -> bool:
    """A running preemptable pod of a job in another queue."""
    if task.status != TaskStatus.RUNNING or not task.preemptable:
        return False
    job = ssn.jobs.get(task.job)
    return job is not None and job.queue != reclaimer.queue
