"""The advice as a table for people: one row per candidate in rank order, the stuck candidates'
messages, then the recommendation and why."""

from __future__ import annotations

from services.advisor.explain import seconds
from services.advisor.objectives import DESCRIPTIONS
from services.advisor.ranking import Advice, Ranked

HEADERS = ("RANK", "CONF", "OUTCOME", "JOBS", "MAKESPAN", "LAT MEAN", "LAT P99", "JOB-LAT CV", "NODE CV")


def _utilisation(ranked: Ranked) -> str:
    f = ranked.figures
    return f"{f.utilisation:.0%} {f.busiest_resource}" if f.busiest_resource else "0%"


def _row(ranked: Ranked) -> tuple[str, ...]:
    f = ranked.figures
    return (
        str(ranked.rank),
        ranked.name,
        f.outcome,
        f"{f.jobs_finished}/{f.jobs}",
        seconds(f.makespan_s),
        seconds(f.latency_mean_s),
        seconds(f.latency_p99_s),
        f"{f.job_scheduling_latency_cv:.3f}",
        f"{f.node_allocation_cv:.3f}",
        _utilisation(ranked),
        "-" if ranked.score is None else f"{ranked.score:.3f}",
    )


def render_advice(advice: Advice) -> str:
    headers = (*HEADERS, "UTILISATION", "SCORE")
    rows = [headers, *(_row(r) for r in advice.ranked)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(headers))]
    left = {1, 2, 9}  # names, outcomes and utilisation read from the left; numbers from the right
    lines = [
        f"objective: {advice.objective} (score: {DESCRIPTIONS[advice.objective]}; lower is better)",
        "",
    ]
    for row in rows:
        cells = [
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    stuck = [r for r in advice.ranked if r.figures.message]
    if stuck:
        lines.append("")
        lines += [f"{r.name}: {r.figures.message}" for r in stuck]
    lines += ["", f"recommended: {advice.recommended.name}", f"why: {advice.why}"]
    return "\n".join(lines)
