"""What `lahar advise` optimises: one score per candidate that finished the workload, lower is better.

- latency: the mean job scheduling latency (submit -> running), in seconds; ties go to the lower p99.
- fairness: the job scheduling latency's coefficient of variation (seed 000's fairness between jobs);
  ties go to the lower mean latency.
- utilisation: the busiest resource's mean allocated share, as a negative number so that lower is better
  (-0.83 beats -0.52); ties go to the shorter makespan.
- makespan: seconds from the first arrival to the last job's end; ties go to the lower mean latency.
- balanced: the mean of five terms, one per figure: how much worse than the best finishing candidate's
  the candidate's figure is, as a share of the worst one's ((value - best) / worst: 0 for the best, and
  below 1). The figures: makespan, mean and p99 job scheduling latency, job scheduling latency CV and node
  allocation CV. Candidates equal on a figure score 0 on it, and a difference counts in proportion to the
  figure's size (180 s against 181 s is 0.006). Utilisation is left out: for one workload it is the work
  over capacity times makespan, so it would count makespan twice. Ties go to the shorter makespan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from services.advisor.figures import Figures

LATENCY = "latency"
FAIRNESS = "fairness"
UTILISATION = "utilisation"
MAKESPAN = "makespan"
BALANCED = "balanced"
OBJECTIVES = (BALANCED, LATENCY, FAIRNESS, UTILISATION, MAKESPAN)

# balanced's figures: (Figures attribute, how a person calls it)
BALANCED_FIGURES: tuple[tuple[str, str], ...] = (
    ("makespan_s", "makespan"),
    ("latency_mean_s", "mean job scheduling latency"),
    ("latency_p99_s", "p99 job scheduling latency"),
    ("job_scheduling_latency_cv", "job scheduling latency CV"),
    ("node_allocation_cv", "node allocation CV"),
)

DESCRIPTIONS: Mapping[str, str] = {
    BALANCED: "the mean, over makespan, mean and p99 job scheduling latency and both CVs, of how much worse "
    "than the best candidate's each is, as a share of the worst's (0: best on every figure)",
    LATENCY: "the mean job scheduling latency in seconds",
    FAIRNESS: "the job scheduling latency's coefficient of variation",
    UTILISATION: "the busiest resource's mean allocated share, negated",
    MAKESPAN: "the makespan in seconds",
}


def _number(value: float | None) -> float:
    return 0.0 if value is None else float(value)


def _single(figure: Callable[[Figures], float | None]) -> Callable[[Mapping[str, Figures]], dict[str, float]]:
    def score(candidates: Mapping[str, Figures]) -> dict[str, float]:
        return {name: round(_number(figure(f)), 6) for name, f in candidates.items()}

    return score


def balanced_scores(candidates: Mapping[str, Figures]) -> dict[str, float]:
    values = {
        attribute: [_number(getattr(f, attribute)) for f in candidates.values()]
        for attribute, _ in BALANCED_FIGURES
    }
    best = {attribute: min(v, default=0.0) for attribute, v in values.items()}
    worst = {attribute: max(v, default=0.0) for attribute, v in values.items()}
    scores = {}
    for name, f in candidates.items():
        terms = [
            (_number(getattr(f, attribute)) - best[attribute]) / worst[attribute]
            if worst[attribute] > 0
            else 0.0
            for attribute, _ in BALANCED_FIGURES
        ]
        scores[name] = round(sum(terms) / len(terms), 6)
    return scores


_SCORES: Mapping[str, Callable[[Mapping[str, Figures]], dict[str, float]]] = {
    BALANCED: balanced_scores,
    LATENCY: _single(lambda f: f.latency_mean_s),
    FAIRNESS: _single(lambda f: f.job_scheduling_latency_cv),
    UTILISATION: _single(lambda f: -f.utilisation),
    MAKESPAN: _single(lambda f: f.makespan_s),
}

# the figure that breaks a tie on the score, lower is better
_TIE_BREAKERS: Mapping[str, Callable[[Figures], float]] = {
    BALANCED: lambda f: _number(f.makespan_s),
    LATENCY: lambda f: _number(f.latency_p99_s),
    FAIRNESS: lambda f: _number(f.latency_mean_s),
    UTILISATION: lambda f: _number(f.makespan_s),
    MAKESPAN: lambda f: _number(f.latency_mean_s),
}


def scores(objective: str, finished: Mapping[str, Figures]) -> dict[str, float]:
    """Each finishing candidate's score for the objective (KeyError for an unknown objective)."""
    return _SCORES[objective](finished)


def tie_breaker(objective: str, figures: Figures) -> float:
    return _TIE_BREAKERS[objective](figures)
