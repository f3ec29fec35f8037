"""What a scheduler replica feeds its Volcano series with: each session's figures and timings, the pods
its view sees created and bound, and the per-queue and per-job gauges it exports at scrape time (which
ones: services/scheduler/exported.py, docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contracts.plans import PlanMessage
from services.scheduler.core.framework.plan import QueueUpdate, SessionResult
from services.scheduler.exported import JobBook, Series, exported_jobs, job_series, queue_series
from services.scheduler.metrics import ASSUMED, SchedulerMetrics
from services.scheduler.ownership import Owned
from services.scheduler.pending_book import PendingBook, pending_series
from services.scheduler.view import SchedulerView


class ReplicaSeries:
    """Everything here runs on the event loop, between the replica's steps (a scrape included)."""

    def __init__(
        self,
        metrics: SchedulerMetrics,
        view: Callable[[], SchedulerView],
        owned: Callable[[], Owned],
        clock: Callable[[], float],
    ) -> None:
        self.metrics = metrics
        self._view = view  # the state's view is replaced when a checkpoint loads: asked each time
        self._owned = owned
        self._clock = clock
        self.queue_figures: dict[str, QueueUpdate] = {}  # the last session's, every queue
        self.jobs = JobBook()
        self.pending = PendingBook()  # the owned PodGroups that wait, and why
        metrics.export(self.exported)

    def session(self, result: SessionResult, plans: Sequence[PlanMessage]) -> None:
        """A session's figures, and the latencies of the jobs it scheduled and of the pods it placed.
        Called before its plans are assumed (the view shows the pods as the log has them)."""
        self.queue_figures = result.queues
        self.jobs.record(result.jobs)
        view, now = self._view(), self._clock()
        owned = self._owned()
        self.pending.update(result, lambda key: key in owned and view.podgroup(key) is not None)
        for key, found in result.jobs.items():
            pg = view.podgroup(key) if found.newly_scheduled else None
            if pg is not None:
                self.metrics.job_latency_ms.observe(_ms(now - pg.meta.creation_timestamp))
        assumed = self.metrics.task_latency_ms.labels(ASSUMED)
        for plan in plans:
            for bind in plan.binds:
                pod = view.pod(bind.task)
                if pod is not None:
                    assumed.observe(_ms(now - pod.meta.creation_timestamp))

    def time_tasks(self) -> None:
        """Volcano's Watched and Bound task latencies, for the pods of the PodGroups this replica owns
        (after each batch of live events)."""
        seen = self._view().take_seen()
        if not seen:
            return
        owned, now = self._owned(), self._clock()
        latency = self.metrics.task_latency_ms
        by_stage: dict[str, Any] = {}  # a series looked up once a batch, not once a pod
        for stage, group, created in seen:
            if group in owned:
                series = by_stage.get(stage)
                if series is None:
                    series = by_stage[stage] = latency.labels(stage)
                series.observe(_ms(now - created))

    def exported(self) -> Series:
        """Volcano's per-queue and per-job gauges this replica exports, now."""
        view, owned = self._view(), self._owned()
        podgroups = view.shown.podgroups
        self.jobs.prune(podgroups)
        jobs = exported_jobs(podgroups.values(), view.shown.finished, owned.owns, self._clock())
        self.pending.prune(lambda key: key in podgroups and owned.owns(key))
        return {
            **queue_series(view.all_queues(), self.queue_figures, owned.owns),
            **job_series(jobs, self.jobs),
            **pending_series(self.pending),
        }


def _ms(seconds: float) -> float:
    return max(seconds, 0.0) * 1000
