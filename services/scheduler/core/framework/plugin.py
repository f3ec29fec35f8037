"""The plugin contract: one base class whose methods are the extension points.

A plugin overrides only the extension points it implements; the session treats a method a plugin does
not override as "not registered" (exactly like a Volcano plugin that never calls `ssn.AddXxxFn`). How the
results of several plugins combine (first non-zero, AND, OR, sum, vote, per-tier intersection) is written
once, in `framework.tiers`, never in a plugin.

Every method receives the session explicitly: plugins hold only their own per-session state (shares,
deserved quotas, caches), set up in `on_session_open`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from services.scheduler.core.model.pending import CONSTRAINT, QUOTA, Refusal

if TYPE_CHECKING:
    from contracts.resources import Resources
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.queue import QueueInfo
    from services.scheduler.core.model.task import TaskInfo


class Vote(enum.IntEnum):
    """Answer of a voting extension point (JobPipelined, JobEnqueueable)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


@dataclass(frozen=True, slots=True)
class NodeFailure:
    """Nodes rejected for one reason. `resolvable` says whether evicting pods from the node could fix it
    (Kubernetes' Unschedulable vs UnschedulableAndUnresolvable): preempt and reclaim ignore resolvable
    failures, since eviction is exactly what they do. `kind` says what the reason is about, for the
    PodGroup's pending reason: a placement constraint, the node's room (`CAPACITY`, short on `dimension`),
    or room held for a starving job."""

    reason: str
    nodes: np.ndarray  # bool mask over the session's NodeTable
    resolvable: bool = False
    kind: str = CONSTRAINT
    dimension: str = ""


@dataclass(frozen=True, slots=True)
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class Event:
    """Allocate/deallocate notification for plugins that keep live shares."""

    task: TaskInfo


class Plugin:
    """Base class of every scheduler plugin. Subclasses set `name` and override extension points."""

    name: ClassVar[str] = ""
    # argument names this plugin understands (an unknown one in the conf is an error naming it)
    arguments_spec: ClassVar[Mapping[str, type]] = {}

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.arguments = dict(arguments)

    @classmethod
    def argument_problems(cls, arguments: Mapping[str, Any]) -> list[str]:
        """What is wrong inside the arguments the conf gives (nested sections), each naming its path
        under `arguments`; the conf parser reports them with the plugin's place. Names are checked against
        `arguments_spec` already."""
        return []

    # --- lifecycle ---------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        """Called once when the session opens, in tier order, before any action runs. Build per-session
        state here (queue attributes, shares, caches)."""

    def on_session_close(self, ssn: Session) -> None:
        """Called once after the last action, in tier order. May record PodGroup conditions on jobs."""

    # --- ordering: first plugin returning non-zero decides (negative: l first) ----------------------
    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        """Compare two jobs for scheduling order. Return <0 if `left` goes first, >0 if `right`, 0 to
        let the next plugin (or the creation-time/UID fallback) decide."""
        raise NotImplementedError

    def queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
        """Compare two queues for allocation order; same protocol as job_order."""
        raise NotImplementedError

    def victim_queue_order(
        self, ssn: Session, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo
    ) -> int:
        """Which queue to evict from first when reclaiming for `preemptor`; 0 falls back to the reverse
        of queue_order (lowest-priority queue first)."""
        raise NotImplementedError

    def task_order(self, ssn: Session, left: TaskInfo, right: TaskInfo) -> int:
        """Compare two tasks of one job; same protocol as job_order (fallback: pod index, creation, UID)."""
        raise NotImplementedError

    # --- feasibility ---------------------------------------------------------------------------------
    def pre_predicate(self, ssn: Session, task: TaskInfo) -> str | None:
        """Task-level check before any node is looked at. Return a reason to fail the task, else None."""
        raise NotImplementedError

    def predicate(self, ssn: Session, task: TaskInfo) -> Sequence[NodeFailure]:
        """Which nodes cannot host `task`, by reason, as boolean masks over all nodes. All plugins must
        pass. Resource fit against idle/future-idle is checked by the actions themselves."""
        raise NotImplementedError

    def node_order(self, ssn: Session, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
        """Scores (float array, one per candidate node index) for placing `task`; summed across plugins,
        the highest total wins."""
        raise NotImplementedError

    # --- eviction -------------------------------------------------------------------------------------
    def preemptable(
        self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> list[TaskInfo] | None:
        """Which of `preemptees` (same queue) `preemptor` may evict. None abstains; an empty list vetoes
        the whole tier (Volcano's fall-through quirk); the non-abstaining answers of a tier intersect."""
        raise NotImplementedError

    def reclaimable(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> list[TaskInfo] | None:
        """Like preemptable, for cross-queue reclaim."""
        raise NotImplementedError

    # --- queue gates ---------------------------------------------------------------------------------
    def overused(self, ssn: Session, queue: QueueInfo) -> bool:
        """True if the queue may not get more this cycle; any plugin saying True wins."""
        raise NotImplementedError

    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        """May `task` be allocated within `queue`'s quota? All plugins must agree."""
        raise NotImplementedError

    def quota_reason(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> str:
        """Not an extension point: explains a False from `allocatable` for the Unschedulable condition,
        e.g. "queue q1 over capability cpu". Only called on that cold path."""
        return f"queue {queue.name} has no room ({self.name})"

    def quota_refusal(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> Refusal:
        """Not an extension point: `quota_reason` as a Refusal, which says whether more nodes would lift the
        limit (the default: no). Only called on the cold path."""
        return Refusal(self.quota_reason(ssn, queue, task), QUOTA)

    def quota_fits(self, ssn: Session, queue: QueueInfo, request: Resources) -> bool:
        """Not an extension point: could the queue's quota ever hold `request`, were nothing else of the
        queue running (default: yes)? Room is held for a starving job only if it could (cold path)."""
        return True

    def overused_refusal(self, ssn: Session, queue: QueueInfo) -> Refusal:
        """Not an extension point: why `overused` keeps the queue out of this session (cold path)."""
        return Refusal(f"queue {queue.name} is overused ({self.name})", QUOTA)

    def preemptive(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        """May `queue` reclaim for `task` (it is still below what it deserves)? All plugins must agree."""
        raise NotImplementedError

    # --- job gates ---------------------------------------------------------------------------------
    def job_valid(self, ssn: Session, job: JobInfo) -> ValidateResult | None:
        """Is the job schedulable at all this session? The first failing result is reported."""
        raise NotImplementedError

    def job_ready(self, ssn: Session, job: JobInfo) -> bool:
        """May the job's allocations be committed (the gang is satisfied)? AND across plugins."""
        raise NotImplementedError

    def job_pipelined(self, ssn: Session, job: JobInfo) -> Vote:
        """Counting pipelined tasks, is the gang satisfied? Voted per tier (any reject wins, a permit in a
        tier decides)."""
        raise NotImplementedError

    def job_starving(self, ssn: Session, job: JobInfo) -> bool:
        """Does the job still want resources (preempt/reclaim act only for starving jobs)? The first tier
        with any registered plugin decides, by AND."""
        raise NotImplementedError

    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        """May a Pending PodGroup move to Inqueue? Voted like job_pipelined."""
        raise NotImplementedError

    def job_enqueued(self, ssn: Session, job: JobInfo) -> None:
        """Notification that the job was moved to Inqueue (reserve its minResources)."""
        raise NotImplementedError

    def enqueue_reason(self, ssn: Session, job: JobInfo) -> str:
        """Not an extension point: explains a REJECT from `job_enqueueable` for the Unschedulable
        condition, e.g. "queue q1 capability exceeded on cpu". Only called on that cold path."""
        return f"podgroup rejected by {self.name} at enqueue"

    def enqueue_refusal(self, ssn: Session, job: JobInfo) -> Refusal:
        """Not an extension point: `enqueue_reason` as a Refusal (default: a quota refusal). A CAPACITY
        refusal lets a job overdue by the starvation bound pass (cold path)."""
        return Refusal(self.enqueue_reason(ssn, job), QUOTA)

    def job_passes_load(self, ssn: Session, job: JobInfo) -> bool:
        """May enqueue admit the job although the cluster's load refuses it (every refusal CAPACITY, none a
        queue's quota)? Any plugin saying True wins. The starvation plugin says so for a job past the
        starvation bound (room can be held only for pods that exist) and for one that ends before the room
        held for such a job is needed."""
        raise NotImplementedError

    # --- network topology -------------------------------------------------------------------------------
    def hypernode_gradients(self, ssn: Session, job: JobInfo) -> list[list[str]] | None:
        """Hard-topology jobs: candidate HyperNode names grouped in gradients to try in order (narrowest
        first). None: not this plugin's job."""
        raise NotImplementedError

    def hypernode_order(self, ssn: Session, job: JobInfo, hypernodes: Sequence[str]) -> dict[str, float]:
        """Scores of candidate HyperNodes for a job; summed across plugins."""
        raise NotImplementedError

    # --- live accounting -------------------------------------------------------------------------------
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """A task was allocated or pipelined in the session (update shares)."""
        raise NotImplementedError

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """A task's allocation or pipelining was undone, or it was evicted (update shares)."""
        raise NotImplementedError


def implements(plugin: Plugin, point: str) -> bool:
    """Did this plugin's class override extension point `point`?"""
    return getattr(type(plugin), point) is not getattr(Plugin, point)
