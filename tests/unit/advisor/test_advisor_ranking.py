"""Ranking candidates and saying why: finishing candidates first by the objective, stuck ones after, the
recommendation in words a person can act on, and `-o json`'s shape."""

from __future__ import annotations

import pytest

from services.advisor.candidates import BUILT_IN, Candidate, built_in, built_in_candidates
from services.advisor.figures import DEADLOCK, FINISHED, UNSCHEDULABLE, Figures
from services.advisor.ranking import advice_report, rank
from services.scheduler.core.conf import default_conf


def finished(
    makespan: float, mean: float, job_cv: float = 0.5, node_cv: float = 0.0, cpu: float = 0.5
) -> Figures:
    return Figures(FINISHED, 5, 5, 5, makespan, mean, mean * 2, job_cv, node_cv, {"cpu": cpu})


def stuck(outcome: str, done: int) -> Figures:
    return Figures(
        outcome, 5, done, done, None, 1.0, 1.0, 0.0, 0.0, {"cpu": 1.0}, message="no progress possible"
    )


def conf(name: str) -> Candidate:
    return Candidate(name, default_conf(), f"{name}.conf")


def test_finishing_candidates_come_first_by_score_then_stuck_ones_by_jobs_finished() -> None:
    results = [
        (built_in("pod-by-pod"), stuck(DEADLOCK, 0)),
        (conf("slow"), finished(300, 40)),
        (conf("wedged"), stuck(UNSCHEDULABLE, 2)),
        (conf("fast"), finished(200, 60)),
    ]
    by_makespan = rank(results, "makespan")
    assert [r.name for r in by_makespan.ranked] == ["fast", "slow", "wedged", "pod-by-pod"]
    assert [r.rank for r in by_makespan.ranked] == [1, 2, 3, 4]
    assert [r.score for r in by_makespan.ranked] == [200.0, 300.0, None, None]
    assert [r.name for r in rank(results, "latency").ranked][:2] == ["slow", "fast"]


def test_ties_go_to_the_tie_breaker_then_to_the_order_given() -> None:
    # same mean latency; p99 is twice the mean in these figures, so make the tie-breaker differ by hand
    a = Figures(FINISHED, 5, 5, 5, 100.0, 10.0, 30.0, 0.5, 0.0, {"cpu": 0.5})
    b = Figures(FINISHED, 5, 5, 5, 100.0, 10.0, 20.0, 0.5, 0.0, {"cpu": 0.5})
    advice = rank([(conf("a"), a), (conf("b"), b)], "latency")
    assert [r.name for r in advice.ranked] == ["b", "a"]
    assert (
        "ties with a on latency and has the lower p99 job scheduling latency, 20s against 30s" in advice.why
    )
    same = rank([(conf("second"), finished(100, 10)), (conf("first"), finished(100, 10))], "balanced")
    assert [r.name for r in same.ranked] == ["second", "first"]  # as given: no name order sneaks in
    assert "it does exactly as well as first on this workload" in same.why


def test_why_compares_the_recommended_with_the_runner_up_on_the_objectives_figure() -> None:
    results = [(conf("spread"), finished(200, 30, cpu=0.6)), (conf("packed"), finished(150, 20, cpu=0.8))]
    assert rank(results, "makespan").why.startswith(
        "Use packed: it finishes all 5 jobs in 150s against 200s for spread (mean job scheduling latency "
        "20s vs 30s)."
    )
    assert (
        "its mean job scheduling latency is 20s against 30s for spread (p99 40s vs 60s)"
        in rank(results, "latency").why
    )
    assert (
        "it keeps 80% of the cpu allocated on average against 60% for spread"
        in rank(results, "utilisation").why
    )
    balanced = rank(results, "balanced").why
    assert (
        balanced.startswith("Use packed: it has the best balanced score, 0.000 against ")
        and "makespan 150s vs 200s" in balanced
    )
    assert balanced.endswith("Run it with `lahar up --scheduler-conf packed.conf`.")


def test_why_names_the_candidates_to_avoid_and_the_gang_plugins_part_in_a_deadlock() -> None:
    gangless = built_in("pod-by-pod")
    assert not gangless.conf.uses("gang")
    results = [(gangless, stuck(DEADLOCK, 0)), (built_in("default"), finished(180, 48))]
    advice = rank(results, "balanced")
    assert advice.recommended.name == "default"
    assert advice.why == (
        "Use default: it is the only candidate that finishes all 5 jobs (makespan 180s, mean job "
        "scheduling latency 48s). Avoid pod-by-pod, which deadlocks: without the gang plugin every job gets "
        "part of the cluster and waits for the rest forever (keep gang, and enqueue). `lahar advise "
        "--print-conf default > default.conf` writes it for `lahar up --scheduler-conf default.conf`."
    )
    with_gang = rank([(conf("tight"), stuck(DEADLOCK, 1)), (conf("ok"), finished(10, 1))], "latency").why
    assert (
        "Avoid tight, which deadlocks: jobs hold part of their pods and wait for the rest (check their "
        "minAvailable)" in with_gang
    )


def test_when_nothing_finishes_the_one_that_got_furthest_is_named() -> None:
    advice = rank([(conf("a"), stuck(DEADLOCK, 1)), (conf("b"), stuck(UNSCHEDULABLE, 3))], "makespan")
    assert advice.recommended.name == "b" and not advice.recommended.figures.finished
    assert advice.why.startswith(
        "No candidate finishes this workload (b leaves work unschedulable, a deadlocks); b gets furthest "
        "(3 of 5 jobs finished) and leaves work unschedulable: some pods fit on no node."
    )
    alone = rank([(conf("a"), stuck(DEADLOCK, 0))], "makespan")
    assert alone.why.startswith("a does not finish this workload (0 of 5 jobs finished): it deadlocks")


def test_the_json_report_has_the_candidates_the_recommendation_and_why() -> None:
    advice = rank(
        [(built_in("pod-by-pod"), stuck(DEADLOCK, 0)), (built_in("default"), finished(180, 48))], "balanced"
    )
    report = advice_report(advice)
    assert set(report) == {"objective", "objective_score", "candidates", "recommended", "why"}
    assert report["recommended"] == "default" and report["why"] == advice.why
    first, second = report["candidates"]
    assert (first["conf"], first["outcome"], first["deadlock"], first["makespan_s"]) == (
        "default",
        "finished",
        False,
        180.0,
    )
    assert (second["conf"], second["deadlock"], second["makespan_s"], second["score"]) == (
        "pod-by-pod",
        True,
        None,
        None,
    )
    for key in (
        "job_scheduling_latency_mean_s",
        "job_scheduling_latency_p99_s",
        "job_scheduling_latency_cv",
        "node_allocation_cv",
        "mean_utilisation",
        "jobs",
        "jobs_finished",
        "unschedulable",
    ):
        assert key in first


def test_bad_input_to_ranking_is_refused() -> None:
    with pytest.raises(ValueError, match="no candidate"):
        rank([], "balanced")
    with pytest.raises(ValueError, match="unique"):
        rank([(conf("a"), finished(1, 1)), (conf("a"), finished(2, 2))], "balanced")


def test_the_built_in_candidates_parse_and_differ_as_their_names_say() -> None:
    candidates = {c.name: c.conf for c in built_in_candidates()}
    assert list(candidates) == list(BUILT_IN) and next(iter(candidates)) == "default"
    assert candidates["default"] == default_conf()
    assert not candidates["no-gang"].uses("gang") and "enqueue" in candidates["no-gang"].actions
    assert not candidates["pod-by-pod"].uses("gang") and "enqueue" not in candidates["pod-by-pod"].actions
    assert not candidates["fifo"].uses("drf") and not candidates["drf-only"].uses("proportion")
    assert {"preempt", "reclaim"} <= set(candidates["preempt-reclaim"].actions)
    (nodeorder,) = [p for tier in candidates["binpack"].tiers for p in tier if p.name == "nodeorder"]
    assert (
        nodeorder.arguments["mostrequested.weight"] == 1 and nodeorder.arguments["leastrequested.weight"] == 0
    )
