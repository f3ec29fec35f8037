"""Strict FIFO queues (`dequeueStrategy: fifo`, Volcano's Queue field): a job that cannot be enqueued or
placed holds back every job behind it in its queue, in the session's job order, until it goes.

Both enqueue and allocate walk a fifo queue's jobs in order and stop at the first that cannot go; each job
left behind is told which job it waits for. A job another scheduler replica places cannot go here, so
when it comes first and still waits (Pending for enqueue; pods waiting for a node for allocate), the jobs
behind it wait too: a fifo queue's jobs are placed in order across replicas, one owner's turn at a time.
"""

from __future__ import annotations

from collections.abc import Callable

from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.framework.session import Session
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.pending import BEHIND_HEAD, Refusal
from services.scheduler.core.model.queue import QueueInfo


def foreign_waiting(ssn: Session, waits: Callable[[JobInfo], bool]) -> list[JobInfo]:
    """The jobs of fifo queues this session does not place that `waits` says are still waiting: they
    hold their place in their queue's line."""
    fifo = {name for name, queue in ssn.queues.items() if queue.fifo}
    if not fifo or ssn.owned_jobs is ssn.jobs:
        return []
    return [job for job in ssn.jobs.values() if not job.owned and job.queue in fifo and waits(job)]


def hold_back(queue: QueueInfo, head: JobInfo, behind: PriorityQueue[JobInfo]) -> None:
    """Every job left in `behind` waits for `head`, which cannot go this session."""
    text = f"waiting behind {head.uid} in fifo queue {queue.name}"
    while behind:
        job = behind.pop()
        if job.owned:
            job.job_fit_error = text
            job.record_refusal(Refusal(text, BEHIND_HEAD))
