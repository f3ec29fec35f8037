"""Job phase for the plain path (Pending → Running → Completed / Failed), Volcano's SyncJob rules of the
pending and running states. Restart, abort and terminate transitions belong to the lifecycle state machine
(lifecycle.py), which uses `next_phase` for these two states.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contracts.objects import Job

# phases a job never leaves (Volcano's finishedState: policies and commands no longer apply)
FINAL_PHASES = frozenset({"Completed", "Failed", "Terminated"})
# phases in which no pod of the job runs: final, suspended (Aborted, until ResumeJob), or on the way there
STOPPING_PHASES = FINAL_PHASES | {"Aborting", "Aborted", "Completing", "Terminating"}
# phases whose job is done running (Aborted included: it only runs again through ResumeJob)
FINISHED_PHASES = FINAL_PHASES | {"Aborted"}


@dataclass(frozen=True, slots=True)
class TaskCounts:
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed


def _sum(counts: Mapping[str, TaskCounts]) -> TaskCounts:
    return TaskCounts(
        pending=sum(c.pending for c in counts.values()),
        running=sum(c.running for c in counts.values()),
        succeeded=sum(c.succeeded for c in counts.values()),
        failed=sum(c.failed for c in counts.values()),
    )


def next_phase(job: Job, phase: str, counts: Mapping[str, TaskCounts]) -> str:
    """One SyncJob step for a defaulted job (task minAvailable and job minAvailable filled in)."""
    if phase in FINISHED_PHASES:
        return phase
    total = _sum(counts)
    min_available = job.min_available or 0
    replicas = sum(t.replicas for t in job.tasks)
    if phase == "Pending":
        if min_available <= total.running + total.finished:
            return "Running"
        return phase
    if phase != "Running":
        return phase
    if job.min_success and total.succeeded >= job.min_success:
        return "Completed"
    if total.finished == replicas:
        if min_available >= sum(t.min_available or 0 for t in job.tasks):
            for task in job.tasks:
                done = counts.get(task.name, TaskCounts())
                if done.succeeded < (task.min_available or 0):
                    return "Failed"
        if job.min_success and total.succeeded < job.min_success:
            return "Failed"
        return "Completed" if total.succeeded >= min_available else "Failed"
    if total.pending > replicas - min_available:
        return "Pending"
    return phase
