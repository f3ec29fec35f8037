"""One candidate's figures, read from the simulator's closed-loop report (services/simulator/report.py):
whether the workload finished, makespan, job scheduling latency (mean, p99, coefficient of variation),
node allocation CV and mean utilisation."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FINISHED = "finished"  # every job and pod ran to its end
DEADLOCK = "deadlock"  # unfinished jobs hold resources that no one can use
UNSCHEDULABLE = "unschedulable"  # pending work fits nowhere
UNFINISHED = "unfinished"  # the cycle limit came first
STUCK = (DEADLOCK, UNSCHEDULABLE, UNFINISHED)
_OUTCOMES = {"idle": FINISHED, "deadlock": DEADLOCK, "unschedulable": UNSCHEDULABLE}


@dataclass(frozen=True, slots=True)
class Figures:
    outcome: str  # FINISHED or one of STUCK
    jobs: int
    jobs_finished: int
    jobs_started: int
    makespan_s: float | None  # None unless finished: a stuck run has no end
    latency_mean_s: float | None  # submit -> running, over the jobs that started; None when none did
    latency_p99_s: float | None
    job_scheduling_latency_cv: float
    node_allocation_cv: float
    mean_utilisation: Mapping[str, float] = field(default_factory=dict)  # per resource, over the run
    message: str = ""  # why a stuck run is stuck, in the simulator's words

    @property
    def finished(self) -> bool:
        return self.outcome == FINISHED

    @property
    def busiest_resource(self) -> str:
        """The resource the workload used most of ("" when it used none): the utilisation that counts."""
        used = {dim: share for dim, share in self.mean_utilisation.items() if share > 0}
        return max(sorted(used), key=lambda dim: used[dim]) if used else ""

    @property
    def utilisation(self) -> float:
        """Mean allocated share of the busiest resource over the run."""
        return self.mean_utilisation.get(self.busiest_resource, 0.0)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (the smallest value with at least `fraction` of the values at or
    below it); values must not be empty."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def figures_from_report(report: Mapping[str, Any]) -> Figures:
    """The figures of a closed-loop (`until_idle`) report."""
    outcome = _OUTCOMES.get(report["outcome"], UNFINISHED)
    jobs: Mapping[str, Mapping[str, Any]] = report.get("jobs", {})
    latencies = [job["start"] - job["submit"] for job in jobs.values() if job["start"] is not None]
    fairness = report.get("fairness", {})
    return Figures(
        outcome=outcome,
        jobs=len(jobs),
        jobs_finished=sum(1 for job in jobs.values() if job["finish"] is not None),
        jobs_started=len(latencies),
        makespan_s=float(report["makespan_s"]) if outcome == FINISHED else None,
        latency_mean_s=statistics.fmean(latencies) if latencies else None,
        latency_p99_s=percentile(latencies, 0.99) if latencies else None,
        job_scheduling_latency_cv=float(fairness.get("job_scheduling_latency_cv", 0.0)),
        node_allocation_cv=float(fairness.get("node_allocation_cv", 0.0)),
        mean_utilisation=dict(report.get("mean_utilisation", {})),
        message=str(report.get("message", "")),
    )
