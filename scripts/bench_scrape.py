"""What a scrape of the binder's node series costs (docs/benchmarks.md, "A scrape of the node series"):
`lahar_node_allocatable` and `lahar_node_allocated`, a series per node and resource (4 resources), at
1,000 and 10,000 nodes.

- `prometheus_client`: the rows as prometheus-client samples, written by its generate_latest (how the
  registry wrote scraped families before);
- `first`, `next` and `every value changed`: the registry's own writing (shared/telemetry/scraped.py,
  `Scraped.exposition`): the first scrape (every row's line written), the ones after when nothing changed
  (the lines kept), and when every value changed (each line written again, its labels' text kept).

    PYTHONPATH=. python scripts/bench_scrape.py

CPU milliseconds per scrape, medians of 5, with a service's collector settings.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric

from shared.service import tune_gc
from shared.telemetry.metrics import Registry
from shared.telemetry.scraped import SeriesGroup

RESOURCES = ("cpu", "memory", "pods", "nvidia.com/gpu")
FAMILIES = ("lahar_node_allocatable", "lahar_node_allocated")
REPEATS = 5


def node_rows(nodes: int) -> dict[str, list[tuple[tuple[str, str], float]]]:
    return {
        family: [((f"node-{i}", r), float(i % 97) * (k + 1)) for i in range(nodes) for r in RESOURCES]
        for k, family in enumerate(FAMILIES)
    }


class AsSamples:
    """The rows as prometheus-client samples (what Scraped.collect yielded before)."""

    def __init__(self, rows: dict[str, list[tuple[tuple[str, str], float]]]) -> None:
        self.rows = rows

    def collect(self) -> Iterator[Any]:
        for name, rows in self.rows.items():
            family = Metric(name, "", "gauge")
            for (node, resource), value in rows:
                family.add_sample(name, {"node": node, "resource": resource}, value)
            yield family


def cpu_ms(scrape: Callable[[], bytes]) -> float:
    runs = []
    for _ in range(REPEATS):
        started = time.process_time()
        scrape()
        runs.append((time.process_time() - started) * 1000)
    return statistics.median(runs)


def main() -> None:
    tune_gc()  # collected as a service is
    for nodes in (1_000, 10_000):
        rows = node_rows(nodes)
        before = cpu_ms(lambda: generate_latest(AsSamples(rows)))  # noqa: B023
        firsts = []
        for _ in range(REPEATS):
            registry = Registry()
            group = SeriesGroup(registry, lambda: rows)  # noqa: B023
            for family in FAMILIES:
                registry.scraped(family, "", ("node", "resource"), group=group)
            started = time.process_time()
            registry.scrape()
            firsts.append((time.process_time() - started) * 1000)
        after = cpu_ms(registry.scrape)
        first = statistics.median(firsts)
        changes = []  # every value changed since the last scrape: each line written again
        for _ in range(REPEATS):
            for family_rows in rows.values():
                family_rows[:] = [(labels, value + 1) for labels, value in family_rows]
            changes.append(_one(registry.scrape))
        changed = statistics.median(changes)
        print(
            f"{nodes} nodes: prometheus_client {before:.0f} ms, first {first:.0f} ms, "
            f"next {after:.0f} ms ({after / before:.2f}x), every value changed {changed:.0f} ms "
            f"({changed / before:.2f}x)"
        )


def _one(scrape: Callable[[], bytes]) -> float:
    started = time.process_time()
    scrape()
    return (time.process_time() - started) * 1000


if __name__ == "__main__":
    main()
