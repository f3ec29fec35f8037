"""The e2e benchmark's figures from what the event log recorded (pure)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RoundTimes:
    """One round as the log tells it: per job when it was published and when it completed, per pod (of
    those jobs) when it was bound, each in epoch seconds."""

    submitted: Mapping[str, float]  # job -> published onto the intake
    completed: Mapping[str, float]  # job -> JobStatusChanged to Completed
    bound: Mapping[str, tuple[str, float]]  # pod -> (its job, its first PodBound)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks; nan when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def round_figures(times: RoundTimes) -> dict[str, float]:
    """pods_per_s: bound pods over the time from the first publish to the last bind; latencies of each
    pod's bind and each job's completion from its job's publish."""
    if not times.submitted:
        raise ValueError("a round without jobs")
    start = min(times.submitted.values())
    bound = [(at - times.submitted[job]) for job, at in times.bound.values() if job in times.submitted]
    completed = [at - times.submitted[job] for job, at in times.completed.items() if job in times.submitted]
    last_bind = max((at for _, at in times.bound.values()), default=start)
    span = max(last_bind - start, 1e-9)
    return {
        "pods": len(times.bound),
        "jobs": len(times.submitted),
        "jobs_completed": len(completed),
        "pods_per_s": round(len(times.bound) / span, 1),
        "bind_span_s": round(span, 3),
        "bound_p50_s": round(percentile(bound, 50), 3),
        "bound_p99_s": round(percentile(bound, 99), 3),
        "completed_p50_s": round(percentile(completed, 50), 3),
        "completed_p99_s": round(percentile(completed, 99), 3),
    }


def medians(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The median of every number the runs report, at any depth (per service, per round, per counter);
    the machine is noisy, so a figure is the median of several runs, never one run."""
    merged: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [run.get(key) for run in runs]
        numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        mappings = [v for v in values if isinstance(v, Mapping)]
        if len(numbers) == len(values):
            merged[key] = round(statistics.median(numbers), 4)
        elif isinstance(first, Mapping) and len(mappings) == len(values):
            merged[key] = medians(mappings)
    return merged
