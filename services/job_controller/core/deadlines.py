"""When a job's next time-based decision falls due (pure): a policy action's timeout, or the TTL of a
finished job. The loop asks `due(now)` on its timer instead of reconciling every job to find out.

Deadlines are kept in a heap per state, with the latest deadline of each job in `scheduled`; an entry
whose job has since moved its deadline is skipped when it comes up. They are derived from the records,
so `schedule` is called after every fold of a job's event (replay builds them too) and `rebuild` after a
checkpoint is loaded.
"""

from __future__ import annotations

import heapq

from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.core.state import Deadlines, JobRecord


def next_deadline(record: JobRecord) -> float | None:
    """The earliest time at which reconciling the job may decide something new by the clock alone."""
    times = [p.due for p in record.pending if p.due is not None]
    ttl = record.job.ttl_seconds_after_finished if record.job is not None else None
    finished_at = record.published.last_transition_time if record.published else None
    if ttl is not None and record.phase in FINAL_PHASES and finished_at is not None:
        times.append(finished_at + ttl)
    return min(times, default=None)


def schedule(deadlines: Deadlines, key: str, record: JobRecord | None) -> None:
    deadline = None if record is None else next_deadline(record)
    if deadline is None:
        deadlines.scheduled.pop(key, None)
    elif deadlines.scheduled.get(key) != deadline:
        deadlines.scheduled[key] = deadline
        heapq.heappush(deadlines.heap, (deadline, key))


def due(deadlines: Deadlines, now: float) -> list[str]:
    """The jobs whose deadline is at or before now; each is handed out once per deadline."""
    keys = []
    heap = deadlines.heap
    while heap and heap[0][0] <= now:
        deadline, key = heapq.heappop(heap)
        if deadlines.scheduled.get(key) == deadline:
            del deadlines.scheduled[key]
            keys.append(key)
    return keys


def rebuild(records: dict[str, JobRecord]) -> Deadlines:
    deadlines = Deadlines()
    for key, record in records.items():
        schedule(deadlines, key, record)
    return deadlines
