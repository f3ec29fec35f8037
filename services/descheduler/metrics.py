"""The descheduler's Prometheus metrics (ops/grafana/lahar-overview.json has a row of them)."""

from __future__ import annotations

from collections.abc import Iterable

from services.descheduler.core.balance import NORMAL, OVER, UNDER, UNKNOWN
from services.descheduler.core.plan import DeschedulingResult
from shared.telemetry.metrics import Registry, exponential_buckets

CLASSES = (UNDER, OVER, NORMAL, UNKNOWN)


class DeschedulerMetrics:
    def __init__(self, registry: Registry) -> None:
        self.evictions = registry.counter(
            "lahar_descheduler_evictions_total",
            "Evictions the descheduler sent to the binder, by plugin and reason (overutilized:<resources>, "
            "underutilized)",
            ("plugin", "reason"),
        )
        self.dry_run_evictions = registry.counter(
            "lahar_descheduler_dry_run_evictions_total",
            "Evictions a dry run would have sent, by plugin and reason",
            ("plugin", "reason"),
        )
        self.nodes = registry.gauge(
            "lahar_descheduler_nodes",
            "Nodes per class at the last run, by plugin: under (below every threshold), over (above a "
            "target), normal, unknown (LoadAware: no fresh usage)",
            ("plugin", "class"),
        )
        self.runs = registry.counter(
            "lahar_descheduler_runs_total", "Descheduling runs, by outcome", ("outcome",)
        )
        self.run_seconds = registry.histogram(
            "lahar_descheduler_run_seconds",
            "How long a run took, usage queries included",
            buckets=exponential_buckets(0.001, 4, 10),
        )
        self.plans_unsent = registry.counter(
            "lahar_descheduler_plans_unsent_total", "Eviction plans the bus did not take"
        )

    def ran(self, result: DeschedulingResult, *, dry_run: bool, seconds: float) -> None:
        self.run_seconds.observe(seconds)
        self.runs.labels("evicted" if result.evictions else "nothing").inc()
        counter = self.dry_run_evictions if dry_run else self.evictions
        for eviction in result.evictions:
            counter.labels(eviction.plugin, eviction.label).inc()
        for plugin in {run.plugin for run in result.runs}:
            self._classes(
                plugin, (c for run in result.runs if run.plugin == plugin for c in run.classes.values())
            )

    def _classes(self, plugin: str, classes: Iterable[str]) -> None:
        counts = dict.fromkeys(CLASSES, 0)
        for name in classes:
            counts[name] += 1
        for name, count in counts.items():
            self.nodes.labels(plugin, name).set(count)
