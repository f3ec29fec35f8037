"""Volcano's job state machine (pkg/controllers/job/state), level-triggered. A job's lifecycle — phase,
retryCount, version and restart targets — is a function of its last JobStatusChanged, its pending
actions (policies.py) and its pod counts: `advance` computes it, reconcile publishes it, the fold reads it
back and the pods to stop follow from what was published (state.to_stop).

Actions, by phase (Volcano's Execute of each state):
- Pending, Running: RestartJob → Restarting, retryCount+1, every pod killed (retain None; at the last
  retry, retryCount ≥ maxRetry−1, retain Soft so the last failures stay visible). RestartTask, RestartPod,
  RestartPartition → Restarting, retryCount+1, the target's pods killed whatever their phase. AbortJob →
  Aborting, CompleteJob → Completing, TerminateJob → Terminating (live pods killed: retain Soft). Others
  (ResumeJob) only sync.
- Restarting: RestartTask/Pod/Partition add their target; any other action but ResumeJob widens the
  restart to the whole job (Volcano's KillJob with retain None); retryCount unchanged.
- Aborting, Aborted: ResumeJob → Restarting, retryCount+1. Other phases ignore actions.
SyncJob, by phase:
- Pending, Running: phase.next_phase (minAvailable, minSuccess, per-task minAvailable).
- Restarting: Failed once retryCount ≥ maxRetry; else Pending once every kill was asked and
  Σreplicas − terminating ≥ minAvailable.
- Aborting → Aborted, Completing → Completed, Terminating → Terminated once no pod is pending, running
  or terminating.
A transition out of a killing phase waits until that phase and version are published: the kills it
implies are computed from the published status, so only then do the counts show them.

Every kill action bumps the job's version. Pods carry the version they were created at, and a restart
kills the pods of earlier versions only: the next generation, created at the new version, is spared.

Differences from Volcano: the PodGroup is kept across restarts (Volcano deletes it on every full kill and
creates it again); a RestartTask or RestartPod raised by an event about no task or pod does nothing
(Volcano enters Restarting, counts a retry and kills nothing); ResumeJob while Restarting does nothing
(Volcano kills every pod, the Succeeded ones a suspended job kept included); RestartPartition takes a
pod's partition as its index divided by the task's partition size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from contracts import payloads
from contracts.objects import Job, TaskSpec
from services.job_controller.core import policies
from services.job_controller.core.phase import FINAL_PHASES, TaskCounts, next_phase
from services.job_controller.core.state import JobRecord, Pending, retally

# the phase each stopping action leads to, and where that phase settles once no pod is left
KILL_PHASES = {"AbortJob": "Aborting", "CompleteJob": "Completing", "TerminateJob": "Terminating"}
DRAINED = {"Aborting": "Aborted", "Completing": "Completed", "Terminating": "Terminated"}
TARGETED = frozenset({"RestartTask", "RestartPod", "RestartPartition"})
# phases in which the job's pods are created
RUNNING_PHASES = frozenset({"Pending", "Running"})

# which pods a restart kills: task "" = every task, hi −1 = no upper index, retain "None" | "Soft"
Target = payloads.RestartTarget


@dataclass(frozen=True, slots=True)
class Lifecycle:
    phase: str = "Pending"
    retry_count: int = 0
    version: int = 0
    restart: tuple[Target, ...] = ()


def published(record: JobRecord) -> Lifecycle:
    p = record.published
    if p is None:
        return Lifecycle()
    return Lifecycle(p.phase, p.retry_count, p.version, p.restart)


def read_back(record: JobRecord, status: payloads.JobStatusChanged) -> None:
    """Fold a JobStatusChanged: the published status, the pending actions it handled forgotten (all of
    them once the job finished), the tasks' failures (TaskFailed) reset by a full restart, and the tally
    recomputed when the pods to stop change."""
    before = _kill_facts(record)
    version = record.published.version if record.published else 0
    record.published = status
    policies.consume(record, status.handled)
    if record.phase in FINAL_PHASES:
        record.pending = ()  # a finished job ignores what is still pending (issue #3967)
    if status.version > version and any(not t.task for t in status.restart):
        record.failures.clear()
    if _kill_facts(record) != before:
        retally(record)


def _kill_facts(record: JobRecord) -> tuple[Any, ...]:
    """What state.to_stop reads from the published status."""
    published = record.published
    if published is None:
        return (record.stopping, None, None, None)
    return (record.stopping, published.phase, published.version, published.restart)


def advance(record: JobRecord, job: Job, now: float) -> tuple[Lifecycle, list[str], str]:
    """The lifecycle the job should publish at `now`: its due pending actions run in log order (and the
    delayed actions they supersede cancelled), then SyncJob until the phase stops moving. Returns it
    with the keys of the pending actions it handled and the id of the event that caused the first
    change ("" if none did)."""
    start = lifecycle = published(record)
    handled: list[str] = []
    cause = ""
    for pending in record.pending:
        if pending.key in handled or (pending.due is not None and pending.due > now):
            continue
        handled.append(pending.key)
        after = execute(lifecycle, job, pending)
        if after != lifecycle and not cause:
            cause = pending.cause
        lifecycle = after
        # Volcano's cleanupDelayActions: an action done cancels the delayed ones of the same scope
        handled.extend(
            p.key
            for p in record.pending
            if p.due is not None and p.key not in handled and _scope(p) == _scope(pending)
        )
    for _ in range(6):
        settled = (lifecycle.phase, lifecycle.version) == (start.phase, start.version)
        following = sync(lifecycle, job, record, settled)
        if following == lifecycle:
            break
        lifecycle = following
    return lifecycle, handled, cause


def execute(lifecycle: Lifecycle, job: Job, pending: Pending) -> Lifecycle:
    """One action in the current phase (see the module docstring)."""
    action, phase = pending.action, lifecycle.phase
    if phase in RUNNING_PHASES:
        if action == "RestartJob":
            return _restart(lifecycle, _whole_job(lifecycle, job, action), pending.counted)
        if action in TARGETED:
            target = _target(job, pending)
            return lifecycle if target is None else _restart(lifecycle, target, pending.counted)
        if action in KILL_PHASES:
            return Lifecycle(KILL_PHASES[action], lifecycle.retry_count, lifecycle.version + 1)
        return lifecycle
    if phase == "Restarting" and action != "ResumeJob":
        target = _target(job, pending) if action in TARGETED else _whole_job(lifecycle, job, action)
        if target is None or target in lifecycle.restart:
            return lifecycle
        return replace(lifecycle, version=lifecycle.version + 1, restart=(*lifecycle.restart, target))
    if phase in ("Aborting", "Aborted") and action == "ResumeJob":
        target = _job_target(action, "Soft")
        return Lifecycle("Restarting", lifecycle.retry_count + 1, lifecycle.version + 1, (target,))
    return lifecycle


def sync(lifecycle: Lifecycle, job: Job, record: JobRecord, settled: bool) -> Lifecycle:
    """One SyncJob step. settled: the phase and version are the published ones, so the record's tally
    counts the kills they imply."""
    tally = record.tally
    if lifecycle.phase in RUNNING_PHASES:
        return replace(lifecycle, phase=next_phase(job, lifecycle.phase, task_counts(record)))
    if not settled:
        return lifecycle
    if lifecycle.phase == "Restarting":
        if lifecycle.retry_count >= job.max_retry:
            return replace(lifecycle, phase="Failed", restart=())
        replicas = sum(t.replicas for t in job.tasks)
        terminating = sum(c.get("Terminating", 0) for c in tally.by_task.values())
        if not tally.unstopped and replicas - terminating >= (job.min_available or 0):
            return replace(lifecycle, phase="Pending", restart=())
        return lifecycle
    if lifecycle.phase in DRAINED and not tally.live and not tally.unstopped:
        return replace(lifecycle, phase=DRAINED[lifecycle.phase])
    return lifecycle


def task_counts(record: JobRecord) -> dict[str, TaskCounts]:
    return {
        task: TaskCounts(c.get("Pending", 0), c.get("Running", 0), c.get("Succeeded", 0), c.get("Failed", 0))
        for task, c in record.tally.by_task.items()
    }


def dependencies_ready(job: Job, task: TaskSpec, record: JobRecord) -> bool:
    """Volcano's dependsOn: a task's pods are created once its dependencies run — all of them, or any
    with `iteration: any` and more than one name. A dependency runs when at least its minAvailable pods
    are Running or Succeeded (an unknown name, which admission rejects, holds nothing back)."""
    depends_on = task.depends_on
    if depends_on is None or not depends_on.name:
        return True
    ready = [_running(job, name, record) for name in depends_on.name]
    return any(ready) if depends_on.iteration == "any" and len(ready) > 1 else all(ready)


def _running(job: Job, name: str, record: JobRecord) -> bool:
    spec = next((t for t in job.tasks if t.name == name), None)
    if spec is None:
        return True
    counts = record.tally.by_task.get(name, {})
    needed = spec.replicas if spec.min_available is None else spec.min_available
    return counts.get("Running", 0) + counts.get("Succeeded", 0) >= needed


# --- restart targets -------------------------------------------------------------------------------


def _restart(lifecycle: Lifecycle, target: Target, counted: bool) -> Lifecycle:
    retries = lifecycle.retry_count + (1 if counted else 0)
    return Lifecycle("Restarting", retries, lifecycle.version + 1, (target,))


def _job_target(action: str, retain: str) -> Target:
    return Target(action=action, task="", lo=0, hi=-1, retain=retain)


def _whole_job(lifecycle: Lifecycle, job: Job, action: str) -> Target:
    """Every pod; finished ones too, except at the last retry (Volcano's killPods)."""
    last_retry = lifecycle.retry_count >= job.max_retry - 1
    return _job_target(action, "Soft" if last_retry else "None")


def _target(job: Job, pending: Pending) -> Target | None:
    """The pods a RestartTask, RestartPod or RestartPartition names, whatever their phase."""
    if not pending.task or (pending.action != "RestartTask" and pending.index < 0):
        return None
    lo, hi = 0, -1
    if pending.action == "RestartPod":
        lo, hi = pending.index, pending.index + 1
    elif pending.action == "RestartPartition":
        spec = next((t for t in job.tasks if t.name == pending.task), None)
        if spec is None or spec.partition_policy is None or spec.partition_policy.partition_size <= 0:
            return None  # Volcano: no partition, nothing to do
        size = spec.partition_policy.partition_size
        lo = pending.index // size * size
        hi = lo + size
    return Target(action=pending.action, task=pending.task, lo=lo, hi=hi, retain="None")


def _scope(pending: Pending) -> tuple[str, ...]:
    """What an action acts on, for cancelling the delayed actions it supersedes (Volcano's
    GetActionType): a pod, a task, or the job."""
    if pending.action == "RestartPod":
        return ("pod", pending.pod)
    if pending.action in ("RestartTask", "RestartPartition"):
        return ("task", pending.task)
    return ("job",)
