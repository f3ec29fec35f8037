"""What a panel draws, from the series Prometheus returned: pure functions, no plotting.

A heatmap target (format "heatmap") returns one cumulative series per histogram bucket (`le`); like
Grafana, the heatmap shows each bucket's own count, the difference from the bucket below. A table or a
bar gauge shows one value per series (an instant query)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ops.panels import legend as fill_legend
from ops.prometheus_api import Series

HIDDEN_LABELS = frozenset({"__name__", "job", "instance"})  # a target's, not the fact's


@dataclass(frozen=True)
class HeatmapGrid:
    times: tuple[float, ...]  # unix seconds, one column each
    bounds: tuple[str, ...]  # each row's upper bound ("+Inf" for the last bucket), lowest first
    counts: tuple[tuple[float, ...], ...]  # counts[row][column]: observations in that bucket then

    @property
    def total(self) -> float:
        return sum(sum(row) for row in self.counts)


def _bound(series: Series) -> float:
    return float(series.labels.get("le", "nan"))


def heatmap_grid(buckets: list[Series]) -> HeatmapGrid:
    """The per-bucket counts over time from cumulative bucket series; the empty buckets below the lowest
    and above the highest observation are left out, so the rows shown are the ones that say something."""
    ordered = sorted((s for s in buckets if not math.isnan(_bound(s))), key=_bound)
    times = tuple(sorted({t for s in ordered for t, _ in s.points}))
    if not ordered or not times:
        return HeatmapGrid((), (), ())
    cumulative = []
    for series in ordered:
        at = dict(series.points)
        cumulative.append([_number(at.get(t, 0.0)) for t in times])
    counts = [cumulative[0]] + [
        [max(0.0, upper - lower) for upper, lower in zip(cumulative[i], cumulative[i - 1], strict=True)]
        for i in range(1, len(cumulative))
    ]
    used = [i for i, row in enumerate(counts) if any(v > 0 for v in row)]
    if not used:
        return HeatmapGrid(times, (), ())
    rows = range(used[0], used[-1] + 1)
    return HeatmapGrid(
        times,
        tuple(ordered[i].labels["le"] for i in rows),
        tuple(tuple(counts[i]) for i in rows),
    )


def _number(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def bar_label(labels: dict[str, str], legend: str, order: tuple[str, ...] = ()) -> str:
    """A bar's name: the legend template filled in, else the fact's label values (in `order` first)."""
    if legend:
        return fill_legend(legend, labels)
    shown = [k for k in labels if k not in HIDDEN_LABELS]
    keys = [k for k in order if k in shown] + sorted(k for k in shown if k not in order)
    return " / ".join(labels[k] for k in keys) or labels.get("__name__", "value")


def bars(series: list[Series], legend: str, order: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """One (name, latest finite value) per series, largest first."""
    found = []
    for s in series:
        values = [v for _, v in s.points if math.isfinite(v)]
        if values:
            found.append((bar_label(s.labels, legend, order), values[-1]))
    return sorted(found, key=lambda item: item[1], reverse=True)
