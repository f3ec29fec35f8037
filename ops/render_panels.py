"""Render the key panels of the lahar overview dashboard to PNG from a Prometheus, for people without Grafana.

    python -m ops.render_panels --prometheus http://127.0.0.1:9090 [--out DIR] [--since 1h]
        [--step SECONDS] [--scrape-interval SECONDS] [--panel TITLE ...] [-o table|json]

The queries are the dashboard's own (ops/grafana/lahar-overview.json, every variable at "All"), so a PNG
shows what the Grafana panel would. A panel whose queries return nothing is still drawn, saying "no
data", and reported as such; a query Prometheus refuses, or a Prometheus it cannot reach, ends the
command with status 1. Run it from the repository's root (it imports `ops`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, PercentFormatter

from ops import panels as dash
from ops.panel_data import bars, heatmap_grid
from ops.prometheus_api import PrometheusError, Series, query, query_range

OVERVIEW = dash.GRAFANA_DIR / "lahar-overview.json"
# The panels of Volcano's overview that the seed asks for, and the tenants' use over time.
KEY_PANELS = (
    "Job scheduling latency heatmap",
    "Slowest jobs",
    "Job scheduling time CV (fairness between jobs)",
    "Node allocation CV (balance between nodes)",
    "Queue CPU: allocated, deserved, capability",
    "Tenant CPU allocated",
)
WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.0, 100  # 800 x 400 pixels
BAR_LIMIT = 10


@dataclass(frozen=True)
class Rendered:
    panel: str
    file: str
    series: int  # how many series the panel's queries returned with a number in them (0: "no data")


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _bytes(value: float, _: object = None) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(value)


def _format_axis(ax: Axes, unit: str, axis: str = "y") -> None:
    target = ax.yaxis if axis == "y" else ax.xaxis
    if unit == "percentunit":
        target.set_major_formatter(PercentFormatter(1.0))
    elif unit == "bytes":
        target.set_major_formatter(FuncFormatter(_bytes))
    elif unit in ("ms", "s"):
        (ax.set_ylabel if axis == "y" else ax.set_xlabel)(unit)


def _clock(seconds: float, _: object = None) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%H:%M:%S")


def _time_axis(ax: Axes) -> None:
    # unix seconds on the axis, written as UTC times of day; ticks on multiples of 10 s, 30 s, 1 min, 10 min
    # (the epoch starts at midnight, so those fall on round times)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 1.5, 3, 6, 10], integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(_clock))
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("UTC", fontsize=8)


def draw_lines(ax: Axes, drawn: list[tuple[str, Series]], unit: str, stacked: bool) -> None:
    if stacked and drawn:
        times = sorted({t for _, s in drawn for t, _ in s.points})
        values = [[dict(s.points).get(t, 0.0) for t in times] for _, s in drawn]
        ax.stackplot(list(times), values, labels=[name for name, _ in drawn], alpha=0.7)
    else:
        for name, series in drawn:
            ax.plot([t for t, _ in series.points], [v for _, v in series.points], label=name, lw=1.2)
    _time_axis(ax)
    _format_axis(ax, unit)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if drawn:  # beside the plot, where it hides no line
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _amount(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value / 1000:.3g} s" if value >= 1000 else f"{value:.3g} ms"
    return f"{value:.3g}{' ' + unit if unit else ''}"


def bucket_labels(bounds: tuple[str, ...], unit: str) -> list[str]:
    """≤ each bucket's upper bound; the +Inf bucket is "> the one below"."""
    labels = []
    for i, bound in enumerate(bounds):
        if bound != "+Inf":
            labels.append(f"≤ {_amount(float(bound), unit)}")
        else:
            labels.append(f"> {_amount(float(bounds[i - 1]), unit)}" if i else "+Inf")
    return labels


def draw_heatmap(ax: Axes, buckets: list[Series], unit: str) -> int:
    grid = heatmap_grid(buckets)
    if not grid.bounds:
        return 0
    dates = list(grid.times)
    step = (dates[1] - dates[0]) if len(dates) > 1 else 1.0
    edges = [*dates, dates[-1] + step]
    image = ax.pcolormesh(edges, range(len(grid.bounds) + 1), grid.counts, cmap="Oranges", shading="flat")
    ax.set_yticks([i + 0.5 for i in range(len(grid.bounds))], bucket_labels(grid.bounds, unit), fontsize=7)
    ax.set_ylabel("le (upper bound)")
    ax.figure.colorbar(image, ax=ax, label="jobs")
    _time_axis(ax)
    return len(grid.bounds)


def draw_bars(ax: Axes, values: list[tuple[str, float]], unit: str) -> None:
    shown = list(reversed(values[:BAR_LIMIT]))  # the largest on top
    ax.barh([name for name, _ in shown], [v for _, v in shown], color="tab:orange")
    ax.tick_params(axis="y", labelsize=7)
    _format_axis(ax, unit, axis="x")
    ax.grid(axis="x", alpha=0.3)


def _no_data(ax: Axes, exprs: list[str]) -> None:
    """An empty frame that says so, with the queries that returned nothing."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.text(0.5, 0.6, "no data", ha="center", va="center", transform=ax.transAxes, fontsize=14, color="grey")
    shown = "\n".join(e if len(e) <= 110 else e[:107] + "..." for e in exprs[:4])
    ax.text(0.5, 0.3, shown, ha="center", va="center", transform=ax.transAxes, fontsize=6, color="grey")


def _organize_order(panel: dict[str, Any]) -> tuple[str, ...]:
    for step in panel.get("transformations", []):
        if step.get("id") == "organize":
            index = step["options"].get("indexByName", {})
            return tuple(sorted(index, key=index.get))
    return ()


@dataclass(frozen=True)
class Frame:
    """What every panel is queried for: the Prometheus, the time range, Grafana's variables."""

    url: str
    start: float
    end: float
    window: dash.Window
    variables: dict[str, str]


def render_panel(panel: dict[str, Any], frame: Frame, out: Path) -> Rendered:
    """Query one panel's targets and draw them into out/<slug>.png."""
    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    # a heatmap keeps its unit with its y axis' options
    unit = defaults.get("unit") or panel.get("options", {}).get("yAxis", {}).get("unit", "")
    stacked = defaults.get("custom", {}).get("stacking", {}).get("mode") == "normal"
    url, start, end, window = frame.url, frame.start, frame.end, frame.window
    # a Figure on the Agg canvas, without pyplot: no display, no global figure state
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    count = 0
    lines: list[tuple[str, Series]] = []
    for target in panel["targets"]:
        if target.get("hide"):
            continue
        expr = dash.expand(target["expr"], window, frame.variables)
        legend = target.get("legendFormat", "")
        if panel["type"] in ("table", "bargauge", "stat") and target.get("instant"):
            values = bars(query(url, expr, end), legend, _organize_order(panel))
            if values:
                draw_bars(ax, values, unit)
            count += len(values)
        elif panel["type"] == "heatmap":
            count += draw_heatmap(ax, query_range(url, expr, start, end, window.step_s), unit)
        else:
            found = [s for s in query_range(url, expr, start, end, window.step_s) if s.finite]
            lines += [(dash.legend(legend, s.labels), s) for s in found]
            count += len(found)
    if panel["type"] not in ("table", "bargauge", "stat", "heatmap") or lines:
        draw_lines(ax, lines, unit, stacked)
    if count == 0:
        _no_data(ax, [t["expr"] for t in panel["targets"] if not t.get("hide")])
    ax.set_title(panel["title"], fontsize=11, loc="left")
    path = out / f"{slug(panel['title'])}.png"
    fig.savefig(path)
    return Rendered(panel["title"], str(path), count)


def render(
    url: str, out: Path, titles: tuple[str, ...], since_s: float, step_s: float, scrape_interval_s: float
) -> list[Rendered]:
    board = json.loads(OVERVIEW.read_text())
    by_title = {p["title"]: p for p in dash.panels(board)}
    unknown = [t for t in titles if t not in by_title]
    if unknown:
        raise ValueError(f"no panel titled {unknown} in {OVERVIEW.name}; panels: {sorted(by_title)}")
    out.mkdir(parents=True, exist_ok=True)
    end = time.time()
    start = end - since_s
    window = dash.Window(range_s=since_s, step_s=step_s, scrape_interval_s=scrape_interval_s)
    frame = Frame(url, start, end, window, dash.all_values(board))
    return [render_panel(by_title[t], frame, out) for t in titles]


def _seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 15m or 1h, got {text!r}")
    number, unit = float(match.group(1)), match.group(2) or "s"
    return number * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.render_panels", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prometheus", required=True, metavar="URL", help="e.g. http://127.0.0.1:9090")
    parser.add_argument(
        "--out", default="panels", type=Path, help="directory for the PNGs (default ./panels)"
    )
    parser.add_argument("--since", default="1h", type=_seconds, help="time range ending now (default 1h)")
    parser.add_argument("--step", default=None, type=_seconds, help="resolution (default: range / 240)")
    parser.add_argument(
        "--scrape-interval",
        default="15s",
        type=_seconds,
        help="Prometheus's, for $__rate_interval (default 15s)",
    )
    parser.add_argument(
        "--panel",
        action="append",
        default=[],
        metavar="TITLE",
        help="a panel by title (repeatable; default: the key panels)",
    )
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    step = args.step or max(args.since / 240, 1.0)
    try:
        done = render(
            args.prometheus, args.out, tuple(args.panel) or KEY_PANELS, args.since, step, args.scrape_interval
        )
    except (PrometheusError, ValueError) as exc:
        print(f"render_panels: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps([asdict(r) for r in done], indent=2))
    else:
        for r in done:
            print(f"{r.file}\t{f'{r.series} series' if r.series else 'no data'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
