"""The objective math of `lahar advise`: each objective's score, balanced's normalisation, the figures read
from a simulation report, and the percentile."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.advisor.figures import DEADLOCK, FINISHED, UNFINISHED, Figures, figures_from_report, percentile
from services.advisor.objectives import (
    FAIRNESS,
    LATENCY,
    MAKESPAN,
    UTILISATION,
    balanced_scores,
    scores,
)


def figures(
    makespan: float = 100.0,
    mean: float = 10.0,
    p99: float = 20.0,
    job_cv: float = 0.5,
    node_cv: float = 0.1,
    cpu: float = 0.5,
) -> Figures:
    return Figures(FINISHED, 4, 4, 4, makespan, mean, p99, job_cv, node_cv, {"cpu": cpu, "memory": cpu / 2})


def test_single_figure_objectives_score_their_figure_lower_is_better() -> None:
    candidates = {
        "a": figures(makespan=120, mean=5, job_cv=0.2, cpu=0.4),
        "b": figures(makespan=90, mean=8, job_cv=0.6, cpu=0.7),
    }
    assert scores(MAKESPAN, candidates) == {"a": 120.0, "b": 90.0}
    assert scores(LATENCY, candidates) == {"a": 5.0, "b": 8.0}
    assert scores(FAIRNESS, candidates) == {"a": 0.2, "b": 0.6}
    assert scores(UTILISATION, candidates) == {"a": -0.4, "b": -0.7}  # the busier cluster wins


def test_balanced_is_the_mean_excess_over_the_best_as_a_share_of_the_worst() -> None:
    a = figures(makespan=100, mean=10, p99=20, job_cv=0.5, node_cv=0.0)
    b = figures(makespan=200, mean=10, p99=40, job_cv=0.25, node_cv=0.2)
    got = balanced_scores({"a": a, "b": b})
    # a: makespan 0, mean 0, p99 0, job CV (0.5 - 0.25) / 0.5, node CV 0
    # b: makespan (200 - 100) / 200, mean 0, p99 (40 - 20) / 40, job CV 0, node CV (0.2 - 0) / 0.2
    assert got == {"a": pytest.approx(0.5 / 5), "b": pytest.approx((0.5 + 0.5 + 1.0) / 5)}


def test_balanced_gives_equal_candidates_zero_and_ignores_utilisation() -> None:
    same = {"a": figures(cpu=0.2), "b": figures(cpu=0.9)}
    assert balanced_scores(same) == {"a": 0.0, "b": 0.0}
    zeros = {"a": figures(job_cv=0.0, node_cv=0.0)}
    assert balanced_scores(zeros) == {"a": 0.0}


@given(st.lists(st.tuples(*(st.floats(0, 1e5, allow_nan=False) for _ in range(5))), min_size=1, max_size=6))
def test_balanced_scores_lie_between_zero_and_one_and_the_best_on_everything_scores_zero(
    rows: list[tuple[float, ...]],
) -> None:
    candidates = {f"c{i}": figures(*row) for i, row in enumerate(rows)}
    got = balanced_scores(candidates)
    assert all(0.0 <= score <= 1.0 for score in got.values())
    for name, f in candidates.items():
        best_everywhere = all(
            getattr(f, attribute) <= min(getattr(g, attribute) for g in candidates.values())
            for attribute in (
                "makespan_s",
                "latency_mean_s",
                "latency_p99_s",
                "job_scheduling_latency_cv",
                "node_allocation_cv",
            )
        )
        if best_everywhere:
            assert got[name] == 0.0


def test_an_unknown_objective_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        scores("speed", {})


@pytest.mark.parametrize(
    ("values", "fraction", "expected"),
    [
        ([5.0], 0.99, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),
        ([float(i) for i in range(1, 101)], 0.99, 99.0),
        ([3.0, 1.0, 2.0], 0.99, 3.0),
    ],
)
def test_percentile_is_the_nearest_rank(values: list[float], fraction: float, expected: float) -> None:
    assert percentile(values, fraction) == expected


def report(
    outcome: str, jobs: dict[str, tuple[float, float | None, float | None]], **extra: object
) -> dict[str, object]:
    return {
        "outcome": outcome,
        "jobs": {key: {"submit": s, "start": st_, "finish": f} for key, (s, st_, f) in jobs.items()},
        "makespan_s": 300.0,
        "mean_utilisation": {"cpu": 0.75, "memory": 0.25, "nvidia.com/gpu": 0.0},
        "fairness": {"job_scheduling_latency_cv": 0.4, "node_allocation_cv": 0.1},
        **extra,
    }


def test_figures_from_a_finished_report() -> None:
    f = figures_from_report(report("idle", {"a": (0, 0, 60), "b": (10, 70, 130), "c": (20, 140, 300)}))
    assert (f.outcome, f.jobs, f.jobs_finished, f.jobs_started) == (FINISHED, 3, 3, 3)
    assert f.makespan_s == 300.0 and f.latency_mean_s == pytest.approx((0 + 60 + 120) / 3)
    assert f.latency_p99_s == 120.0
    assert (f.busiest_resource, f.utilisation) == ("cpu", 0.75)


def test_a_stuck_report_has_no_makespan_and_counts_what_started() -> None:
    f = figures_from_report(
        report("deadlock", {"a": (0, 5, None), "b": (0, None, None)}, message="no progress")
    )
    assert (f.outcome, f.makespan_s, f.jobs_started, f.jobs_finished) == (DEADLOCK, None, 1, 0)
    assert (f.latency_mean_s, f.message, f.finished) == (5.0, "no progress", False)
    nothing = figures_from_report(report("cycles", {"a": (0, None, None)}, mean_utilisation={}))
    assert (nothing.outcome, nothing.latency_mean_s, nothing.utilisation, nothing.busiest_resource) == (
        UNFINISHED,
        None,
        0.0,
        "",
    )
    assert not math.isnan(nothing.job_scheduling_latency_cv)
