"""The candidates side by side as a PNG (`lahar advise --plot FILE.png`): one panel per figure, one bar
per candidate in rank order, the recommended one highlighted and a stuck one marked by its outcome
instead of a bar. matplotlib's Agg backend: no display needed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from services.advisor.figures import Figures
from services.advisor.ranking import Advice

# panel title, the figure (None: nothing to draw), unit suffix for the bar labels
PANELS: tuple[tuple[str, Callable[[Figures], float | None], str], ...] = (
    ("makespan (s)", lambda f: f.makespan_s, "s"),
    ("mean job scheduling latency (s)", lambda f: f.latency_mean_s if f.finished else None, "s"),
    ("p99 job scheduling latency (s)", lambda f: f.latency_p99_s if f.finished else None, "s"),
    ("job scheduling latency CV", lambda f: f.job_scheduling_latency_cv if f.finished else None, ""),
    ("node allocation CV", lambda f: f.node_allocation_cv if f.finished else None, ""),
    ("mean utilisation, busiest resource", lambda f: f.utilisation if f.finished else None, ""),
)
RECOMMENDED_COLOUR = "#2b8a3e"
OTHER_COLOUR = "#748ffc"
STUCK_COLOUR = "#c92a2a"


def _label(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.0f}s" if value >= 10 else f"{value:.1f}s"
    return f"{value:.2f}"


def plot_advice(advice: Advice, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.name for r in advice.ranked]
    columns = 3
    rows = (len(PANELS) + columns - 1) // columns
    width = max(10.0, 0.6 * len(names) * columns)
    fig, axes = plt.subplots(rows, columns, figsize=(width, 3.6 * rows), squeeze=False)
    for (title, figure, unit), axis in zip(PANELS, axes.flat, strict=False):
        values = [figure(r.figures) for r in advice.ranked]
        heights = [v or 0.0 for v in values]
        colours = [
            STUCK_COLOUR if not r.figures.finished else RECOMMENDED_COLOUR if r.rank == 1 else OTHER_COLOUR
            for r in advice.ranked
        ]
        bars = axis.bar(range(len(names)), heights, color=colours)
        top = max(heights, default=0.0) or 1.0
        for bar, value, ranked in zip(bars, values, advice.ranked, strict=True):
            f = ranked.figures
            text = f"{f.outcome}, {f.jobs_finished}/{f.jobs} jobs" if value is None else _label(value, unit)
            colour = STUCK_COLOUR if value is None else "black"
            axis.text(
                bar.get_x() + bar.get_width() / 2,
                bar.get_height() + top * 0.02,
                text,
                ha="center",
                va="bottom",
                fontsize=8,
                color=colour,
                rotation=90 if value is None else 0,
            )
        axis.set_title(title, fontsize=10)
        axis.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        axis.set_ylim(0, top * 1.35)
        axis.spines[["top", "right"]].set_visible(False)
    for axis in list(axes.flat)[len(PANELS) :]:
        axis.set_visible(False)
    fig.suptitle(
        f"lahar advise, objective {advice.objective}: recommended {advice.recommended.name} "
        f"(green; red: did not finish)",
        fontsize=12,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
