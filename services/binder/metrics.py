"""The binder's metrics, and the few reasons a plan's rejection is counted under (pure: the verdict's
text names pods and nodes, too many values for a label). The binder's leader sees every plan and holds
the ledger, so the cluster-wide series it exports are exported once (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from contracts.evictions import PREEMPT, RECLAIM, eviction_cause
from shared.telemetry.metrics import STAGE_BUCKETS, Registry, exponential_buckets
from shared.telemetry.scraped import Rows, SeriesGroup

# Volcano's eviction transaction actions (lahar has no gang-level preempt and reclaim actions)
EVICTING_ACTIONS = frozenset({PREEMPT, RECLAIM, "gangpreempt", "gangreclaim"})
PRE_BIND, BIND = "PreBind", "Bind"  # Volcano's per-task scheduling stages that are the binder's

# Checked in order against the verdict's text (services/binder/core/verify.py, core.py): first match wins.
_REASONS = (
    ("appears more than once", "duplicate_pod"),
    ("is already bound", "already_bound"),
    ("is terminating", "terminating"),
    ("already terminating", "terminating"),
    ("not Pending", "not_pending"),
    ("is NotReady", "node_not_ready"),
    ("silent for", "node_not_ready"),
    ("is unschedulable", "node_unschedulable"),
    ("is full", "node_full"),
    ("does not fit", "insufficient_resources"),
    ("capability exceeded", "queue_capability"),
    ("not on node", "victim_moved"),
    ("not found", "not_found"),
    ("the binder failed on this plan", "binder_error"),
    ("stale plan", "stale"),
    ("could not be committed", "retries_exhausted"),
)


def rejection_reason(verdict: str) -> str:
    return next((label for text, label in _REASONS if text in verdict), "other")


class BinderMetrics:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.accepted = registry.counter("lahar_plans_accepted_total", "Plans committed to the log")
        self.rejected = registry.counter(
            "lahar_plans_rejected_total",
            "Plans rejected (PlanRejected), or dropped as undecodable (reason invalid)",
            ("reason",),
        )
        self.failures = registry.counter(
            "lahar_plans_failed_total", "Tries at handling a plan that raised (retried, then dead-lettered)"
        )
        self.dead_letters = registry.counter(
            "lahar_plans_dead_lettered_total",
            "Plans moved to LAHAR_DEADLETTER, by reason (undecodable, handling_failed, retries_exhausted)",
            ("reason",),
        )
        self.preemption_victims = registry.gauge(
            "volcano_pod_preemption_victims", "Number of victims evicted by the last committed eviction plan"
        )
        self.bind_latency_ms = registry.histogram(
            "lahar_bind_latency_milliseconds",
            "From the scheduler sending a plan to its events being committed",
            buckets=exponential_buckets(1, 2, 14),
        )
        self.heartbeats = registry.counter(
            "lahar_heartbeats_received_total",
            "Node heartbeats received, by result (ok, invalid)",
            ("result",),
        )
        self.eviction_transactions = registry.counter(
            "volcano_eviction_transactions_total",
            "Committed eviction plans (a statement's evictions, all or none), by the action deciding them",
            ("action",),
        )
        self.stage_ms = registry.histogram(
            "volcano_scheduling_stage_duration_milliseconds",
            "Per-task scheduling stage durations in milliseconds (PreBind: checking the task's plan against "
            "the ledger; Bind: committing its events)",
            ("stage",),
            buckets=STAGE_BUCKETS,
        )

    def committed(self, binds: int, evictions: list[str], check_ms: float, commit_ms: float) -> None:
        """An accepted plan's events are in the log: `evictions` are their reasons."""
        if evictions:
            self.preemption_victims.set(len(evictions))
            action = eviction_cause(evictions[0])
            if action in EVICTING_ACTIONS:
                self.eviction_transactions.labels(action).inc()
        if binds:
            pre_bind, bind = self.stage_ms.labels(PRE_BIND), self.stage_ms.labels(BIND)
            for _ in range(binds):
                pre_bind.observe(check_ms)
                bind.observe(commit_ms)

    def export(self, read: Callable[[], Mapping[str, Rows]]) -> None:
        """The ledger's allocation series, read at scrape time (services/binder/exported.py)."""
        group = SeriesGroup(self.registry, read)
        self.registry.scraped(
            "lahar_node_allocatable",
            "What a node offers, by resource, in base units (cpu in cores, memory in bytes, pods)",
            ("node", "resource"),
            group=group,
        )
        self.registry.scraped(
            "lahar_node_allocated",
            "What the pods on a node request, by resource, in base units (terminating pods included)",
            ("node", "resource"),
            group=group,
        )
        self.registry.scraped(
            "lahar_tenant_allocated",
            "What a tenant (namespace, queue) holds on nodes, by resource, in base units",
            ("namespace", "queue", "resource"),
            group=group,
        )
