"""A scheduler replica's metrics, with Volcano's names, types, labels and buckets where Volcano has the
series (docs/metrics.md), and what one session means for them (pure: `session_outcome`)."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass

from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.stats import SessionStats
from services.scheduler.exported import QUEUE_FIGURES
from shared.telemetry.metrics import STAGE_BUCKETS, Registry, exponential_buckets_range
from shared.telemetry.scraped import Rows, SeriesGroup


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """The session's verdict on the PodGroups this replica owns."""

    owned: int  # PodGroups (explicit or implicit) the session saw and this replica owns
    scheduled: int  # owned PodGroups that got binds
    unschedulable: int  # owned PodGroups left with an Unschedulable condition and no binds


def session_outcome(result: SessionResult, owned: Container[str]) -> SessionOutcome:
    mine = [key for key in result.podgroups if key in owned]
    placed = {b.job for plan in result.plans for b in plan.binds}
    stuck = sum(
        1
        for key in mine
        if key not in placed
        and any(c.type == "Unschedulable" and c.status == "True" for c in result.podgroups[key].conditions)
    )
    return SessionOutcome(len(mine), len(placed.intersection(mine)), stuck)


# Volcano's buckets (pkg/scheduler/metrics), Go's ExponentialBucketsRange(low, high, count)
SESSION_BUCKETS = exponential_buckets_range(1, 5000, 20)
ACTION_BUCKETS = exponential_buckets_range(1, 2000, 20)
PLUGIN_BUCKETS = exponential_buckets_range(0.1, 100, 15)
JOB_BUCKETS = exponential_buckets_range(100, 120000, 30)
TASK_BUCKETS = exponential_buckets_range(50, 60000, 30)
# Volcano's task stage of a pod a session placed (Watched and Bound: services/scheduler/view.py)
ASSUMED = "Assumed"


class SchedulerMetrics:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.e2e_latency_ms = registry.histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (one session: snapshot, actions, plans)",
            buckets=SESSION_BUCKETS,
        )
        self.open_session_ms = registry.histogram(
            "volcano_open_session_duration_milliseconds",
            "Opening a session in milliseconds: the snapshot's working model and every plugin's open",
            buckets=SESSION_BUCKETS,
        )
        self.action_ms = registry.histogram(
            "volcano_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            ("action",),
            buckets=ACTION_BUCKETS,
        )
        self.plugin_ms = registry.histogram(
            "volcano_plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds, at session open and close",
            ("plugin", "OnSession"),
            buckets=PLUGIN_BUCKETS,
        )
        self.stage_ms = registry.histogram(
            "volcano_scheduling_stage_duration_milliseconds",
            "Per-task scheduling stage durations in milliseconds (Predicate, Scoring here; PreBind, Bind "
            "in the binder)",
            ("stage",),
            buckets=STAGE_BUCKETS,
        )
        self.task_latency_ms = registry.histogram(
            "volcano_task_scheduling_latency_milliseconds",
            "From a pod's creation to a stage in milliseconds: Watched (in the owning replica's view), "
            "Assumed (placed by its session), Bound (its PodBound in the log)",
            ("stage",),
            buckets=TASK_BUCKETS,
        )
        self.job_latency_ms = registry.histogram(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "From a job's creation to the session that scheduled its gang, in milliseconds",
            buckets=JOB_BUCKETS,
        )
        self.attempts = registry.counter(
            "volcano_schedule_attempts_total",
            "Number of attempts to schedule PodGroups, by result (scheduled, unschedulable)",
            ("result",),
        )
        self.preemption_attempts = registry.counter(
            "volcano_total_preemption_attempts", "Preemptor tasks the preempt action tried to place"
        )
        self.unschedulable_jobs = registry.gauge(
            "volcano_unschedule_job_count", "Owned PodGroups the last session could not schedule"
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

    def session(self, duration_ms: float, cpu_s: float, outcome: SessionOutcome, stats: SessionStats) -> None:
        self.e2e_latency_ms.observe(duration_ms)
        self.sessions.inc()
        self.session_cpu.inc(cpu_s)
        self.attempts.labels("scheduled").inc(outcome.scheduled)
        self.attempts.labels("unschedulable").inc(outcome.unschedulable)
        self.unschedulable_jobs.set(outcome.unschedulable)
        self.owned_podgroups.set(outcome.owned)
        self.open_session_ms.observe(stats.open_ms)
        for action, spent in stats.actions_ms.items():
            self.action_ms.labels(action).observe(spent)
        for (plugin, phase), spent in stats.plugins_ms.items():
            self.plugin_ms.labels(plugin, phase).observe(spent)
        for stage, durations in stats.stages_ms.items():
            child = self.stage_ms.labels(stage)
            for spent in durations:
                child.observe(spent)
        if stats.preemption_attempts:
            self.preemption_attempts.inc(stats.preemption_attempts)

    def export(self, read: Callable[[], Mapping[str, Rows]]) -> None:
        """Volcano's per-queue and per-job gauges, read from the replica at each scrape (`read` gives
        every family's rows by name: services/scheduler/exported.py)."""
        group = SeriesGroup(self.registry, read)
        registry = self.registry
        for figure in QUEUE_FIGURES:  # (the scalar family first: ops' checks match names in order)
            registry.scraped(
                f"volcano_queue_{figure}_scalar_resources",
                f"{figure.capitalize()} scalar resources of a queue, in milli-units",
                ("queue_name", "resource"),
                group=group,
            )
            registry.scraped(
                f"volcano_queue_{figure}_milli_cpu",
                f"{figure.capitalize()} CPU of a queue in millicores",
                ("queue_name",),
                group=group,
            )
            registry.scraped(
                f"volcano_queue_{figure}_memory_bytes",
                f"{figure.capitalize()} memory of a queue in bytes",
                ("queue_name",),
                group=group,
            )
        queue = ("queue_name",)
        registry.scraped(
            "volcano_queue_share", "Share of a queue (its largest allocated/deserved)", queue, group=group
        )
        registry.scraped("volcano_queue_weight", "Weight of a queue", queue, group=group)
        registry.scraped(
            "volcano_queue_overused", "1 if a queue holds its deserved on every dimension", queue, group=group
        )
        job = ("job_name", "queue", "job_namespace")
        registry.scraped(
            "volcano_e2e_job_scheduling_duration",
            "From a job's creation to its gang scheduled, in ms",
            job,
            group=group,
        )
        registry.scraped(
            "volcano_e2e_job_scheduling_start_time", "A job's creation time (Unix seconds)", job, group=group
        )
        registry.scraped(
            "volcano_e2e_job_scheduling_last_time",
            "When a job's gang was last scheduled (Unix seconds)",
            job,
            group=group,
        )
        registry.scraped(
            "volcano_unschedule_task_count",
            "Tasks an unschedulable gang lacks (0 once scheduled)",
            ("job_id",),
            group=group,
        )
        registry.scraped(
            "volcano_job_share", "DRF dominant share of a job", ("job_ns", "job_id"), group=group
        )
        registry.scraped(
            "volcano_job_retry_counts",
            "Sessions that left a job's gang unschedulable",
            ("job_id",),
            "counter",
            group=group,
        )
        # why PodGroups wait, for autoscalers (docs/starvation-and-pending.md; pending_book.py)
        registry.scraped(
            "lahar_podgroup_pending",  # pending_book.PENDING
            "Owned PodGroups that wait, by queue and by the reason of their Unschedulable condition"
            " (InsufficientClusterCapacity, InsufficientQueueQuota, NeverFits, ...)",
            ("queue", "reason"),
            group=group,
        )
        registry.scraped(
            "lahar_podgroup_missing_resource",  # pending_book.MISSING
            "What the cluster lacks for owned PodGroups waiting for room (InsufficientClusterCapacity), by"
            " queue and resource: cores, bytes, GPUs, pods",
            ("queue", "resource"),
            group=group,
        )
