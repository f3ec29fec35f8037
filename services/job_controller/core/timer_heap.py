"""A heap of (time, key) with the latest time per key: what fires when, for the job-controller's pure
cores (the jobs' policy timeouts and TTLs, core/deadlines.py; the CronJobs' schedules, workloads/).
Moving a key's time leaves its old entry in the heap; it is skipped when it comes up, so scheduling is
O(log n) and nothing is searched."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field


@dataclass(slots=True)
class TimerHeap:
    heap: list[tuple[float, str]] = field(default_factory=list)
    scheduled: dict[str, float] = field(default_factory=dict)  # key -> its latest time


def schedule(timers: TimerHeap, key: str, moment: float | None) -> None:
    """`key` fires at `moment` (None: never)."""
    if moment is None:
        timers.scheduled.pop(key, None)
    elif timers.scheduled.get(key) != moment:
        timers.scheduled[key] = moment
        heapq.heappush(timers.heap, (moment, key))


def due(timers: TimerHeap, now: float) -> list[str]:
    """The keys whose time is at or before now; each is handed out once per scheduled time."""
    keys = []
    heap = timers.heap
    while heap and heap[0][0] <= now:
        moment, key = heapq.heappop(heap)
        if timers.scheduled.get(key) == moment:
            del timers.scheduled[key]
            keys.append(key)
    return keys
