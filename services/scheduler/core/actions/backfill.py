"""backfill: places BestEffort tasks (no resource request) that allocate skipped (Volcano's backfill).

Jobs whose PodGroup has left Pending and that pass JobValid contribute their pending BestEffort tasks, and
their pipelined BestEffort tasks after un-pipelining them (a reservation of nothing is pointless, the task
can simply be placed now). Tasks go in queue order, then job order, then task order; each is placed on the
best-scoring node that passes every predicate (the pod-count limit is then the only capacity that matters).
A partitioned job's BestEffort pods go a partition at a time, inside one HyperNode of the partition's
tier (backfill_partitions.py).

Each placement is an allocation; as in Volcano's `ssn.Allocate`, the moment the job is ready all of its
allocated tasks are dispatched (committed as binds). A job that is not ready keeps its BestEffort
allocations uncommitted until the session ends, exactly like a pipelined job in allocate.

`predicateErrorCacheEnable` is accepted for compatibility and has no effect: Volcano's backfill builds a
fresh predicate helper for every task, so its error cache never carries from one task to the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from contracts.plans import Bind
from services.scheduler.core.actions.backfill_partitions import backfill_partition
from services.scheduler.core.actions.common import eligible_queue
from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.placement import feasible_nodes, select_best_node
from services.scheduler.core.framework.plan import Plan
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.framework.stats import PREDICATE, SCORING
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import TaskInfo, TaskStatus


def unpipeline(ssn: Session, task: TaskInfo) -> None:
    """Volcano's Statement.UnPipeline: drop a pipelined task's reservation and make it Pending again. Not
    recorded in any statement (Volcano neither commits nor undoes it)."""
    ssn.nodes.remove_task(task.node_index, task)
    ssn.jobs[task.job].update_task_status(task, TaskStatus.PENDING)
    task.node = ""
    task.node_index = -1
    ssn.fire_deallocate(task)


def pick_up_tasks(ssn: Session) -> list[TaskInfo]:
    """BestEffort tasks to place, ordered queue -> job -> task."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    tasks_by_job: dict[str, list[TaskInfo]] = {}
    for job in ssn.owned_jobs.values():
        pending = [t for t in job.tasks_by_status[TaskStatus.PENDING].values() if t.best_effort]
        pipelined = [t for t in job.tasks_by_status[TaskStatus.PIPELINED].values() if t.best_effort]
        # cheap test first: most jobs have no BestEffort task, so JobValid is not worth asking
        if not pending and not pipelined:
            continue
        queue = eligible_queue(ssn, job)
        if queue is None:
            continue
        for task in pipelined:
            unpipeline(ssn, task)
        tasks_by_job[job.uid] = pending + pipelined
        if queue.name not in jobs_by_queue:
            jobs_by_queue[queue.name] = PriorityQueue(ssn.job_order_fn)
            queues.push(queue)
        jobs_by_queue[queue.name].push(job)

    ordered: list[TaskInfo] = []
    while queues:
        jobs = jobs_by_queue[queues.pop().name]
        while jobs:
            tasks = PriorityQueue(ssn.task_order_fn, tasks_by_job[jobs.pop().uid])
            while tasks:
                ordered.append(tasks.pop())
    return ordered


class BackfillAction(Action):
    name = "backfill"
    arguments_spec: ClassVar[Mapping[str, type]] = {"predicateErrorCacheEnable": bool}

    def execute(self, ssn: Session) -> None:
        statements: dict[str, Statement] = {}
        for task in pick_up_tasks(ssn):
            job = ssn.jobs[task.job]
            if task.status is not TaskStatus.PENDING:
                continue  # placed with the rest of its partition
            reason = ssn.pre_predicate_fn(task)
            if reason:
                job.record_fit_errors(task, {reason: 0})
                continue
            if job.podgroup.sub_group_policy:  # its partition's pods go together, inside one HyperNode
                stmt = statements.setdefault(job.uid, ssn.statement())
                if backfill_partition(ssn, job, task, stmt) and ssn.job_ready_fn(job):
                    stmt.commit()
                    self._dispatch_allocated(ssn, job)
                continue
            started = ssn.timer.tick()
            fit = feasible_nodes(ssn, task, check_resources=False)
            ssn.timer.stage(PREDICATE, started)
            if not len(fit.candidates):
                job.record_fit_errors(task, fit.reasons)
                continue
            stmt = statements.setdefault(job.uid, ssn.statement())
            started = ssn.timer.tick()
            node = select_best_node(ssn, task, fit.candidates)
            ssn.timer.stage(SCORING, started)
            stmt.allocate(task, node)
            if ssn.job_ready_fn(job):
                stmt.commit()
                self._dispatch_allocated(ssn, job)

    @staticmethod
    def _dispatch_allocated(ssn: Session, job: JobInfo) -> None:
        """`ssn.Allocate` dispatches every Allocated task of a ready job, including any that an earlier
        action placed on a statement it left open (a pipelined gang); bind those too."""
        leftovers = list(job.tasks_by_status[TaskStatus.ALLOCATED].values())
        if not leftovers:
            return
        for task in leftovers:
            job.update_task_status(task, TaskStatus.BINDING)
        ssn.plans.append(Plan(tuple(Bind(t.key, t.job, t.node) for t in leftovers), job=job.uid))
