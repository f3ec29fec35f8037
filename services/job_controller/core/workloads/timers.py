"""When each CronJob next fires, so that the loop's timer asks for exactly the CronJobs due (pure).

The same shape as the job-controller's deadlines (core/deadlines.py): a heap with the latest time per key,
stale entries skipped when they come up. A fired key is scheduled again by the caller, from `now`.
"""

from __future__ import annotations

import heapq

from services.job_controller.core.workloads.state import Timers


def schedule(timers: Timers, key: str, moment: float | None) -> None:
    """`key` fires at `moment` (None: never)."""
    if moment is None:
        timers.scheduled.pop(key, None)
    elif timers.scheduled.get(key) != moment:
        timers.scheduled[key] = moment
        heapq.heappush(timers.heap, (moment, key))


def due(timers: Timers, now: float) -> list[str]:
    """The keys whose time is at or before now; each is handed out once per scheduled time."""
    keys = []
    heap = timers.heap
    while heap and heap[0][0] <= now:
        moment, key = heapq.heappop(heap)
        if timers.scheduled.get(key) == moment:
            del timers.scheduled[key]
            keys.append(key)
    return keys
