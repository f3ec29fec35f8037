"""drf: dominant resource fairness between jobs (Volcano's drf plugin).

A job's share is max over resources of allocated / cluster total (resources the cluster has none of are
ignored); jobs with the lower share go first, and a preemptor may evict a task when, after the move, its
job's share would not exceed the victim job's (within 1e-6; victims of one job are taken cumulatively).
As in Volcano, the pod count is a resource (each task requests one pod, the cluster total is the sum of
the nodes' max pods). Allocations are kept as one (jobs x resources+1) integer matrix, the last column
counting pods, so an allocate/deallocate event is two row updates and one dot-sized max.

With `enableHierarchy` the plugin also orders queues and filters reclaim victims by hierarchical DRF
(see `hdrf`). Without it, queue_order and reclaimable abstain, which is what Volcano's not registering
them means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from services.scheduler.core.conf import argument
from services.scheduler.core.framework.plugin import Event, Plugin
from services.scheduler.core.model.task import ALLOCATED_STATUSES, TaskInfo
from services.scheduler.core.plugins.hdrf import HierarchicalDrf, dominant_shares

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.queue import QueueInfo

SHARE_DELTA = 1e-6


class DrfPlugin(Plugin):
    name = "drf"
    arguments_spec: ClassVar[Mapping[str, type]] = {"enableHierarchy": bool}

    def on_session_open(self, ssn: Session) -> None:
        width = ssn.resources.width
        self._pods = width  # column counting pods
        total = np.zeros(width + 1, dtype=np.float64)
        total[:width] = ssn.nodes.total_allocatable()
        total[width] = ssn.nodes.max_pods.sum()
        self._inverse = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
        jobs = list(ssn.jobs.values())
        self._rows: dict[str, int] = {job.uid: row for row, job in enumerate(jobs)}
        allocated = np.zeros((len(jobs), width + 1), dtype=np.int64)
        for row, job in enumerate(jobs):
            # the job keeps the sum of its allocated requests: one conversion per job, not per task
            allocated[row, :width] = ssn.resources.vector(job.allocated)
            allocated[row, width] = job.count(*ALLOCATED_STATUSES)
        self._allocated = allocated
        # a list of floats: job_order reads it on every heap comparison
        self._shares: list[float] = dominant_shares(allocated, self._inverse).tolist()
        self._hdrf: HierarchicalDrf | None = None
        if argument(self.arguments, "enableHierarchy", False):
            request = np.zeros_like(allocated)
            for row, job in enumerate(jobs):
                request[row, :width] = ssn.resources.vector(job.total_request())
                request[row, width] = job.task_count()
            self._hdrf = HierarchicalDrf(ssn, self._rows, request, total, self._inverse)

    def job_share(self, job_uid: str) -> float:
        """The job's current dominant share (for metrics); 0 for a job this session does not know."""
        row = self._rows.get(job_uid)
        return 0.0 if row is None else self._shares[row]

    def _with_task(self, row: int, task: TaskInfo, sign: int) -> np.ndarray:
        """A copy of a job's allocation with `task` added (sign 1) or removed (sign -1)."""
        vector: np.ndarray = self._allocated[row].copy()
        vector[: self._pods] += sign * task.vector
        vector[self._pods] += sign
        return vector

    # --- ordering ---------------------------------------------------------------------------------
    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        lrow, rrow = self._rows.get(left.uid), self._rows.get(right.uid)
        if lrow is None or rrow is None:
            return 0
        lshare, rshare = self._shares[lrow], self._shares[rrow]
        return (lshare > rshare) - (lshare < rshare)

    def queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
        if self._hdrf is None:
            return 0
        self._hdrf.refresh(self._allocated)
        result = self._hdrf.compare(left, right)
        return (result > 0) - (result < 0)

    # --- eviction -----------------------------------------------------------------------------------
    def preemptable(
        self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        row = self._rows.get(preemptor.job)
        if row is None:
            return []
        inverse = self._inverse
        preemptor_share = float(dominant_shares(self._with_task(row, preemptor, 1), inverse))
        remaining: dict[str, np.ndarray] = {}
        victims = []
        for task in preemptees:
            left = remaining.get(task.job)
            if left is None:
                victim_row = self._rows.get(task.job)
                if victim_row is None:
                    continue
                left = remaining[task.job] = self._allocated[victim_row].copy()
            left[: self._pods] -= task.vector
            left[self._pods] -= 1
            victim_share = float(dominant_shares(left, inverse))
            if preemptor_share < victim_share or abs(preemptor_share - victim_share) <= SHARE_DELTA:
                victims.append(task)
        return victims

    def reclaimable(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> list[TaskInfo] | None:
        """hdrf only: a reclaimee is a victim if, with the reclaimer's task placed and the reclaimee
        removed (one reclaimee at a time, not cumulatively, as Volcano), the reclaimer's queue still
        sorts before the reclaimee's."""
        hdrf = self._hdrf
        if hdrf is None:
            return None
        job = ssn.jobs.get(reclaimer.job)
        queue = ssn.queues.get(job.queue) if job is not None else None
        row = self._rows.get(reclaimer.job)
        if queue is None or row is None:
            return []
        trial = self._allocated.copy()
        trial[row] = self._with_task(row, reclaimer, 1)
        victims = []
        for task in reclaimees:
            victim_job = ssn.jobs.get(task.job)
            victim_queue = ssn.queues.get(victim_job.queue) if victim_job is not None else None
            victim_row = self._rows.get(task.job)
            if victim_queue is None or victim_row is None:
                continue
            saved = trial[victim_row].copy()
            trial[victim_row] = self._with_task(victim_row, task, -1)
            hdrf.evaluate(trial)
            if hdrf.compare(queue, victim_queue) < 0:
                victims.append(task)
            trial[victim_row] = saved
        hdrf.dirty = True  # the trial evaluations overwrote the live tree
        return victims

    # --- live shares ----------------------------------------------------------------------------------
    def _update(self, task: TaskInfo, sign: int) -> None:
        row = self._rows.get(task.job)
        if row is None:
            return
        allocated = self._allocated[row]
        allocated[: self._pods] += sign * task.vector
        allocated[self._pods] += sign
        self._shares[row] = float(dominant_shares(allocated, self._inverse))
        if self._hdrf is not None:
            self._hdrf.dirty = True

    def on_allocate(self, ssn: Session, event: Event) -> None:
        self._update(event.task, 1)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        self._update(event.task, -1)
