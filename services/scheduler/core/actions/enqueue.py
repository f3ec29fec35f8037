"""enqueue: the admission gate that moves Pending PodGroups to Inqueue (Volcano's enqueue action).

Queues take turns by queue order; within a queue, jobs by job order. A job without minResources is always
admitted; otherwise the JobEnqueueable vote decides (overcommit, proportion, capacity). A rejected job
stays Pending and is tried again next session. The job-controller creates pods only once a PodGroup is
Inqueue, so this gate is what keeps the cluster from filling with pods that cannot run.
"""

from __future__ import annotations

from services.scheduler.core.framework.action import Action, PriorityQueue
from services.scheduler.core.framework.session import Session
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo


class EnqueueAction(Action):
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.owned_jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is None or not job.is_pending_phase():
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
            if job.min_resources is None or ssn.job_enqueueable_fn(job):
                ssn.job_enqueued_fn(job)
                job.phase = "Inqueue"
            else:
                # the gang plugin's Unschedulable condition reports it (Volcano only records an event)
                job.job_fit_error = ssn.enqueue_reason(job)
            queues.push(queue)
