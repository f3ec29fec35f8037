"""Helpers shared by backfill, preempt and reclaim: which jobs may act, which nodes an evicting task looks
at, whether victims could make room, when a pod is protected by its cool-down, and whether a task fits a
node once what is being released there is gone (Volcano's ValidateVictims, PredicateForPreemptAction,
the cdp plugin)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.scheduler.core.framework.placement import FitResult, feasible_nodes, fits_future_idle
from services.scheduler.core.framework.session import Session
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import TaskInfo, TaskStatus

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


def eviction_candidates(ssn: Session, task: TaskInfo, allowed: np.ndarray | None = None) -> FitResult:
    """Nodes an evicting task may use: no failure eviction could not fix (UnschedulableAndUnresolvable),
    resources not checked (that is what the victims are for); adaptive node count as in allocate; only
    `allowed` ones when given (a HyperNode's members). When there is none, the reasons say why."""
    return feasible_nodes(ssn, task, allowed=allowed, check_resources=False, resolvable_ok=True)


def predicates_pass(ssn: Session, task: TaskInfo, node: int) -> bool:
    """Every predicate, resolvable ones included, accepts `node` in the session's current state."""
    return not any(failure.nodes[node] for failure in ssn.predicate_failures(task))


def shortfall(ssn: Session, task: TaskInfo, node: int, victims: Sequence[TaskInfo]) -> list[str]:
    """The resources the task would still lack on the node after evicting all `victims`, and `pods`
    when no pod slot would come free."""
    cols = task.requested_columns
    available = ssn.nodes.future_idle_row(node)[cols].copy()
    for victim in victims:
        available += victim.vector[cols]
    enough = available >= task.init_vector[cols]
    lacking = [ssn.resources.names[c] for c, ok in zip(cols, enough, strict=True) if not ok]
    nodes = ssn.nodes
    releasing = sum(1 for v in victims if v.status is not TaskStatus.RELEASING)
    if nodes.future_pods(node) - releasing >= nodes.max_pods[node]:
        lacking.append("pods")
    return lacking


def fits_once_released(ssn: Session, task: TaskInfo, node: int) -> bool:
    """Whether the task fits the node once every Releasing task there has stopped: its request within the
    future idle resources, a pod slot that is or will be free (a Releasing pod's slot comes back as its
    resources do: Volcano #3079, #3335), and every predicate eviction cannot change passing."""
    nodes = ssn.nodes
    if nodes.future_pods(node) >= nodes.max_pods[node] or not fits_future_idle(ssn, task, node):
        return False
    return not any(f.nodes[node] for f in ssn.predicate_failures(task) if not f.resolvable)


def in_cooldown(task: TaskInfo, now: float) -> bool:
    """Volcano's cdp: a running pod with a `volcano.sh/cooldown-time` may not be a victim until that long
    after it started (Volcano counts from the pod's PodScheduled condition, which lahar does not keep:
    the start the node reported is the nearest fact). A pod not running, or not known to have started,
    is not protected, as in Volcano."""
    if task.cooldown is None or task.status is not TaskStatus.RUNNING:
        return False
    started = task.pod.status.start_time
    return started is not None and started + task.cooldown > now
