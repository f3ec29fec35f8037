"""priority: order tasks and jobs by priority, let higher-priority jobs preempt (Volcano's priority plugin).

Job priority is the value of the PodGroup's priorityClassName; task priority is the pod's priority (the
`volcano.sh/task-priority` annotation overrides it). As in Volcano, the plugin gates preemption only:
reclaim is fairness-driven across queues, so priority registers no reclaimable filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from services.scheduler.core.framework.plugin import Plugin

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.task import TaskInfo


def _desc(left: int, right: int) -> int:
    return (left < right) - (left > right)


class PriorityPlugin(Plugin):
    name = "priority"

    def task_order(self, ssn: Session, left: TaskInfo, right: TaskInfo) -> int:
        return _desc(left.priority, right.priority)

    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        return _desc(left.priority, right.priority)

    def preemptable(
        self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        """Victims: tasks of lower-priority jobs; within the preemptor's own job, lower-priority tasks."""
        preemptor_job = ssn.jobs.get(preemptor.job)
        if preemptor_job is None:
            return []
        victims = []
        for task in preemptees:
            job = ssn.jobs.get(task.job)
            if job is None:
                continue
            if job.uid != preemptor_job.uid:
                if job.priority < preemptor_job.priority:
                    victims.append(task)
            elif task.priority < preemptor.priority:
                victims.append(task)
        return victims

    def job_starving(self, ssn: Session, job: JobInfo) -> bool:
        """A job wants more while any of its tasks is neither placed nor pipelined."""
        return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)
