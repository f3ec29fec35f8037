"""Metric families whose series are read from a service's state when Prometheus scrapes (`Scraped`), and
rows several families compute together once per scrape (`SeriesGroup`); the registry that serves them is
shared/telemetry/metrics.py, which writes these families' text with `Scraped.exposition`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol, cast

from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class Scrapes(Protocol):
    """What a SeriesGroup reads of its registry: how many scrapes it has served."""

    generation: int


Rows = Iterable[tuple[Sequence[str], float]]


class Scraped(Collector):
    """A gauge (or counter) family whose series are read from the service's state when Prometheus
    scrapes: each source yields (label values, value) rows. For facts the state already holds (a queue's
    deserved share, a node's allocation, a job's scheduling time): nothing to update on the hot path,
    and a series goes away with its fact (a deleted job) without anything to remove.

    The registry writes these families' text itself (`exposition`) rather than through prometheus-client,
    which builds a sample object per row and escapes every label again: the binder's node series (a
    series per node and resource) took 537 ms a scrape at 10,000 nodes, on the loop that commits every
    plan. A row's line is kept while the row is in each scrape, and written again only when its value
    changed (a node's allocatable never does; most nodes' allocation does not between two scrapes)."""

    def __init__(self, name: str, help: str, labels: Sequence[str], kind: str) -> None:
        if kind not in ("gauge", "counter"):
            raise ValueError(f"{name}: a scraped family is a gauge or a counter, not {kind!r}")
        self.name = name
        self.help = help
        self.label_names = tuple(labels)
        self.kind = kind
        self.sources: list[Callable[[], Rows]] = []
        # label values -> (value, line as written), for the rows of the last scrape
        self._lines: dict[tuple[str, ...], tuple[float, str]] = {}
        # prometheus-client's order: labels sorted by name
        self._label_order = sorted(range(len(self.label_names)), key=lambda i: self.label_names[i])

    def source(self, read: Callable[[], Rows]) -> None:
        """Add where the series come from (several instances of a component in one process: one each)."""
        self.sources.append(read)

    def describe(self) -> Iterable[Family]:
        # registered for its names (prometheus-client refuses a clash with another family's)
        kind = "gauge" if self.kind == "gauge" else "unknown"
        if self.kind == "counter" and self.name.endswith("_total"):
            return [Family(self.name[: -len("_total")], self.help, "counter")]
        return [Family(self.name, self.help, kind)]

    def collect(self) -> Iterator[Family]:
        return iter(())  # written by `exposition`, after prometheus-client's families

    def exposition(self) -> str:
        """The family in the text format generate_latest writes (0.0.4): HELP, TYPE, a line per row."""
        name = self.name
        # a counter named without `_total` is exposed untyped (see the module's docstring)
        kind = "gauge" if self.kind == "gauge" else "counter" if name.endswith("_total") else "untyped"
        help_text = self.help.replace("\\", r"\\").replace("\n", r"\n")
        lines = [f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"]
        known = self._lines
        kept: dict[tuple[str, ...], tuple[float, str]] = {}
        for read in self.sources:
            for label_values, value in read():
                values = tuple(label_values)
                last = known.get(values) or kept.get(values)
                if last is None or last[0] != value:
                    # the line up to its value: `name{labels} `, escaped once per row
                    head = self._head(values) if last is None else last[1][: last[1].rindex(" ") + 1]
                    last = (value, f"{head}{_go_float(value)}\n")
                kept[values] = last
                lines.append(last[1])
        self._lines = kept
        return "".join(lines)

    def _head(self, values: tuple[str, ...]) -> str:
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name}: {len(values)} label values for labels {self.label_names}")
        if not values:
            return f"{self.name} "
        pairs = ",".join(f'{self.label_names[i]}="{_escape_label(values[i])}"' for i in self._label_order)
        return f"{self.name}{{{pairs}}} "


# how prometheus-client writes a value (+Inf, NaN, 1e+06), untyped there
_go_float = cast(Callable[[float], str], floatToGoString)


def _escape_label(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class SeriesGroup:
    """The rows of several scraped families computed together, once per scrape: `read` returns every
    family's rows by name, and `family(name)` is the source to give that family."""

    def __init__(self, registry: Scrapes, read: Callable[[], Mapping[str, Rows]]) -> None:
        self._registry = registry
        self._read = read
        self._generation = -1
        self._rows: Mapping[str, Rows] = {}

    def family(self, name: str) -> Callable[[], Rows]:
        def rows() -> Rows:
            if self._generation != self._registry.generation:
                self._rows = self._read()
                self._generation = self._registry.generation
            return self._rows.get(name, ())

        return rows
