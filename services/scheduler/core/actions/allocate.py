"""allocate: the main placement action (Volcano's allocate).

Queues take turns by queue order (an overused queue sits the session out); the best job of the queue
places its pending tasks in task order on the best feasible node. A job's placements are committed only
when the gang is ready; if they only make it pipelined (waiting for releasing resources) they stay as
reservations until the session ends; otherwise they are undone. Once a job is ready it yields after each
further task, so that queues and jobs interleave by share.

Hard network-topology jobs are placed inside one HyperNode: each candidate domain (narrowest gradient
first) is tried on a scratch statement, the best-scoring domain that makes the job ready or pipelined is
replayed for real. A PodGroup with sub-groups (a Job's partitions) is placed as a gang of sub-gangs,
each within one HyperNode of its own tier (subgroup_allocate.py).

Before anything else, room an earlier preemption reserved is turned into binds where it is free
(reservations.py).

Beyond Volcano: in a fifo queue (`dequeueStrategy: fifo`) a job that can be neither placed nor pipelined
holds back the jobs behind it (actions/fifo.py); a queue that sits the session out as overused, and a task
its queue's quota refuses, leave their refusal on the job for its pending reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from contracts.objects import PodGroupCondition
from services.scheduler.core.actions.fifo import foreign_waiting, hold_back
from services.scheduler.core.actions.placing import find_nodes, place_best
from services.scheduler.core.actions.reservations import bind_reserved
from services.scheduler.core.actions.subgroup_allocate import allocate_sub_groups
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Op, Statement
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import ALLOCATED_STATUSES, TaskInfo
from services.scheduler.core.model.topology import CLUSTER_TOP


def need_continue_allocating(job: JobInfo, failed_roles: dict[str, dict[str, int]]) -> bool:
    """Volcano's NeedContinueAllocating: after a task failed, can the gang still be satisfied by the
    remaining tasks?"""
    if job.min_available == len(job.tasks):
        return False
    if job.min_available < sum(job.task_min_available.values()):
        still_possible = sum(1 for t in job.pending_tasks() if t.role not in failed_roles)
        return job.ready_task_num() + still_possible >= job.min_available
    return all(
        job.role_count(role, ALLOCATED_STATUSES) >= job.task_min_available.get(role, 0)
        for role in failed_roles
    )


def pick_up_jobs(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
    """The queues and jobs an allocation pass looks at. Pending PodGroups wait for enqueue (or are
    promoted when no enqueue action is configured); invalid jobs get their reason recorded."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.owned_jobs.values():
        if job.is_pending_phase():
            if ssn.enqueue_enabled:
                continue
            job.phase = "Inqueue"
        invalid = ssn.job_valid_fn(job)
        if invalid is not None and not job.task_count():
            # no pod yet (the job-controller creates them once the PodGroup is enqueued): as Volcano's
            # gang, say nothing of a job without tasks rather than call it unschedulable
            continue
        if invalid is not None:
            job.job_fit_error = invalid.message
            job.new_conditions["Unschedulable"] = PodGroupCondition(
                type="Unschedulable",
                status="True",
                transition_id=ssn.uid,
                last_transition_time=ssn.now,
                reason=invalid.reason,
                message=invalid.message,
            )
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            job.job_fit_error = f"queue {job.queue} not found"
            continue
        if queue.name not in jobs_by_queue:
            jobs_by_queue[queue.name] = PriorityQueue(ssn.job_order_fn)
            queues.push(queue)
        jobs_by_queue[queue.name].push(job)
    for job in foreign_waiting(ssn, _placing_elsewhere):
        if job.queue in jobs_by_queue:  # it holds back only jobs this session would place
            jobs_by_queue[job.queue].push(job)
    return queues, jobs_by_queue


def _placing_elsewhere(job: JobInfo) -> bool:
    """Another replica's job with pods waiting for a node (counted as unplaced here)."""
    return not job.is_pending_phase() and bool(job.unplaced)


class AllocateAction(Action):
    name = "allocate"
    arguments_spec: ClassVar[Mapping[str, type]] = {"predicateErrorCacheEnable": bool}

    def execute(self, ssn: Session) -> None:
        self.cache_errors = argument(self.arguments, "predicateErrorCacheEnable", True)
        bind_reserved(ssn)
        queues, jobs_by_queue = pick_up_jobs(ssn)
        pending: dict[str, PriorityQueue[TaskInfo]] = {}
        while queues:
            queue = queues.pop()
            if ssn.overused_fn(queue):
                self._sit_out(ssn, queue, jobs_by_queue.get(queue.name))
                continue
            jobs = jobs_by_queue.get(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            if not job.owned:  # another replica's job heads this fifo queue and still waits
                hold_back(queue, job, jobs)
                continue
            tasks = pending.get(job.uid)
            if tasks is None:
                tasks = PriorityQueue(
                    ssn.task_order_fn, [t for t in job.pending_tasks() if not t.best_effort]
                )
                pending[job.uid] = tasks
            if not tasks:
                queues.push(queue)
                continue
            if job.podgroup.sub_group_policy:  # partitions: a gang of sub-gangs (subgroup_allocate.py)
                stmt = allocate_sub_groups(ssn, job, queue, tasks)
            elif job.network_topology is not None and not ssn.topology.empty:
                stmt = self.allocate_in_domain(ssn, job, queue, tasks)
            else:
                stmt = self.allocate_tasks(ssn, job, queue, tasks)
            if stmt is not None and ssn.job_ready_fn(job):
                stmt.commit()
                self._record_domain(ssn, job)
                if tasks:
                    jobs.push(job)
            elif stmt is None and queue.fifo:
                hold_back(queue, job, jobs)
                continue
            queues.push(queue)

    @staticmethod
    def _sit_out(ssn: Session, queue: QueueInfo, jobs: PriorityQueue[JobInfo] | None) -> None:
        """An overused queue places nothing this session: its waiting jobs are told why."""
        if not jobs:
            return
        refusal = ssn.overused_refusal(queue)
        for job in jobs.drain():  # each is told alike: their order does not matter
            if job.owned and job.pending_tasks():
                job.job_fit_error = job.job_fit_error or refusal.text
                job.record_refusal(refusal)

    def allocate_tasks(
        self,
        ssn: Session,
        job: JobInfo,
        queue: QueueInfo,
        tasks: PriorityQueue[TaskInfo],
        allowed: np.ndarray | None = None,
    ) -> Statement | None:
        stmt = ssn.statement()
        failed_roles: dict[str, dict[str, int]] = {}
        while tasks:
            task = tasks.pop()
            if not ssn.allocatable_fn(queue, task):
                refusal = ssn.quota_refusal(queue, task)
                job.record_fit_errors(task, {refusal.text: 0})
                job.record_refusal(refusal)
                continue
            if self.cache_errors and task.role in failed_roles:
                job.record_fit_errors(task, failed_roles[task.role])
                if not need_continue_allocating(job, failed_roles):
                    break
                continue
            candidates, reasons = find_nodes(ssn, task, allowed)
            if not len(candidates):
                job.record_fit_errors(task, reasons)
                failed_roles[task.role] = reasons
                if not need_continue_allocating(job, failed_roles):
                    break
                continue
            place_best(ssn, stmt, task, candidates)
            if tasks and ssn.job_ready_fn(job):
                break
        if ssn.job_ready_fn(job) or ssn.job_pipelined_fn(job):
            return stmt
        stmt.discard()
        return None

    def allocate_in_domain(
        self, ssn: Session, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo]
    ) -> Statement | None:
        """Try every HyperNode of the first gradient that has a solution; replay the best one."""
        ordered = []
        while tasks:
            ordered.append(tasks.pop())
        gradients = ssn.hypernode_gradients_fn(job)
        if gradients is None:  # no topology plugin configured: the whole cluster is the one domain
            gradients = [[CLUSTER_TOP]]
        for gradient in gradients:
            solutions: dict[str, list[tuple[Op, TaskInfo, int]]] = {}
            for hypernode in gradient:
                trial_tasks = PriorityQueue(ssn.task_order_fn, ordered)
                trial = self.allocate_tasks(
                    ssn, job, queue, trial_tasks, allowed=ssn.topology.members[hypernode]
                )
                if trial is None:
                    continue
                solutions[hypernode] = trial.operations()
                trial.discard()
            if not solutions:
                continue
            scores = ssn.hypernode_order_fn(job, list(solutions))
            best = max(solutions, key=lambda name: (scores.get(name, 0.0), -gradient.index(name)))
            stmt = ssn.statement()
            placed = set()
            for op, task, node_index in solutions[best]:
                if op is Op.ALLOCATE:
                    stmt.allocate(task, node_index)
                else:
                    stmt.pipeline(task, node_index)
                placed.add(task.uid)
            for task in ordered:
                if task.uid not in placed:
                    tasks.push(task)
            return stmt
        return None

    @staticmethod
    def _record_domain(ssn: Session, job: JobInfo) -> None:
        """A topology job remembers the narrowest HyperNode holding all its placed tasks (the LCA)."""
        if job.network_topology is None or ssn.topology.empty:
            return
        domain = job.allocated_hypernode
        for task in job.tasks.values():
            if task.node_index >= 0 and task.status in ALLOCATED_STATUSES:
                domain = ssn.topology.lca(domain, ssn.topology.leaf_of_node(task.node_index))
        job.allocated_hypernode = domain
