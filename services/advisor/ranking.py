"""Ranking the candidates and the advice: candidates that finish the workload come first, by the
objective's score (services/advisor/objectives.py), then its tie-breaker, then the order they were given
in (the built-in set starts with Volcano's default, so a candidate that changes nothing measurable does
not displace it); candidates that deadlock, leave work unschedulable or run out of cycles follow, those
that finished more jobs first. The first is recommended, with a sentence saying why
(services/advisor/explain.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.advisor.candidates import Candidate
from services.advisor.explain import explain
from services.advisor.figures import DEADLOCK, UNSCHEDULABLE, Figures
from services.advisor.objectives import DESCRIPTIONS, scores, tie_breaker


@dataclass(frozen=True, slots=True)
class Ranked:
    rank: int
    candidate: Candidate
    figures: Figures
    score: float | None  # None for a candidate that did not finish the workload

    @property
    def name(self) -> str:
        return self.candidate.name


@dataclass(frozen=True, slots=True)
class Advice:
    objective: str
    ranked: tuple[Ranked, ...]
    why: str

    @property
    def recommended(self) -> Ranked:
        return self.ranked[0]


def rank(results: Sequence[tuple[Candidate, Figures]], objective: str) -> Advice:
    """The advice over at least one candidate's results; candidate names must be unique."""
    if not results:
        raise ValueError("nothing to rank: no candidate")
    names = [candidate.name for candidate, _ in results]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names must be unique, got {names}")
    finished = {c.name: f for c, f in results if f.finished}
    score = scores(objective, finished)

    order = {name: i for i, name in enumerate(names)}

    def key(item: tuple[Candidate, Figures]) -> tuple[Any, ...]:
        candidate, figures = item
        if figures.finished:
            return (0, score[candidate.name], tie_breaker(objective, figures), 0, order[candidate.name])
        return (1, 0.0, 0.0, -figures.jobs_finished, order[candidate.name])

    ordered = sorted(results, key=key)
    ranked = tuple(
        Ranked(i + 1, candidate, figures, score.get(candidate.name))
        for i, (candidate, figures) in enumerate(ordered)
    )
    return Advice(objective, ranked, explain(objective, ranked))


def advice_report(advice: Advice) -> dict[str, Any]:
    """The advice as plain data (`-o json`): candidates in rank order, the recommended one and why."""
    return {
        "objective": advice.objective,
        "objective_score": DESCRIPTIONS[advice.objective],
        "candidates": [_candidate(r) for r in advice.ranked],
        "recommended": advice.recommended.name,
        "why": advice.why,
    }


def _candidate(ranked: Ranked) -> dict[str, Any]:
    f = ranked.figures
    return {
        "conf": ranked.name,
        "source": ranked.candidate.source,
        "rank": ranked.rank,
        "outcome": f.outcome,
        "deadlock": f.outcome == DEADLOCK,
        "unschedulable": f.outcome == UNSCHEDULABLE,
        "jobs": f.jobs,
        "jobs_finished": f.jobs_finished,
        "makespan_s": f.makespan_s,
        "job_scheduling_latency_mean_s": _rounded(f.latency_mean_s),
        "job_scheduling_latency_p99_s": _rounded(f.latency_p99_s),
        "job_scheduling_latency_cv": f.job_scheduling_latency_cv,
        "node_allocation_cv": f.node_allocation_cv,
        "mean_utilisation": dict(f.mean_utilisation),
        "utilisation": f.utilisation,
        "busiest_resource": f.busiest_resource,
        "score": ranked.score,
        "message": f.message,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
