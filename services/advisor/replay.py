"""Replaying one workload under each candidate conf in the simulator (services/simulator/engine.simulate,
read-only: each run gets the same objects and its report is only read)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from services.advisor.candidates import Candidate
from services.advisor.figures import Figures, figures_from_report
from services.simulator.cluster import DEFAULT_HORIZON_S
from services.simulator.engine import simulate
from services.simulator.report import build_report

# candidate name, its figures: told as each replay ends (the CLI shows progress)
Progress = Callable[[str, Figures], None]


def replay(
    objects: Sequence[object],
    candidates: Sequence[Candidate],
    *,
    seed: int = 0,
    horizon_s: float = DEFAULT_HORIZON_S,
    max_cycles: int = 100_000,
    progress: Progress | None = None,
) -> list[tuple[Candidate, Figures]]:
    """Each candidate's figures for the workload, run to the end (or to a stall) in a closed loop."""
    results = []
    for candidate in candidates:
        run = simulate(
            objects, candidate.conf, until_idle=True, seed=seed, horizon_s=horizon_s, max_cycles=max_cycles
        )
        figures = figures_from_report(build_report(run, until_idle=True))
        results.append((candidate, figures))
        if progress is not None:
            progress(candidate.name, figures)
    return results
