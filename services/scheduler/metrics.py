"""A scheduler replica's metrics, with Volcano's names where Volcano has the series (reference §5), and
what one session means for them (pure: `session_outcome`)."""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass

from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.snapshot import ClusterSnapshot, podgroup_key
from services.scheduler.pending_book import PendingBook
from shared.telemetry.metrics import Gauge, Registry, exponential_buckets


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """The session's verdict on the PodGroups this replica owns."""

    owned: int  # PodGroups (explicit or implicit) the session saw and this replica owns
    scheduled: int  # owned PodGroups that got binds
    unschedulable: int  # owned PodGroups left with an Unschedulable condition and no binds
    unschedulable_tasks: int  # their pods still waiting for a node


def session_outcome(
    result: SessionResult, snapshot: ClusterSnapshot, owned: Container[str]
) -> SessionOutcome:
    mine = [key for key in result.podgroups if key in owned]
    placed = {b.job for plan in result.plans for b in plan.binds}
    stuck = {
        key
        for key in mine
        if key not in placed
        and any(c.type == "Unschedulable" and c.status == "True" for c in result.podgroups[key].conditions)
    }
    bound = result.binds
    # a walk over every live pod, so only when some owned PodGroup is stuck
    waiting = sum(
        1
        for pod in (snapshot.pods if stuck else ())
        if not pod.spec.node_name
        and pod.meta.deletion_timestamp is None
        and pod.meta.key not in bound
        and podgroup_key(pod) in stuck
    )
    return SessionOutcome(len(mine), len(placed.intersection(mine)), len(stuck), waiting)


class SchedulerMetrics:
    def __init__(self, registry: Registry) -> None:
        self.e2e_latency_ms = registry.histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (one session: snapshot, actions, plans)",
            buckets=exponential_buckets(5, 2, 10),
        )
        self.attempts = registry.counter(
            "volcano_schedule_attempts_total",
            "Number of attempts to schedule PodGroups, by result (scheduled, unschedulable)",
            ("result",),
        )
        self.unschedulable_jobs = registry.gauge(
            "volcano_unschedule_job_count", "Owned PodGroups the last session could not schedule"
        )
        self.unschedulable_tasks = registry.gauge(
            "volcano_unschedule_task_count", "Pods of those PodGroups still waiting for a node"
        )
        self.plans_published = registry.counter(
            "lahar_plans_published_total", "Plans sent to the binder on LAHAR_PLANS"
        )
        self.plan_publish_failures = registry.counter(
            "lahar_plan_publish_failures_total", "Plans the bus did not take (re-planned next session)"
        )
        self.plans_expired = registry.counter(
            "lahar_plans_expired_total",
            "Assumed plans neither committed nor rejected in time, forgotten so their pods are re-planned",
        )
        self.sessions = registry.counter("lahar_scheduler_sessions_total", "Sessions this replica ran")
        self.sessions_skipped = registry.counter(
            "lahar_scheduler_sessions_skipped_total",
            "Sessions due (periodic, freed capacity) not opened: nothing this replica owns could change",
        )
        # CPU, not wall time: under contention a session's wall time says more about the machine
        self.session_cpu = registry.counter(
            "lahar_scheduler_session_cpu_seconds_total", "CPU seconds of this replica's sessions"
        )
        self.owned_podgroups = registry.gauge(
            "lahar_owned_podgroups", "PodGroups this replica owns on the ring (as of its last session)"
        )
        self.usage_reports = registry.counter(
            "lahar_scheduler_usage_reports_total",
            "Node usage reports received (with the usage plugin), by outcome (ok, invalid)",
            ("outcome",),
        )
        self.usage_nodes = registry.gauge(
            "lahar_scheduler_usage_fresh_nodes", "Nodes with a fresh usage sample at the last session"
        )
        self.podgroups_pending = registry.gauge(
            "lahar_podgroup_pending",
            "Owned PodGroups that wait, by queue and by the reason of their Unschedulable condition"
            " (InsufficientClusterCapacity, InsufficientQueueQuota, NeverFits, ...)",
            ("queue", "reason"),
        )
        self.podgroups_missing = registry.gauge(
            "lahar_podgroup_missing_resource",
            "What the cluster lacks for owned PodGroups waiting for room (InsufficientClusterCapacity), by"
            " queue and resource: cores, bytes, GPUs, pods",
            ("queue", "resource"),
        )
        self._pending_labels: set[tuple[str, str]] = set()
        self._missing_labels: set[tuple[str, str]] = set()

    def pending(self, book: PendingBook) -> None:
        """Every series the book no longer has goes to 0 (a gauge set once stays exported)."""
        self._pending_labels = _set_all(self.podgroups_pending, book.counts(), self._pending_labels)
        self._missing_labels = _set_all(self.podgroups_missing, book.missing(), self._missing_labels)

    def session(self, duration_ms: float, cpu_s: float, outcome: SessionOutcome) -> None:
        self.e2e_latency_ms.observe(duration_ms)
        self.sessions.inc()
        self.session_cpu.inc(cpu_s)
        self.attempts.labels("scheduled").inc(outcome.scheduled)
        self.attempts.labels("unschedulable").inc(outcome.unschedulable)
        self.unschedulable_jobs.set(outcome.unschedulable)
        self.unschedulable_tasks.set(outcome.unschedulable_tasks)
        self.owned_podgroups.set(outcome.owned)


def _set_all(
    gauge: Gauge, values: Mapping[tuple[str, str], float], before: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    for labels in before - values.keys():
        gauge.labels(*labels).set(0)
    for labels, value in values.items():
        gauge.labels(*labels).set(value)
    return set(values)
