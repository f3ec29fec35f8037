"""proportion: weight-based queue quotas (Volcano's proportion plugin).

Queues that have at least one job in the session share the cluster by water-filling (see
`fairness.water_fill`): each deserves its weight's part, capped by its real capability (capability, and
what other queues' guarantees leave) and by its request, raised to its guarantee. With that:
- queue order: higher spec.priority first, then the lower share (max over dimensions of allocated/deserved);
- overused: the queue holds at least its deserved on every dimension (pods included, as in Volcano, so a
  queue with pending tasks is rarely overused: the allocatable check is what usually stops it);
- allocatable / preemptive: the queue is Open and allocated + request stays within deserved on the
  dimensions the task requests;
- reclaimable: per victim queue, victims are taken while the queue still holds more than it deserves;
- enqueue: the queue is Open and the job's minResources fit its real capability next to what the queue
  holds and has admitted, minus what its jobs hold above their minimum (elastic).
Allocated and share follow every allocate/deallocate event.

Its refusals are the queue's quota (QUOTA) only where its capability holds it below the cluster (a closed
queue, a real capability below the cluster's total, a deserved share at that cap); a share or a real
capability that would grow with the cluster is the cluster's size showing (CAPACITY).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from contracts.resources import Resources
from services.scheduler.core.framework.plan import QueueUpdate
from services.scheduler.core.framework.plugin import Event, Plugin, Vote
from services.scheduler.core.model.pending import CAPACITY, QUOTA, Refusal
from services.scheduler.core.plugins.fairness import (
    QueueDemand,
    QueueLedger,
    capability_limits,
    capped_below,
    over_amounts,
    over_limit,
    real_capability,
    total_guarantee,
    water_fill,
    with_pods,
)

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.queue import QueueInfo
    from services.scheduler.core.model.task import TaskInfo


class ProportionPlugin(Plugin):
    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        total = self.total = with_pods(ssn.total_resource, int(ssn.nodes.max_pods.sum()))
        guarantees = total_guarantee(ssn.queues.values())
        self.ledgers: dict[str, QueueLedger] = {}
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            ledger = self.ledgers.get(queue.name)
            if ledger is None:
                ledger = self.ledgers[queue.name] = QueueLedger(queue.name, queue.guarantee)
                ledger.real_capability = real_capability(
                    total, guarantees, ledger.guarantee, capability_limits(queue.capability)
                )
            ledger.add_job(job)
        demands = [
            QueueDemand(
                name,
                ssn.queues[name].weight,
                Resources(ledger.request),
                ledger.real_capability,
                ledger.guarantee,
            )
            for name, ledger in self.ledgers.items()
        ]
        for name, deserved in water_fill(total, demands).items():
            self.ledgers[name].set_deserved(deserved)

    def _ledger_of(self, ssn: Session, task: TaskInfo) -> QueueLedger | None:
        job = ssn.jobs.get(task.job)
        return self.ledgers.get(job.queue) if job is not None else None

    # --- ordering ---------------------------------------------------------------------------------
    def queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        lshare, rshare = self.ledgers[left.name].share, self.ledgers[right.name].share
        return (lshare > rshare) - (lshare < rshare)

    # --- queue gates -------------------------------------------------------------------------------
    def overused(self, ssn: Session, queue: QueueInfo) -> bool:
        ledger = self.ledgers[queue.name]
        return ledger.deserved.less_equal(ledger.allocated)

    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        ledger = self.ledgers[queue.name]
        return queue.is_open and not ledger.over(task.resreq, ledger.deserved)

    def quota_reason(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> str:
        if not queue.is_open:
            return f"queue {queue.name} is {queue.state}"
        ledger = self.ledgers[queue.name]
        return f"queue {queue.name} over deserved {', '.join(ledger.over(task.resreq, ledger.deserved))}"

    def quota_refusal(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> Refusal:
        """A share at the queue's capability is quota; a share of a cluster too small for every queue's
        demand is capacity, unless the cluster is left with room for the task (then the share stops it:
        `share`, judged at session close)."""
        text = self.quota_reason(ssn, queue, task)
        if not queue.is_open:
            return Refusal(text, QUOTA)
        ledger = self.ledgers[queue.name]
        over = over_amounts(ledger.allocated, task.resreq, ledger.deserved)
        if self._capped(ledger, over):
            return Refusal(text, QUOTA)
        return Refusal(text, CAPACITY, over, share=True)

    def quota_fits(self, ssn: Session, queue: QueueInfo, request: Resources) -> bool:
        return queue.is_open and not over_limit({}, request, self.ledgers[queue.name].deserved)

    def overused_refusal(self, ssn: Session, queue: QueueInfo) -> Refusal:
        ledger = self.ledgers[queue.name]
        text = f"queue {queue.name} holds its deserved share"
        return Refusal(text, QUOTA) if self._capped(ledger, ledger.deserved) else Refusal(text, CAPACITY)

    def _capped(self, ledger: QueueLedger, dimensions: Resources) -> bool:
        """Is the queue's deserved at a real capability below the cluster on one of `dimensions`?"""
        capped = capped_below(ledger.real_capability, self.total, dimensions)
        return any(ledger.deserved.get(d) >= ledger.real_capability[d] for d in capped)

    def preemptive(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.allocatable(ssn, queue, task)

    # --- eviction -------------------------------------------------------------------------------------
    def reclaimable(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        victims = []
        held: dict[str, Resources] = {}  # per victim queue, what it holds once the victims so far are gone
        for task in reclaimees:
            job = ssn.jobs.get(task.job)
            ledger = self.ledgers.get(job.queue) if job is not None else None
            if ledger is None:
                continue
            allocated = held.get(ledger.name)
            if allocated is None:
                allocated = Resources(ledger.allocated)
            if not allocated.less_equal(ledger.deserved):
                allocated = with_pods(allocated - task.resreq, -1)
                victims.append(task)
            held[ledger.name] = allocated
        return victims

    # --- job gates -----------------------------------------------------------------------------------
    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        if not ssn.queues[job.queue].is_open:
            return Vote.REJECT
        if job.min_resources is None:
            return Vote.PERMIT
        shortfall = self.ledgers[job.queue].enqueue_shortfall(job.min_resources)
        return Vote.REJECT if shortfall else Vote.PERMIT

    def enqueue_reason(self, ssn: Session, job: JobInfo) -> str:
        queue = ssn.queues[job.queue]
        if not queue.is_open:
            return f"queue {queue.name} is {queue.state}"
        assert job.min_resources is not None
        shortfall = self.ledgers[job.queue].enqueue_shortfall(job.min_resources)
        return f"queue {queue.name} capability exceeded on {', '.join(shortfall)}"

    def enqueue_refusal(self, ssn: Session, job: JobInfo) -> Refusal:
        text = self.enqueue_reason(ssn, job)
        if not ssn.queues[job.queue].is_open:
            return Refusal(text, QUOTA)
        assert job.min_resources is not None
        ledger = self.ledgers[job.queue]
        excess = ledger.enqueue_excess(job.min_resources)
        if capped_below(ledger.real_capability, self.total, excess):
            return Refusal(text, QUOTA)
        return Refusal(text, CAPACITY, excess)

    def job_enqueued(self, ssn: Session, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.ledgers[job.queue].admit(job.min_resources)

    # --- live accounting -------------------------------------------------------------------------------
    def on_allocate(self, ssn: Session, event: Event) -> None:
        ledger = self._ledger_of(ssn, event.task)
        if ledger is not None:
            ledger.charge(event.task.resreq, 1)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        ledger = self._ledger_of(ssn, event.task)
        if ledger is not None:
            ledger.charge(event.task.resreq, -1)

    def queue_figures(self, ssn: Session) -> dict[str, QueueUpdate]:
        figures = {}
        for name, ledger in self.ledgers.items():
            figures[name] = ledger.update()
        return figures
