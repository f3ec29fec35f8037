"""preempt: starving jobs evict lower-priority work of their own queue (Volcano's preempt, made
transactional and minimal).

Preemptors are jobs whose PodGroup left Pending, that pass JobValid, whose queue exists and that are
starving; soft network-topology jobs are skipped (as in Volcano's preempt). A hard network-topology job
(Volcano 1.15) chooses its victims inside one HyperNode of its allowed tier where the whole gang then
fits (domain_eviction.py), and does not preempt pods of its own. A partitioned job (a PodGroup with a
subGroupPolicy, whatever its own networkTopology) makes room only where each partition it needs fits whole
inside one HyperNode of its tier (partition_eviction.py), and does not preempt pods of its own either.
Queues go in queue order; in each:

1. Between jobs: each starving job (job order) gets one statement. Its pending tasks (task order), while
   the job is still starving, look for room: on each node eviction could fix, the candidates are
   Bound/Running preemptable pods of other jobs of the same queue whose job has a strictly lower priority
   (a BestEffort preemptor may only evict BestEffort pods), that are past their cool-down
   (`volcano.sh/cooldown-time`), and that the plugins' Preemptable answer allows. The victims chosen on a
   node are the cheapest irreducible set that makes the task fit (queue quota, resources and a pod slot
   once the victims are gone, predicates): see victims.py. Of up to `maxCandidateNodesAbsolute` nodes
   that can make room, in node-score order, the one whose victims cost least wins; the task is pipelined
   there. The job's statement is committed only if the job is pipelined, that is, only if the whole gang
   has room: then its evictions and the room reserved for its pods are one plan, which the binder commits
   all or nothing (statement.py); otherwise nothing is evicted.
2. Within a job: each starving job's pending tasks may evict Bound/Running preemptable tasks of the same
   job with a strictly lower task priority; each success is committed, the first failure ends the job's
   turn.

No preemption cycles: a pod only ever evicts pods of strictly lower priority (the job's priority between
jobs, the task's within a job), whatever the configured plugins say, so A preempting B and B preempting A
cannot both happen. Every decision is written on the preemptor's PodGroup (explain.py).

`enableTopologyAwarePreemption` replaces the node walk by kube-scheduler's candidate search: from a random
offset, dry-run up to N nodes (N from the min/max candidate arguments), each with the same irreducible
victim set, and pick the node whose victims hurt least by kube's criteria (lowest highest priority,
lowest priority sum, fewest, most recently started). `topologyAwarePreemptWorkerNum` is accepted and
unused (no threads in the core); `predicateErrorCacheEnable` is accepted and has no effect (feasibility is
computed for all nodes at once, with per-session caches).

Deviations from Volcano, on purpose (docs/deviations.md): victims are the cheapest irreducible set, not
the first ones in victim order until the task fits; a node is chosen among several by what its victims
cost; a releasing victim's pod slot counts as free (Volcano #3335); the strict priority rule holds
without the priority plugin; a pod nominated to a node waits on the room reserved for it as a Pipelined
task (reservations.py) instead of Volcano's nominated-node checks (taskEligibleToPreempt, #5131).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import ClassVar

import numpy as np

from contracts.evictions import PREEMPT
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
from services.scheduler.core.actions.victims import NOTHING_TO_EVICT, Choice, Stage, VictimSearch
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import PREEMPTABLE_STATUSES, TaskInfo

REASON = PREEMPT
LOWER_PRIORITY_ONLY = "only pods of equal or higher priority"
COOLING_DOWN = "only pods still in their cool-down (volcano.sh/cooldown-time)"

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
            if queue is None or not ssn.job_starving_fn(job):
                continue
            partitioned = is_partitioned(job)
            if job.network_topology is not None and not hard_topology(job) and not partitioned:
                continue  # soft mode: as in Volcano, no preemption for it
            if queue.name not in preemptors:
                preemptors[queue.name] = PriorityQueue(ssn.job_order_fn)
                starving[queue.name] = []
                queues.push(queue)
            preemptors[queue.name].push(job)
            if job.network_topology is None and not partitioned:  # its own pods may not leave a HyperNode
                starving[queue.name].append(job)
            tasks[job.uid] = PriorityQueue(ssn.task_order_fn, job.pending_tasks())

        while queues:
            queue = queues.pop()
            jobs = preemptors[queue.name]
            while jobs:
                job = jobs.pop()
                if job.network_topology is not None or is_partitioned(job):
                    self.preempt_in_one_domain(ssn, queue, job, tasks[job.uid])
                    continue
                stmt = ssn.statement()
                attempts = Attempts(REASON)
                pending = tasks[job.uid]
                while pending and ssn.job_starving_fn(job):
                    preemptor = pending.pop()
                    self.preempt(ssn, stmt, preemptor, queue, _other_jobs(ssn, preemptor, job), attempts)
                committed = ssn.job_pipelined_fn(job)
                if committed:
                    stmt.commit()
                else:
                    stmt.discard()
                record(ssn, job, attempts, committed=committed)

            for job in starving[queue.name]:
                own = PriorityQueue(ssn.task_order_fn, job.pending_tasks())
                while own:
                    preemptor = own.pop()
                    stmt = ssn.statement()
                    attempts = Attempts(REASON)
                    if not self.preempt(ssn, stmt, preemptor, queue, _same_job(ssn, preemptor), attempts):
                        stmt.discard()  # a job rarely has lower-priority pods of its own: no news
                        break
                    stmt.commit()
                    record(ssn, job, attempts, committed=True)

    def preempt_in_one_domain(
        self, ssn: Session, queue: QueueInfo, job: JobInfo, pending: PriorityQueue[TaskInfo]
    ) -> None:
        """A hard network-topology job: victims inside one HyperNode where the whole gang then fits; a
        partitioned one: each partition it needs inside one HyperNode of its tier."""

        def place(
            stmt: Statement, task: TaskInfo, allowed: np.ndarray | None, where: str, attempts: Attempts
        ) -> None:
            stages = _other_jobs(ssn, task, job)
            self.preempt(ssn, stmt, task, queue, stages, attempts, allowed=allowed, where=where)

        evict_within_domains(ssn, job, pending, REASON, place)

    def preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        queue: QueueInfo,
        stages: list[Stage],
        attempts: Attempts,
        *,
        allowed: np.ndarray | None = None,
        where: str = "",
    ) -> bool:
        """Find room for `preemptor` by evicting pods that pass `stages`, on the `allowed` nodes only when
        given; on success the evictions and the pipelined preemptor are on `stmt`, and `attempts` says
        what happened either way."""
        if preemption_never(ssn, preemptor):
            attempts.no_room(preemptor, "its preemptionPolicy is Never")
            return False
        reason = ssn.pre_predicate_fn(preemptor)
        if reason:
            attempts.no_room(preemptor, reason)
            return False
        ssn.timer.stats.preemption_attempts += 1  # Volcano's total_preemption_attempts
        fit = eviction_candidates(ssn, preemptor, allowed)
        nodes = fit.candidates
        if not len(nodes):
            attempts.no_room(preemptor, fit.reasons)
            return False
        job = ssn.jobs[preemptor.job]
        search = VictimSearch(
            ssn,
            preemptor,
            stages,
            "preemptable",
            lambda node: _fits(ssn, queue, preemptor, node),
            f"{REASON}: for {preemptor.key} (job {job.uid}, priority {job.priority}){where}",
        )
        if self.topology_aware:
            choice = self._candidate(ssn, search, nodes)
        else:
            scores = ssn.node_order_fn(preemptor, nodes)
            ordered = (int(node) for node in nodes[np.argsort(-scores, kind="stable")])
            choice = search.best(ordered, self.max_candidates)
        return search.settle(choice, stmt, attempts)

    # --- topology-aware variant (kube-scheduler's DryRunPreemption / SelectCandidate) -------------------
    def _candidate(self, ssn: Session, search: VictimSearch, nodes: np.ndarray) -> Choice | None:
        wanted = self._num_candidates(len(nodes))
        offset = ssn.rng.randrange(len(nodes))
        candidates: list[Choice] = []
        for node in _rotated(nodes, offset):
            choice = search.on_node(node)
            if choice is not None and choice.victims:
                candidates.append(choice)
                if len(candidates) >= wanted:
                    break
        return min(candidates, key=_kube_cost) if candidates else None

    def _num_candidates(self, count: int) -> int:
        wanted = max(count * self.min_candidates_percentage // 100, self.min_candidates)
        return min(wanted, self.max_candidates, count)


def _rotated(nodes: np.ndarray, offset: int) -> Iterator[int]:
    for i in range(len(nodes)):
        yield int(nodes[(offset + i) % len(nodes)])


def _fits(ssn: Session, queue: QueueInfo, preemptor: TaskInfo, node: int) -> bool:
    """preemptorFitsOnNode: the queue may grow by the task, and it fits the node once what is being
    released there is gone (resources, a pod slot, predicates)."""
    return ssn.allocatable_fn(queue, preemptor) and fits_once_released(ssn, preemptor, node)


def _kube_cost(choice: Choice) -> tuple[int, int, int, float]:
    """pickOneNodeForPreemption's criteria as a key to minimise (ties: the first found)."""
    victims = choice.victims
    highest = max(t.priority for t in victims)
    started = [t.pod.status.start_time or t.creation_timestamp for t in victims if t.priority == highest]
    return (highest, sum(t.priority for t in victims), len(victims), -min(started))


def _other_jobs(ssn: Session, preemptor: TaskInfo, job: JobInfo) -> list[Stage]:
    def may_go(task: TaskInfo) -> bool:
        if task.status not in PREEMPTABLE_STATUSES or not task.preemptable or task.job == preemptor.job:
            return False
        if preemptor.best_effort and not task.best_effort:
            return False
        other = ssn.jobs.get(task.job)
        return other is not None and other.queue == job.queue

    def lower(task: TaskInfo) -> bool:
        return ssn.jobs[task.job].priority < job.priority

    return _stages(ssn, may_go, lower)


def _same_job(ssn: Session, preemptor: TaskInfo) -> list[Stage]:
    def may_go(task: TaskInfo) -> bool:
        return (
            task.status in PREEMPTABLE_STATUSES
            and task.preemptable
            and task.job == preemptor.job
            and not (preemptor.best_effort and not task.best_effort)
        )

    return _stages(ssn, may_go, lambda task: task.priority < preemptor.priority)


def _stages(ssn: Session, may_go: Filter, lower: Filter) -> list[Stage]:
    now = ssn.now
    return [
        (NOTHING_TO_EVICT, may_go),
        (LOWER_PRIORITY_ONLY, lower),
        (COOLING_DOWN, lambda task: not in_cooldown(task, now)),
    ]
