"""preempt: starving jobs evict lower-priority work of their own queue (Volcano's preempt).

Preemptors are jobs whose PodGroup left Pending, that pass JobValid, whose queue exists and that are
starving; jobs with a network topology are skipped (Volcano does not support them here either). Queues go
in queue order; in each:

1. Between jobs: each starving job (job order) gets one statement. Its pending tasks (task order), while
   the job is still starving, look for a node: nodes that eviction could not fix are dropped, the rest are
   tried by descending score. On a node, the candidates are Bound/Running preemptable tasks of other jobs
   of the same queue (a BestEffort preemptor may only evict BestEffort tasks); the plugins' Preemptable
   answer gives the victims. If the victims could not make room the node is skipped; otherwise victims
   are evicted on a per-node trial statement, lowest priority first, until the preemptor fits (queue
   quota, future idle, predicates); it is then pipelined there and the trial merged into the job's
   statement, or the trial is undone. The job's statement is committed only if the job is pipelined.
2. Within a job: each starving job's pending tasks may evict Bound/Running preemptable tasks of the same
   job (the priority plugin lets a task evict lower-priority tasks); each success is committed, the
   first failure ends the job's turn.

`enableTopologyAwarePreemption` replaces the per-node greedy walk by kube-scheduler's candidate search:
from a random offset, dry-run up to N nodes (N from the min/max candidate arguments), on each find the
lowest-priority victims that make the preemptor fit and reprieve the higher-priority ones it does not
need, then pick the node whose victims hurt least (lowest highest-priority, lowest priority sum, fewest,
most recently started). Deviations: nodes are dry-run one after another with Statement trials instead of
Volcano's worker pool and SimulateAddTask/RemoveTask, and a candidate must fit completely (quota, future
idle, predicates) where Volcano re-checks only the predicates after evicting every potential victim.
`topologyAwarePreemptWorkerNum` is accepted and unused (no threads in the core); `predicateErrorCacheEnable`
is accepted and has no effect (feasibility is computed for all nodes at once, with per-session caches).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import numpy as np

from contracts.evictions import PREEMPT
from services.scheduler.core.actions.common import (
    eligible_queue,
    eviction_candidates,
    predicates_pass,
    preemption_never,
    victims_cover,
)
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.placement import fits_future_idle
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import PREEMPTABLE_STATUSES, TaskInfo, TaskStatus

REASON = PREEMPT

Filter = Callable[[TaskInfo], bool]


class PreemptAction(Action):
    name = "preempt"
    arguments_spec: ClassVar[Mapping[str, type]] = {
        "predicateErrorCacheEnable": bool,
        "enableTopologyAwarePreemption": bool,
        "topologyAwarePreemptWorkerNum": int,
        "minCandidateNodesPercentage": int,
        "minCandidateNodesAbsolute": int,
        "maxCandidateNodesAbsolute": int,
    }

    def execute(self, ssn: Session) -> None:
        self.topology_aware: bool = argument(self.arguments, "enableTopologyAwarePreemption", False)
        self.min_candidates_percentage: int = argument(self.arguments, "minCandidateNodesPercentage", 10)
        self.min_candidates: int = argument(self.arguments, "minCandidateNodesAbsolute", 1)
        self.max_candidates: int = argument(self.arguments, "maxCandidateNodesAbsolute", 100)

        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        starving: dict[str, list[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.owned_jobs.values():
            queue = eligible_queue(ssn, job)
            if queue is None or not ssn.job_starving_fn(job) or job.network_topology is not None:
                continue
            if queue.name not in preemptors:
                preemptors[queue.name] = PriorityQueue(ssn.job_order_fn)
                starving[queue.name] = []
                queues.push(queue)
            preemptors[queue.name].push(job)
            starving[queue.name].append(job)
            tasks[job.uid] = PriorityQueue(ssn.task_order_fn, job.pending_tasks())

        while queues:
            queue = queues.pop()
            jobs = preemptors[queue.name]
            while jobs:
                job = jobs.pop()
                stmt = ssn.statement()
                pending = tasks[job.uid]
                while pending and ssn.job_starving_fn(job):
                    preemptor = pending.pop()
                    self.preempt(ssn, stmt, preemptor, queue, _other_jobs_of_queue(ssn, preemptor, job.queue))
                if ssn.job_pipelined_fn(job):
                    stmt.commit()
                else:
                    stmt.discard()

            for job in starving[queue.name]:
                own = PriorityQueue(ssn.task_order_fn, job.pending_tasks())
                while own:
                    preemptor = own.pop()
                    stmt = ssn.statement()
                    if not self.preempt(ssn, stmt, preemptor, queue, _same_job(preemptor)):
                        stmt.discard()
                        break
                    stmt.commit()

    def preempt(
        self, ssn: Session, stmt: Statement, preemptor: TaskInfo, queue: QueueInfo, eligible: Filter
    ) -> bool:
        """Find a node for `preemptor` by evicting tasks that pass `eligible`; on success the evictions
        and the pipelined preemptor are on `stmt`."""
        if not self._may_preempt(ssn, preemptor) or ssn.pre_predicate_fn(preemptor):
            return False
        ssn.timer.stats.preemption_attempts += 1  # Volcano's total_preemption_attempts
        nodes = eviction_candidates(ssn, preemptor)
        if not len(nodes):
            return False
        if self.topology_aware:
            return self._candidate_preempt(ssn, stmt, preemptor, queue, eligible, nodes)
        scores = ssn.node_order_fn(preemptor, nodes)
        for node in nodes[np.argsort(-scores, kind="stable")]:
            node = int(node)
            victims = self._victims(ssn, preemptor, node, eligible)
            if victims is None:
                continue
            trial = ssn.statement()
            ordered = PriorityQueue(ssn.victim_less(preemptor), victims)
            fits = _fits(ssn, queue, preemptor, node)
            while not fits and ordered:
                trial.evict(ordered.pop(), REASON)
                fits = _fits(ssn, queue, preemptor, node)
            if fits:
                trial.pipeline(preemptor, node)
                stmt.merge(trial)
                return True
            trial.discard()
        return False

    @staticmethod
    def _victims(ssn: Session, preemptor: TaskInfo, node: int, eligible: Filter) -> list[TaskInfo] | None:
        """The plugins' victims on `node`, or None when even all of them would not make room."""
        preemptees = [t for t in ssn.nodes.tasks[node].values() if eligible(t)]
        victims = ssn.preemptable_fn(preemptor, preemptees)
        return victims if victims_cover(ssn, preemptor, node, victims) else None

    @staticmethod
    def _may_preempt(ssn: Session, preemptor: TaskInfo) -> bool:
        """Volcano's taskEligibleToPreempt. A pod nominated to a node (by an earlier preemption) waits for
        it unless the node became unusable for good, or keeps waiting while a lower-priority pod there is
        still terminating. lahar keeps no DisruptionTarget condition, so any terminating lower-priority
        pod on the nominated node counts."""
        if preemption_never(ssn, preemptor):
            return False
        nominated = preemptor.pod.status.nominated_node_name
        if not nominated:
            return True
        node = ssn.nodes.index.get(nominated)
        if node is None:
            return False
        failures = [f for f in ssn.predicate_failures(preemptor) if f.nodes[node]]
        if not failures:
            return False
        if any(not f.resolvable for f in failures):
            return True
        return not any(
            t.status == TaskStatus.RELEASING and t.priority < preemptor.priority
            for t in ssn.nodes.tasks[node].values()
        )

    # --- topology-aware variant (kube-scheduler's DryRunPreemption / SelectCandidate) -------------------
    def _candidate_preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        queue: QueueInfo,
        eligible: Filter,
        nodes: np.ndarray,
    ) -> bool:
        wanted = self._num_candidates(len(nodes))
        offset = ssn.rng.randrange(len(nodes))
        candidates: list[tuple[int, list[TaskInfo]]] = []
        for i in range(len(nodes)):
            node = int(nodes[(offset + i) % len(nodes)])
            victims = self._dry_run(ssn, preemptor, queue, node, eligible)
            if victims:
                candidates.append((node, victims))
                if len(candidates) >= wanted:
                    break
        if not candidates:
            return False
        node, victims = min(candidates, key=_candidate_cost)
        for victim in victims:
            stmt.evict(victim, REASON)
        stmt.pipeline(preemptor, node)
        return True

    def _num_candidates(self, count: int) -> int:
        wanted = max(count * self.min_candidates_percentage // 100, self.min_candidates)
        return min(wanted, self.max_candidates, count)

    def _dry_run(
        self, ssn: Session, preemptor: TaskInfo, queue: QueueInfo, node: int, eligible: Filter
    ) -> list[TaskInfo]:
        """SelectVictimsOnNode: evict lowest-priority victims until the preemptor fits, then reprieve the
        potential victims highest priority first while it still fits without them. Returns the victims,
        highest priority first; empty when the node is no candidate. Leaves the session unchanged."""
        victims = self._victims(ssn, preemptor, node, eligible)
        if not victims:
            return []
        ordered = PriorityQueue(ssn.victim_less(preemptor), victims)
        potential: list[TaskInfo] = []
        trial = ssn.statement()
        fits = False
        while ordered and not fits:
            potential.append(ordered.pop())
            trial.evict(potential[-1], REASON)
            fits = _fits(ssn, queue, preemptor, node)
        trial.discard()
        if not fits:
            return []
        evicted = list(potential)
        chosen: list[TaskInfo] = []
        for candidate in reversed(potential):
            rest = [t for t in evicted if t is not candidate]
            if _fits_without(ssn, queue, preemptor, node, rest):
                evicted = rest
            else:
                chosen.append(candidate)
        return chosen


def _fits(ssn: Session, queue: QueueInfo, preemptor: TaskInfo, node: int) -> bool:
    """preemptorFitsOnNode: the queue may grow by the task, it fits future idle, every predicate passes."""
    return (
        ssn.allocatable_fn(queue, preemptor)
        and fits_future_idle(ssn, preemptor, node)
        and predicates_pass(ssn, preemptor, node)
    )


def _fits_without(
    ssn: Session, queue: QueueInfo, preemptor: TaskInfo, node: int, victims: list[TaskInfo]
) -> bool:
    trial = ssn.statement()
    for victim in victims:
        trial.evict(victim, REASON)
    fits = _fits(ssn, queue, preemptor, node)
    trial.discard()
    return fits


def _candidate_cost(candidate: tuple[int, list[TaskInfo]]) -> tuple[int, int, int, float]:
    """pickOneNodeForPreemption's criteria as a key to minimise (ties: the first found)."""
    _, victims = candidate
    highest = max(t.priority for t in victims)
    started = [t.pod.status.start_time or t.creation_timestamp for t in victims if t.priority == highest]
    return (victims[0].priority, sum(t.priority for t in victims), len(victims), -min(started))


def _other_jobs_of_queue(ssn: Session, preemptor: TaskInfo, queue: str) -> Filter:
    def eligible(task: TaskInfo) -> bool:
        if task.status not in PREEMPTABLE_STATUSES or not task.preemptable or task.job == preemptor.job:
            return False
        if preemptor.best_effort and not task.best_effort:
            return False
        job = ssn.jobs.get(task.job)
        return job is not None and job.queue == queue

    return eligible


def _same_job(preemptor: TaskInfo) -> Filter:
    def eligible(task: TaskInfo) -> bool:
        return (
            task.status in PREEMPTABLE_STATUSES
            and task.preemptable
            and task.job == preemptor.job
            and not (preemptor.best_effort and not task.best_effort)
        )

    return eligible
