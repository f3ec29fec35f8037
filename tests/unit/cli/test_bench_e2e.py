"""The e2e benchmark's pure parts: its workload, the figures it reads from the log, the per-pod costs it
reads from the services' counters."""

from __future__ import annotations

import pytest

from services.cli.bench_e2e.costs import per_pod, sessions
from services.cli.bench_e2e.figures import RoundTimes, medians, percentile, round_figures
from services.cli.bench_e2e.workload import arrival_offsets, bench_jobs


def test_jobs_are_seeded_gangs_within_the_bounds() -> None:
    jobs = bench_jobs(200, min_pods=1, max_pods=8, duration="2s", seed=3)
    assert jobs == bench_jobs(200, min_pods=1, max_pods=8, duration="2s", seed=3)
    assert {job.pods for job in jobs} == set(range(1, 9))
    spec = jobs[0].manifest["spec"]
    assert spec["minAvailable"] == spec["tasks"][0]["replicas"] == jobs[0].pods
    assert jobs[0].manifest["metadata"]["annotations"] == {"lahar.dev/sim-duration": "2s"}
    with pytest.raises(ValueError, match="pods per job"):
        bench_jobs(1, min_pods=3, max_pods=2, duration="1s", seed=0)


def test_a_steady_arrival_spaces_jobs_by_their_pods() -> None:
    jobs = bench_jobs(3, min_pods=2, max_pods=2, duration="1s", seed=0)
    assert arrival_offsets(jobs, None) == [0.0, 0.0, 0.0]
    assert arrival_offsets(jobs, 4.0) == [0.0, 0.5, 1.0]


def test_round_figures_from_the_logs_times() -> None:
    times = RoundTimes(
        submitted={"a": 100.0, "b": 101.0},
        completed={"a": 105.0, "b": 109.0},
        bound={"a-0": ("a", 101.0), "a-1": ("a", 102.0), "b-0": ("b", 104.0)},
    )
    figures = round_figures(times)
    assert (
        figures["pods"] == 3 and figures["pods_per_s"] == 0.8
    )  # 3 pods bound in the 4 s after the first publish
    assert (figures["bound_p50_s"], figures["completed_p99_s"]) == (2.0, 7.97)
    assert percentile([], 50) != percentile([], 50)  # nan: nothing to rank


def test_per_pod_costs_are_what_grew_over_the_round() -> None:
    before = {"binder": {"decoded": 100.0, "written": 10.0}, "admission": {"decoded": 5.0}}
    after = {"binder": {"decoded": 500.0, "written": 210.0}, "admission": {"decoded": 5.0}}
    assert per_pod(before, after, 100) == {"binder": {"decoded": 4.0, "written": 2.0}}


def test_session_figures_are_per_replica_and_leave_the_per_pod_costs() -> None:
    before = {
        "scheduler-0": {"decoded": 10.0, "sessions": 4.0, "session_cpu_s": 1.5},
        "binder": {"decoded": 1.0},
    }
    after = {
        "scheduler-0": {"decoded": 210.0, "sessions": 10.0, "session_cpu_s": 2.25},
        "binder": {"decoded": 1.0},
    }
    assert sessions(before, after) == {"scheduler-0": {"sessions": 6, "session_cpu_s": 0.75}}
    assert per_pod(before, after, 100) == {"scheduler-0": {"decoded": 2.0}}


def test_medians_of_runs_per_figure_and_per_service() -> None:
    runs = [
        {"pods_per_s": 500.0, "nodes": 1000, "cpu_s": {"binder": 2.0}, "restarts": {}},
        {"pods_per_s": 600.0, "nodes": 1000, "cpu_s": {"binder": 4.0}, "restarts": {}},
        {"pods_per_s": 550.0, "nodes": 1000, "cpu_s": {"binder": 3.0}, "restarts": {}},
    ]
    assert medians(runs) == {"pods_per_s": 550.0, "nodes": 1000, "cpu_s": {"binder": 3.0}, "restarts": {}}
    nested = [{"per_pod": {"binder": {"decoded": float(v)}}} for v in (5, 4, 6)]
    assert medians(nested) == {"per_pod": {"binder": {"decoded": 5.0}}}
