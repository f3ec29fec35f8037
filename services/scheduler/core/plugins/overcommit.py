"""overcommit: admit PodGroups while the cluster, overcommitted by a factor, has room (Volcano's overcommit).

idle = total allocatable × `overcommit-factor` (default 1.2; below 1 means the default) − what the nodes'
pods use. Admitted work is the minResources of every Inqueue PodGroup, plus, for a Running PodGroup whose
allocated tasks reach minMember, the part of its minResources its allocated tasks do not cover yet. A
PodGroup is admitted iff admitted work + its minResources fits idle on the dimensions it asks for; once
admitted its minResources count as admitted work. The check is on cluster aggregates: fragmentation is
not looked at, that is what the allocate action finds out. A refusal is the cluster's load (CAPACITY),
with the amount by which the job does not fit: what a job overdue by the starvation bound may pass.

A queue annotated `volcano.sh/overcommit-factor` also has a budget of its own (queue_overcommit.py),
checked after the cluster-wide one; `max-queue-overcommit-factor` (default: `overcommit-factor`; a
non-finite value or one below 1 is a conf error) caps every queue's factor. A refusal there is the
queue's quota.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from contracts.resources import Resources
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.plugin import Plugin, Vote
from services.scheduler.core.model.pending import CAPACITY, Refusal
from services.scheduler.core.plugins.fairness import over_amounts, over_limit, reserves_minimum, unmet_minimum
from services.scheduler.core.plugins.queue_overcommit import QueueBudgets

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo

DEFAULT_FACTOR = 1.2
MAX_QUEUE_FACTOR = "max-queue-overcommit-factor"


class OvercommitPlugin(Plugin):
    name = "overcommit"
    arguments_spec: ClassVar[Mapping[str, type]] = {"overcommit-factor": float, MAX_QUEUE_FACTOR: float}

    @classmethod
    def argument_problems(cls, arguments: Mapping[str, Any]) -> list[str]:
        if MAX_QUEUE_FACTOR not in arguments:
            return []
        value = arguments[MAX_QUEUE_FACTOR]
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number) or number < 1.0:
            return [f"{MAX_QUEUE_FACTOR}: expected a finite number >= 1, got {value!r}"]
        return []

    def on_session_open(self, ssn: Session) -> None:
        factor = argument(self.arguments, "overcommit-factor", DEFAULT_FACTOR)
        if factor < 1.0:
            factor = DEFAULT_FACTOR
        self.queues = QueueBudgets(ssn, argument(self.arguments, MAX_QUEUE_FACTOR, factor))
        used = ssn.resources.resources(ssn.nodes.total_used())
        self.idle = ssn.total_resource.scale(factor) - used
        self.admitted = Resources()
        for job in ssn.jobs.values():
            if job.min_resources is not None and job.phase == "Inqueue":
                self.admitted = self.admitted + job.min_resources
            elif reserves_minimum(job):
                self.admitted = self.admitted + unmet_minimum(job)

    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        if job.min_resources is None:
            return Vote.PERMIT
        if over_limit(self.admitted, job.min_resources, self.idle):
            return Vote.REJECT
        if self.queues.budgets and self.queues.refusal(job) is not None:
            return Vote.REJECT
        return Vote.PERMIT

    def enqueue_reason(self, ssn: Session, job: JobInfo) -> str:
        return self.enqueue_refusal(ssn, job).text

    def enqueue_refusal(self, ssn: Session, job: JobInfo) -> Refusal:
        """The cluster's load first (more nodes, or pods ending, would let the job in), then the budget of
        its queue or of an annotated ancestor (its quota)."""
        assert job.min_resources is not None
        over = over_limit(self.admitted, job.min_resources, self.idle)
        if over:
            missing = over_amounts(self.admitted, job.min_resources, self.idle)
            return Refusal(f"resource in cluster is overused on {', '.join(over)}", CAPACITY, missing)
        refusal = self.queues.refusal(job)
        assert refusal is not None
        return refusal

    def job_enqueued(self, ssn: Session, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.admitted = self.admitted + job.min_resources
            self.queues.admitted(job)
