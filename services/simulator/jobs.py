"""A Job as the simulation reports it, from its JobSubmitted and the job-controller's JobStatusChanged
events: phase, retryCount, when it was submitted, first ran and finished, and why it is where it is.

`reason` names the last lifecycle decision, e.g. "RestartJob on PodFailed" (the action and the policy
event, or "Command", that called for it), "MaxRetryExceeded" (Restarting → Failed), "MinSuccess",
"PodsSucceeded" or "PodsFailed" (Running → Completed / Failed by the job's pod counts). Draining phases
(Aborted, Completed, Terminated after Aborting, Completing, Terminating) keep the reason of the action that
led there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contracts import payloads
from contracts.objects import Job
from services.job_controller.core.lifecycle import KILL_PHASES
from services.job_controller.core.phase import FINISHED_PHASES
from shared.runner_types import Event

ACTION_OF_PHASE = {phase: action for action, phase in KILL_PHASES.items()}


@dataclass(slots=True)
class SimJob:
    job: Job  # as admission defaulted it
    phase: str = "Pending"
    submit_time: float = 0.0
    start_time: float | None = None  # first Running
    finish_time: float | None = None  # reached a finished phase (Completed, Failed, Terminated, Aborted)
    retry_count: int = 0
    reason: str = ""
    deleted_time: float | None = None  # JobCleanedUp (its TTL ran out) or JobDeleted

    @property
    def finished(self) -> bool:
        """Nothing more will happen to it (a deleted job is finished whatever its last phase)."""
        return self.phase in FINISHED_PHASES or self.deleted_time is not None

    def observe(self, event: Event) -> None:
        if event.type != "JobStatusChanged":
            self.deleted_time = event.time
            return
        status = event.payload_as(payloads.JobStatusChanged)
        before, phase = self.phase, status.phase
        self.retry_count = status.retry_count
        if phase == before:
            return
        self.reason = transition_reason(self.job, before, status, event.causation_id) or self.reason
        self.phase = phase
        if phase == "Running" and self.start_time is None:
            self.start_time = event.time
        if phase in FINISHED_PHASES:
            self.finish_time = event.time
        elif before in FINISHED_PHASES:
            self.finish_time = None  # resumed (ResumeJob after Aborted)


def transition_reason(job: Job, before: str, status: payloads.JobStatusChanged, cause: str | None) -> str:
    """Why a JobStatusChanged moved the job from `before` to its phase ("" when the reason stays)."""
    phase = status.phase
    if phase == "Restarting" or phase in ACTION_OF_PHASE:
        restart = status.restart
        action = restart[0].action if phase == "Restarting" and restart else ACTION_OF_PHASE.get(phase, "")
        event = _policy_event(status.handled, cause)
        return f"{action} on {event}" if event else action
    if before == "Restarting" and phase == "Failed":
        return "MaxRetryExceeded"
    if before in ("Pending", "Running") and phase in ("Completed", "Failed"):
        succeeded = status.counts.get("succeeded", 0)
        if phase == "Completed" and job.min_success and succeeded >= job.min_success:
            return "MinSuccess"
        return "PodsSucceeded" if phase == "Completed" else "PodsFailed"
    return ""


def _policy_event(handled: Sequence[str], cause: str | None) -> str:
    """The policy event (PodFailed, TaskCompleted, ..., Command) of the handled action raised by the event
    that caused the change: handled keys are "<event id>/<policy event>"."""
    for key in handled:
        event_id, _, event = key.rpartition("/")
        if event_id == cause:
            return event
    return ""
