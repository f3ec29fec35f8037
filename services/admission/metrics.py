"""Admission's own metrics (the runner's are shared.runner's): API requests, write conflicts, intake."""

from __future__ import annotations

from shared.telemetry.metrics import Registry


class AdmissionMetrics:
    def __init__(self, registry: Registry) -> None:
        self.requests = registry.counter(
            "lahar_admission_requests_total",
            "API requests by verb and result (accepted, rejected, conflict, unavailable)",
            ("verb", "result"),
        )
        self.duration = registry.histogram(
            "lahar_admission_request_duration_seconds", "Time to answer an API request", ("verb",)
        )
        self.conflicts = registry.counter(
            "lahar_admission_write_conflicts_total",
            "Writes refused because their object's subject moved on (decided again after catching up)",
        )
        self.intake = registry.counter(
            "lahar_admission_intake_messages_total",
            "Intake manifests by result (accepted, rejected, retried, dead_letter)",
            ("result",),
        )
