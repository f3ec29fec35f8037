"""The event-sourced loop's own metrics (no Volcano equivalent exists, hence lahar_runner_*)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from shared.telemetry.metrics import Registry, exponential_buckets


class RunnerMetrics:
    """The series of one service (label service=<core name>) in a registry."""

    def __init__(self, registry: Registry, service: str) -> None:
        self.service = service
        self._applied: dict[str, Any] = {}  # phase -> its series (every event counts: looked up once)
        self._published: dict[tuple[str, str], Any] = {}  # (type, result) -> its series
        self._sent: dict[str, Any] = {}  # result -> its series of messages
        self.events_applied = registry.counter(
            "lahar_runner_events_applied_total",
            "Records of the log folded into the state (a bundle counts once)",
            ("service", "phase"),
        )
        self.events_skipped = registry.counter(
            "lahar_runner_events_skipped_total",
            "Log records quarantined, never applied, by reason: not_an_event, invalid_payload (a payload "
            "its type does not allow), wrong_object (a payload about another object than its subject), "
            "apply_error (the core raised applying it)",
            ("service", "reason"),
        )
        self.touched_errors = registry.counter(
            "lahar_runner_touched_errors_total",
            "Events applied whose touched() raised: everything was reconciled instead",
            ("service",),
        ).labels(service)
        self.reconcile_errors = registry.counter(
            "lahar_runner_reconcile_errors_total",
            "Reconciles of a key (or a full reconcile, or due()) that raised in the core; each is retried "
            "with backoff while the other keys go on",
            ("service",),
        ).labels(service)
        self.reconcile_failing = registry.gauge(
            "lahar_runner_reconcile_failing_keys",
            "Keys whose last reconcile raised and that wait for a retry",
            ("service",),
        ).labels(service)
        self.log_gaps = registry.counter(
            "lahar_runner_log_gaps_total",
            "Gaps in following the log that the client healed by itself (its consumer recreated, or "
            "records skipped): the reader was cut off for a while with its connection up",
            ("service",),
        ).labels(service)
        self.quarantine_records = registry.counter(
            "lahar_runner_quarantine_records_total",
            "Quarantine records by result (recorded, duplicate: recorded before, refused, dropped)",
            ("service", "result"),
        )
        self.last_applied_seq = registry.gauge(
            "lahar_runner_last_applied_seq", "Sequence of the last event applied", ("service",)
        ).labels(service)
        self.replay_seconds = registry.gauge(
            "lahar_runner_replay_duration_seconds", "Time the last start-up replay took", ("service",)
        ).labels(service)
        self.outputs = registry.counter(
            "lahar_runner_outputs_published_total",
            "Outputs published, by event type and result (stored, duplicate, conflict, error)",
            ("service", "type", "result"),
        )
        self.messages = registry.counter(
            "lahar_runner_messages_published_total",
            "Messages the outputs went out in (a bundle of several events is one), by result",
            ("service", "result"),
        )
        self.reconcile_seconds = registry.histogram(
            "lahar_runner_reconcile_duration_seconds",
            "Time of one reconcile including publishing its outputs",
            ("service",),
            exponential_buckets(0.0005, 2, 16),
        ).labels(service)
        self.reconciles = registry.counter(
            "lahar_runner_reconciles_total",
            "Reconciles by scope (keys: what a batch touched or the timer found due; full: everything)",
            ("service", "scope"),
        )
        self.reconciled_keys = registry.counter(
            "lahar_runner_reconciled_keys_total",
            "Keys reconciled one by one (full reconciles excluded)",
            ("service",),
        ).labels(service)
        self.checkpoints = registry.counter(
            "lahar_runner_checkpoints_total",
            "Checkpoint writes by result (ok, fenced, error)",
            ("service", "result"),
        )
        self.checkpoint_seq = registry.gauge(
            "lahar_runner_checkpoint_seq", "Sequence of the last checkpoint written", ("service",)
        ).labels(service)
        self.leader = registry.gauge(
            "lahar_runner_leader", "1 while this instance leads (or needs no election)", ("service",)
        ).labels(service)

    def applied(self, phase: str, seq: int) -> None:
        child = self._applied.get(phase)
        if child is None:
            child = self._applied[phase] = self.events_applied.labels(self.service, phase)
        child.inc()
        self.last_applied_seq.set(seq)

    def reconciled(self, scope: str, keys: int) -> None:
        self.reconciles.labels(self.service, scope).inc()
        self.reconciled_keys.inc(keys)

    def published(self, event_type: str, result: str, count: int = 1) -> None:
        # one child per (type, result), looked up once: labels() costs more than the increment
        key = (event_type, result)
        child = self._published.get(key)
        if child is None:
            child = self._published[key] = self.outputs.labels(self.service, event_type, result)
        child.inc(count)

    def sent(self, results: Iterable[str]) -> None:
        """One message per result: how each message of a publish operation ended."""
        for result, count in Counter(results).items():
            child = self._sent.get(result)
            if child is None:
                child = self._sent[result] = self.messages.labels(self.service, result)
            child.inc(count)

    def checkpointed(self, result: str) -> None:
        self.checkpoints.labels(self.service, result).inc()
