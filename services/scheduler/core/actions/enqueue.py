"""enqueue: the admission gate that moves Pending PodGroups to Inqueue (Volcano's enqueue action).

Queues take turns by queue order; within a queue, jobs by job order. A job without minResources is always
admitted; otherwise the JobEnqueueable vote decides (overcommit, proportion, capacity). A rejected job
stays Pending and is tried again next session; what refused it is kept for its pending reason. The
job-controller creates pods only once a PodGroup is Inqueue, so this gate is what keeps the cluster from
filling with pods that cannot run.

Beyond Volcano:
- a job a plugin lets pass the cluster's load (job_passes_load: the starvation plugin's job past the
  starvation bound, whose pods must exist for room to be held for them, or a job that ends before that room
  is needed) is admitted when only the load refuses it (CAPACITY refusals), not its queue's quota;
- in a fifo queue (`dequeueStrategy: fifo`) a rejected job holds back the jobs behind it (actions/fifo.py).
"""

from __future__ import annotations

from services.scheduler.core.actions.fifo import foreign_waiting, hold_back
from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.session import Session
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.pending import CAPACITY
from services.scheduler.core.model.queue import QueueInfo


def admit(ssn: Session, job: JobInfo) -> bool:
    """May the job go Inqueue? If not, what refused it is recorded on it."""
    if job.min_resources is None or ssn.job_enqueueable_fn(job):
        return True
    refusals = ssn.enqueue_refusals(job)
    if refusals and all(r.kind == CAPACITY for r in refusals) and ssn.job_passes_load_fn(job):
        return True
    # the gang plugin's Unschedulable condition reports it (Volcano only records an event)
    job.job_fit_error = refusals[0].text if refusals else ssn.enqueue_reason(job)
    for refusal in refusals:
        job.record_refusal(refusal)
    return False


class EnqueueAction(Action):
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        waiting = [job for job in ssn.owned_jobs.values() if job.is_pending_phase()]
        for job in waiting + foreign_waiting(ssn, JobInfo.is_pending_phase):
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            if queue.name not in jobs_by_queue:
                jobs_by_queue[queue.name] = PriorityQueue(ssn.job_order_fn)
                queues.push(queue)
            jobs_by_queue[queue.name].push(job)

        while queues:
            queue = queues.pop()
            jobs = jobs_by_queue[queue.name]
            if not jobs:
                continue
            job = jobs.pop()
            if job.owned and admit(ssn, job):
                ssn.job_enqueued_fn(job)
                job.phase = "Inqueue"
            elif queue.fifo:
                hold_back(queue, job, jobs)
                continue
            queues.push(queue)
