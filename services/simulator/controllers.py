"""The controllers of the stack, run over the simulated log: the job-controller's cores (Jobs, and
CronJobs and JobFlows) and the queue-controller's, unchanged. Every event of the log is folded into each
(each ignores what it does not care about), and `reconcile` asks each what to write, as the service loop
does after each batch. What the workloads core asks of admission (a CronJob's or JobFlow's jobs created
and deleted) the simulated admission answers (cluster.py).
"""

from __future__ import annotations

from services.job_controller.core.core import JobControllerCore
from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.core.state import State as JobState
from services.job_controller.core.workloads.core import WorkloadsCore
from services.job_controller.core.workloads.state import WorkloadsState
from services.queue_controller.core.core import QueueControllerCore
from services.queue_controller.core.state import State as QueueState
from shared.runner_types import Event, Output


class Controllers:
    def __init__(self) -> None:
        self.job_core = JobControllerCore()
        self.queue_core = QueueControllerCore()
        self.workloads_core = WorkloadsCore()
        self.jobs: JobState = self.job_core.initial()
        self.queues: QueueState = self.queue_core.initial()
        self.workloads: WorkloadsState = self.workloads_core.initial()

    def fold(self, event: Event) -> None:
        self.jobs = self.job_core.apply(self.jobs, event)
        self.queues = self.queue_core.apply(self.queues, event)
        self.workloads_core.apply(self.workloads, event)

    def reconcile(self, now: float) -> list[tuple[str, Output]]:
        """What each controller would write now, with its name (the events' producer; admission's events
        the workloads core asks for carry the job-controller's name as well)."""
        outputs = [(self.job_core.name, o) for o in self.job_core.reconcile(self.jobs, now)]
        outputs += [(self.queue_core.name, o) for o in self.queue_core.reconcile(self.queues, now)]
        outputs += [(self.job_core.name, o) for o in self.workloads_core.reconcile(self.workloads, now)]
        self.workloads.notes.clear()  # the stack's service logs them; a simulation has no log to read
        return outputs

    def next_deadline(self, now: float) -> float | None:
        """The first moment after `now` at which the job-controller acts without any new event: a delayed
        policy action (a timeout) falls due, a finished job's ttlSecondsAfterFinished runs out, or a
        CronJob fires. The service loop finds these by reconciling on a timer; the simulated clock jumps to
        them instead."""
        moments: list[float] = []
        for record in self.jobs.jobs.values():
            if not record.active or record.job is None:
                continue
            moments.extend(p.due for p in record.pending if p.due is not None)
            ttl = record.job.ttl_seconds_after_finished
            finished_at = record.published.last_transition_time if record.published else None
            if ttl is not None and finished_at is not None and record.phase in FINAL_PHASES:
                moments.append(finished_at + ttl)
        cron = self.workloads_core.next_moment(self.workloads, now)
        if cron is not None:
            moments.append(cron)
        return min((t for t in moments if t > now), default=None)
