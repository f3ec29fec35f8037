"""Helpers shared by backfill, preempt and reclaim: which jobs may act, which nodes an evicting task looks
at, whether victims could make room, and the order victims are evicted in (Volcano's ValidateVictims,
BuildVictimsPriorityQueue, PredicateForPreemptAction)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.scheduler.core.framework.placement import feasible_nodes
from services.scheduler.core.framework.session import Session
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import TaskInfo

PREEMPT_NEVER = "Never"


def eligible_queue(ssn: Session, job: JobInfo) -> QueueInfo | None:
    """The job's queue if the job may act in backfill, preempt or reclaim this session: its PodGroup has
    left Pending, JobValid passes and the queue exists. Unlike allocate, nothing is recorded on a job
    that fails (Volcano only logs it there)."""
    if job.is_pending_phase() or ssn.job_valid_fn(job) is not None:
        return None
    return ssn.queues.get(job.queue)


def preemption_never(ssn: Session, task: TaskInfo) -> bool:
    """`preemptionPolicy: Never`. Kubernetes' Priority admission copies the policy of the pod's
    PriorityClass (or the global default class) into the pod; lahar has no such admission step, so an
    unset pod field falls back to the class here."""
    spec = task.pod.spec
    policy = spec.preemption_policy
    if not policy:
        if spec.priority_class_name:
            pc = ssn.priority_classes.get(spec.priority_class_name)
        else:
            pc = next((c for c in ssn.priority_classes.values() if c.global_default), None)
        policy = pc.preemption_policy if pc is not None else ""
    return policy == PREEMPT_NEVER


def eviction_candidates(ssn: Session, task: TaskInfo) -> np.ndarray:
    """Nodes an evicting task may use: no failure eviction could not fix (UnschedulableAndUnresolvable),
    resources not checked (that is what the victims are for); adaptive node count as in allocate."""
    return feasible_nodes(ssn, task, check_resources=False, resolvable_ok=True).candidates


def predicates_pass(ssn: Session, task: TaskInfo, node: int) -> bool:
    """Every predicate, resolvable ones included, accepts `node` in the session's current state."""
    return not any(failure.nodes[node] for failure in ssn.predicate_failures(task))


def victims_cover(ssn: Session, task: TaskInfo, node: int, victims: Sequence[TaskInfo]) -> bool:
    """ValidateVictims: could evicting all `victims` make the task's request fit the node's future idle?
    (An empty list passes when the task already fits.)"""
    cols = task.requested_columns
    available = ssn.nodes.future_idle_row(node)[cols].copy()
    for victim in victims:
        available += victim.vector[cols]
    return bool((available >= task.init_vector[cols]).all())
