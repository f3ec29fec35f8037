"""When a job's next time-based decision falls due (pure): a policy action's timeout, or the TTL of a
finished job. The loop asks `due(now)` on its timer instead of reconciling every job to find out.

Deadlines are kept in a heap per state, with the latest deadline of each job in `scheduled`; an entry
whose job has since moved its deadline is skipped when it comes up. They are derived from the records,
so `schedule` is called after every fold of a job's event (replay builds them too) and `rebuild` after a
checkpoint is loaded.
"""

from __future__ import annotations

from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.core.state import JobRecord
from services.job_controller.core.timer_heap import TimerHeap, due
from services.job_controller.core.timer_heap import schedule as schedule_at

__all__ = ["due", "next_deadline", "rebuild", "schedule"]


def next_deadline(record: JobRecord) -> float | None:
    """The earliest time at which reconciling the job may decide something new by the clock alone."""
    times = [p.due for p in record.pending if p.due is not None]
    ttl = record.job.ttl_seconds_after_finished if record.job is not None else None
    finished_at = record.published.last_transition_time if record.published else None
    if ttl is not None and record.phase in FINAL_PHASES and finished_at is not None:
        times.append(finished_at + ttl)
    return min(times, default=None)


def schedule(deadlines: TimerHeap, key: str, record: JobRecord | None) -> None:
    schedule_at(deadlines, key, None if record is None else next_deadline(record))


def rebuild(records: dict[str, JobRecord]) -> TimerHeap:
    deadlines = TimerHeap()
    for key, record in records.items():
        schedule(deadlines, key, record)
    return deadlines
