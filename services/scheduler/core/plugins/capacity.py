"""capacity: elastic queue quotas from explicit spec.deserved (Volcano's capacity plugin).

A queue deserves its spec.deserved (flat: capped by its real capability) raised to its guarantee. It may
grow beyond that up to its real capability (there is no overused gate); reclaim brings it back:
- queue order: higher spec.priority first, then the lower share; a queue that deserves nothing has share
  1 and, on equal shares, goes after queues that deserve something;
- allocatable: the queue is Open (and a leaf, with hierarchy) and allocated + request stays within the real
  capability on the requested dimensions, for the queue and every ancestor;
- preemptive: within the real capability, and within deserved on at least one requested dimension (or,
  up to `ancestorReclaimLevel`, within an ancestor's deserved);
- reclaimable: a victim must share a resource with the reclaimer, leave its queue's guarantee whole, and
  either request nothing its queue deserves or come from a queue above its deserved on a dimension the
  victim uses (ancestors up to `ancestorReclaimLevel` must agree);
- enqueue: the job's minResources fit the real capability next to what the queue holds and has admitted
  minus what its jobs hold above their minimum, for the queue and every ancestor.

With `enableHierarchy` queues form a tree (see `capacity_tree`); allocations and admissions roll up to
every ancestor. Deliberate differences from Volcano: a job on a non-leaf queue makes only that queue
refuse (Volcano stops the whole plugin for the session), its tasks still count towards the queue and its
ancestors; and ancestors' shares follow allocations live (Volcano leaves them at their session-open value
although hierarchical queue order compares them).

Its refusals are the queue's quota (QUOTA) unless the real capability that stops the job is the whole
cluster's room on every dimension it is short of (no capability or guarantee holds it lower): then more
nodes would let the job in (CAPACITY).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from contracts.resources import CPU, MEMORY, PODS, Resources
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.framework.plan import QueueUpdate
from services.scheduler.core.framework.plugin import Event, Plugin, Vote
from services.scheduler.core.model.pending import CAPACITY, QUOTA, Refusal
from services.scheduler.core.plugins.capacity_tree import InvalidHierarchy, QueueTree, build_tree, flat_tree
from services.scheduler.core.plugins.fairness import (
    QueueLedger,
    accumulate,
    capped_below,
    over_amounts,
    over_limit,
    total_guarantee,
    with_pods,
)

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.queue import QueueInfo
    from services.scheduler.core.model.task import TaskInfo


def _relevant(request: Resources, deserved: Resources) -> bool:
    """Does the queue deserve anything the task requests (every task requests one pod)?"""
    return deserved.get(PODS) > 0 or any(v > 0 and deserved.get(d) > 0 for d, v in request.items())


def _above_deserved(allocated: Mapping[str, int], deserved: Resources, request: Resources) -> bool:
    """Volcano's GreaterPartlyWithRelevantDimensions: allocated exceeds deserved on a dimension the request
    uses and the deserved names (cpu and memory: only a non-zero deserved counts as naming them)."""
    return any(
        v > 0
        and d != PODS
        and (deserved.get(d) > 0 if d in (CPU, MEMORY) else d in deserved)
        and allocated.get(d, 0) > deserved.get(d)
        for d, v in request.items()
    )


def _room_below_deserved(ledger: QueueLedger, request: Resources) -> bool:
    """allocated + request stays within deserved on at least one requested dimension."""
    return any(
        v > 0 and d != PODS and ledger.allocated.get(d, 0) + v <= ledger.deserved.get(d)
        for d, v in request.items()
    )


def _shares_resource(victim: Resources, reclaimer: Resources) -> bool:
    return any(v > 0 and d != PODS and reclaimer.get(d) > 0 for d, v in victim.items())


class CapacityPlugin(Plugin):
    name = "capacity"
    arguments_spec: ClassVar[Mapping[str, type]] = {"enableHierarchy": bool, "ancestorReclaimLevel": int}

    def on_session_open(self, ssn: Session) -> None:
        self.hierarchy = argument(self.arguments, "enableHierarchy", False)
        self.reclaim_level = argument(self.arguments, "ancestorReclaimLevel", 0)  # <= 0: no ancestor checks
        total = self.total = with_pods(ssn.total_resource, int(ssn.nodes.max_pods.sum()))
        self.invalid = ""
        try:
            if self.hierarchy:
                self.tree = build_tree(ssn.queues, total)
            else:
                queues = {
                    job.queue: ssn.queues[job.queue] for job in ssn.jobs.values() if job.queue in ssn.queues
                }
                self.tree = flat_tree(queues.values(), total, total_guarantee(ssn.queues.values()))
        except InvalidHierarchy as exc:
            self.invalid = f"queue hierarchy is invalid: {exc}"
            self.tree = QueueTree({}, {}, {})
        self.chains = {name: self.tree.chain(name) for name in self.tree.ledgers}
        for job in ssn.jobs.values():
            if job.queue in ssn.queues:
                for ledger in self.chains.get(job.queue, ()):
                    ledger.add_job(job)

    # --- ordering ---------------------------------------------------------------------------------
    @staticmethod
    def _compare(left: QueueLedger, right: QueueLedger) -> int:
        if left.share != right.share:
            return -1 if left.share < right.share else 1
        return right.has_deserved - left.has_deserved

    def queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        if self.invalid:
            return 0
        if not self.hierarchy:
            return self._compare(self.tree.ledgers[left.name], self.tree.ledgers[right.name])
        tree = self.tree
        lleaf, rleaf = tree.is_leaf(left.name), tree.is_leaf(right.name)
        if lleaf != rleaf:
            return -1 if lleaf else 1
        lname, rname = left.name, right.name
        if lleaf:  # leaves compare through their ancestors just below the deepest common one
            level = tree.common_level(lname, rname) + 1
            lancestors, rancestors = tree.ancestors[lname], tree.ancestors[rname]
            lname = lancestors[level] if level < len(lancestors) else lname
            rname = rancestors[level] if level < len(rancestors) else rname
        return self._compare(tree.ledgers[lname], tree.ledgers[rname])

    def victim_queue_order(
        self, ssn: Session, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo
    ) -> int:
        """With hierarchy, the queue sharing a deeper ancestor with the preemptor is evicted from first."""
        if not self.hierarchy or self.invalid:
            return 0
        llevel = self.tree.common_level(left.name, preemptor.name)
        rlevel = self.tree.common_level(right.name, preemptor.name)
        return (llevel < rlevel) - (llevel > rlevel)

    # --- queue gates -------------------------------------------------------------------------------
    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        return not self.quota_reason(ssn, queue, task)

    def quota_reason(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> str:
        if self.invalid:
            return self.invalid
        if not queue.is_open:
            return f"queue {queue.name} is {queue.state}"
        if not self.tree.is_leaf(queue.name):
            return f"queue {queue.name} is not a leaf queue"
        for ledger in self.chains[queue.name]:
            over = ledger.over(task.resreq, ledger.real_capability)
            if over:
                return f"queue {ledger.name} over capability {', '.join(over)}"
        return ""

    def quota_refusal(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> Refusal:
        text = self.quota_reason(ssn, queue, task)
        if self.invalid or not queue.is_open or not self.tree.is_leaf(queue.name):
            return Refusal(text, QUOTA)
        for ledger in self.chains[queue.name]:
            over = over_amounts(ledger.allocated, task.resreq, ledger.real_capability)
            if over:
                return self._refusal(text, ledger, over)
        return Refusal(text, QUOTA)

    def quota_fits(self, ssn: Session, queue: QueueInfo, request: Resources) -> bool:
        if self.invalid or not queue.is_open or not self.tree.is_leaf(queue.name):
            return False
        return all(not over_limit({}, request, ledger.real_capability) for ledger in self.chains[queue.name])

    def _refusal(self, text: str, ledger: QueueLedger, over: Resources) -> Refusal:
        if capped_below(ledger.real_capability, self.total, over):
            return Refusal(text, QUOTA)
        return Refusal(text, CAPACITY, over)

    def preemptive(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        if self.invalid or not queue.is_open:
            return False
        ledger = self.tree.ledgers[queue.name]
        if ledger.over(task.resreq, ledger.real_capability):
            return False
        if _room_below_deserved(ledger, task.resreq):
            return True
        ancestors = self.tree.ancestors_within(queue.name, self.reclaim_level)
        return any(_room_below_deserved(self.tree.ledgers[name], task.resreq) for name in ancestors)

    # --- eviction -------------------------------------------------------------------------------------
    def reclaimable(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        job = ssn.jobs.get(reclaimer.job)
        if self.invalid or job is None or job.queue not in self.tree.ledgers:
            return []
        held: dict[str, dict[str, int]] = {}  # per queue, what it holds once the victims so far are gone
        victims = []
        ordered = PriorityQueue(ssn.victim_less(reclaimer), reclaimees)
        while ordered:
            task = ordered.pop()
            queue = self._queue_of(ssn, task)
            if queue is None or not _shares_resource(task.resreq, reclaimer.init_resreq):
                continue
            ledger = self.tree.ledgers[queue]
            request = with_pods(task.resreq, 1)
            allocated = held.setdefault(queue, dict(ledger.allocated))
            if any(v > allocated.get(d, 0) - request.get(d) for d, v in ledger.guarantee.items() if v > 0):
                continue  # the victim's queue would fall below its guarantee
            charged = self._reclaim_scope(job.queue, queue, task, reclaimer, held)
            if charged is None:
                continue
            for figures in (allocated, *charged):
                accumulate(figures, request.items(), -1)
            victims.append(task)
        return victims

    def _queue_of(self, ssn: Session, task: TaskInfo) -> str | None:
        job = ssn.jobs.get(task.job)
        return job.queue if job is not None and job.queue in self.tree.ledgers else None

    def _reclaim_scope(
        self,
        own: str,
        victim_queue: str,
        task: TaskInfo,
        reclaimer: TaskInfo,
        held: dict[str, dict[str, int]],
    ) -> list[dict[str, int]] | None:
        """None if `task` may not be reclaimed; else the held figures of the ancestors checked, which the
        victim leaves too."""
        tree, levels = self.tree, self.reclaim_level if self.hierarchy else 0
        ledger = tree.ledgers[victim_queue]
        if not _relevant(task.resreq, ledger.deserved):
            # no real contention when both queues sit under a common ancestor and neither deserves the task
            shared = set(tree.ancestors_within(own, levels)) & set(
                tree.ancestors_within(victim_queue, levels)
            )
            if shared and not _relevant(reclaimer.resreq, tree.ledgers[own].deserved):
                return None
        elif not _above_deserved(held[victim_queue], ledger.deserved, task.resreq):
            return None
        charged = []
        for ancestor in tree.contested_ancestors(own, victim_queue, levels):
            figures = held.setdefault(ancestor, dict(tree.ledgers[ancestor].allocated))
            charged.append(figures)
            deserved = tree.ledgers[ancestor].deserved
            if _relevant(task.resreq, deserved) and not _above_deserved(figures, deserved, task.resreq):
                return None
        return charged

    # --- job gates -----------------------------------------------------------------------------------
    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        if self.invalid or not self.tree.is_leaf(job.queue) or not ssn.queues[job.queue].is_open:
            return Vote.REJECT
        if job.min_resources is None:
            return Vote.PERMIT
        fits = all(not ledger.enqueue_shortfall(job.min_resources) for ledger in self.chains[job.queue])
        return Vote.PERMIT if fits else Vote.REJECT

    def enqueue_reason(self, ssn: Session, job: JobInfo) -> str:
        queue = ssn.queues[job.queue]
        if self.invalid:
            return self.invalid
        if not queue.is_open:
            return f"queue {queue.name} is {queue.state}"
        if not self.tree.is_leaf(queue.name):
            return f"queue {queue.name} is not a leaf queue"
        assert job.min_resources is not None
        for ledger in self.chains[job.queue]:
            shortfall = ledger.enqueue_shortfall(job.min_resources)
            if shortfall:
                return f"queue {ledger.name} capability exceeded on {', '.join(shortfall)}"
        return ""

    def enqueue_refusal(self, ssn: Session, job: JobInfo) -> Refusal:
        text = self.enqueue_reason(ssn, job)
        queue = ssn.queues[job.queue]
        if self.invalid or not queue.is_open or not self.tree.is_leaf(queue.name):
            return Refusal(text, QUOTA)
        assert job.min_resources is not None
        for ledger in self.chains[job.queue]:
            excess = ledger.enqueue_excess(job.min_resources)
            if excess:
                return self._refusal(text, ledger, excess)
        return Refusal(text, QUOTA)

    def job_enqueued(self, ssn: Session, job: JobInfo) -> None:
        if job.min_resources is not None:
            for ledger in self.chains.get(job.queue, ()):
                ledger.admit(job.min_resources)

    # --- live accounting -------------------------------------------------------------------------------
    def _charge(self, ssn: Session, task: TaskInfo, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        if job is not None:
            for ledger in self.chains.get(job.queue, ()):
                ledger.charge(task.resreq, sign)

    def on_allocate(self, ssn: Session, event: Event) -> None:
        self._charge(ssn, event.task, 1)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        self._charge(ssn, event.task, -1)

    def queue_figures(self, ssn: Session) -> dict[str, QueueUpdate]:
        figures = {}
        for name, ledger in self.tree.ledgers.items():
            if name in ssn.queues:
                figures[name] = ledger.update()
        return figures
