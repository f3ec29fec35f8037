"""The binder's metrics, and the few reasons a plan's rejection is counted under (pure: the verdict's
text names pods and nodes, too many values for a label)."""

from __future__ import annotations

from shared.telemetry.metrics import Registry, exponential_buckets

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
