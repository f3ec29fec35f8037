"""How the answers of several plugins combine, written once (Volcano's session_plugins.go semantics).

| point | rule |
|---|---|
| job/queue/task order | the first plugin (in tier order) answering non-zero wins, else a fallback |
| victim queue order | first non-zero, else the reverse of queue order |
| predicate, pre-predicate | all must pass |
| node order | summed |
| preemptable, reclaimable | per tier: intersection of non-abstaining answers; an empty answer voids |
|  | the tier (falls through to the next tier); the first tier with an answer decides |
| overused | OR |
| allocatable, preemptive, job ready | AND |
| job pipelined, job enqueueable | vote: a reject anywhere wins; a permit ends the search after its tier |
| job starving | the first tier with a registered plugin decides, by AND; none anywhere: false |
| job passes load | OR |
| job valid | the first failing result |
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from contracts.resources import Resources
from services.scheduler.core.framework.plugin import (
    Event,
    NodeFailure,
    Plugin,
    ValidateResult,
    Vote,
    implements,
)
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.pending import QUOTA, Refusal
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import TaskInfo

if TYPE_CHECKING:
    from services.scheduler.core.conf import PluginOption

EXTENSION_POINTS = (
    "job_order",
    "queue_order",
    "victim_queue_order",
    "task_order",
    "pre_predicate",
    "predicate",
    "node_order",
    "preemptable",
    "reclaimable",
    "overused",
    "allocatable",
    "preemptive",
    "job_valid",
    "job_ready",
    "job_pipelined",
    "job_starving",
    "job_enqueueable",
    "job_enqueued",
    "job_passes_load",
    "hypernode_gradients",
    "hypernode_order",
    "on_allocate",
    "on_deallocate",
)


class TierDispatch:
    """Mixin for Session: per extension point, the enabled plugins grouped by tier."""

    def _index_plugins(self, tiers: Sequence[Sequence[tuple[PluginOption, Plugin]]]) -> None:
        self._tiered: dict[str, list[list[Plugin]]] = {}
        self._flat: dict[str, list[Plugin]] = {}
        for point in EXTENSION_POINTS:
            per_tier = [
                [plugin for option, plugin in tier if implements(plugin, point) and option.enabled(point)]
                for tier in tiers
            ]
            self._tiered[point] = per_tier
            self._flat[point] = [p for tier in per_tier for p in tier]

    def has(self, point: str) -> bool:
        return bool(self._flat[point])

    # --- ordering ---------------------------------------------------------------------------------
    def job_order_compare(self, left: JobInfo, right: JobInfo) -> int:
        """The first non-zero plugin answer; 0 when every plugin abstains (no creation-time fallback,
        which victim ordering needs)."""
        for plugin in self._flat["job_order"]:
            result = plugin.job_order(self, left, right)  # type: ignore[arg-type]
            if result:
                return result
        return 0

    def job_order_fn(self, left: JobInfo, right: JobInfo) -> bool:
        """True if `left` should be scheduled before `right`."""
        result = self.job_order_compare(left, right)
        if result:
            return result < 0
        if left.creation_timestamp != right.creation_timestamp:
            return left.creation_timestamp < right.creation_timestamp
        return left.uid < right.uid

    def queue_order_fn(self, left: QueueInfo, right: QueueInfo) -> bool:
        for plugin in self._flat["queue_order"]:
            result = plugin.queue_order(self, left, right)  # type: ignore[arg-type]
            if result:
                return result < 0
        if left.creation_timestamp != right.creation_timestamp:
            return left.creation_timestamp < right.creation_timestamp
        return left.uid < right.uid

    def victim_queue_order_fn(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> bool:
        for plugin in self._flat["victim_queue_order"]:
            result = plugin.victim_queue_order(self, left, right, preemptor)  # type: ignore[arg-type]
            if result:
                return result < 0
        return not self.queue_order_fn(left, right)

    def task_order_fn(self, left: TaskInfo, right: TaskInfo) -> bool:
        for plugin in self._flat["task_order"]:
            result = plugin.task_order(self, left, right)  # type: ignore[arg-type]
            if result:
                return result < 0
        # Volcano's CompareTask: replica index, then creation time, then UID
        if left.index != right.index and left.index >= 0 and right.index >= 0:
            return left.index < right.index
        if left.creation_timestamp != right.creation_timestamp:
            return left.creation_timestamp < right.creation_timestamp
        return left.uid < right.uid

    def victim_less(self, preemptor: TaskInfo) -> Callable[[TaskInfo, TaskInfo], bool]:
        """Volcano's BuildVictimsPriorityQueue order, `less(a, b)` true when `a` is evicted first: tasks
        of one job in reverse task order; jobs of different queues by victim queue order; jobs of one
        queue in reverse job order, then reverse task order. Used by preempt, reclaim and capacity."""
        preemptor_queue = self.queues[self.jobs[preemptor.job].queue]  # type: ignore[attr-defined]

        def less(left: TaskInfo, right: TaskInfo) -> bool:
            if left.job == right.job:
                return not self.task_order_fn(left, right)
            left_job, right_job = self.jobs[left.job], self.jobs[right.job]  # type: ignore[attr-defined]
            if left_job.queue != right_job.queue:
                return self.victim_queue_order_fn(
                    self.queues[left_job.queue],  # type: ignore[attr-defined]
                    self.queues[right_job.queue],  # type: ignore[attr-defined]
                    preemptor_queue,
                )
            order = self.job_order_compare(left_job, right_job)
            if order:
                return order > 0
            return not self.task_order_fn(left, right)

        return less

    # --- feasibility -----------------------------------------------------------------------------
    def pre_predicate_fn(self, task: TaskInfo) -> str | None:
        for plugin in self._flat["pre_predicate"]:
            reason = plugin.pre_predicate(self, task)  # type: ignore[arg-type]
            if reason:
                return reason
        return None

    def predicate_failures(self, task: TaskInfo) -> list[NodeFailure]:
        failures: list[NodeFailure] = []
        for plugin in self._flat["predicate"]:
            failures.extend(plugin.predicate(self, task))  # type: ignore[arg-type]
        return failures

    def node_order_fn(self, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
        total = np.zeros(len(candidates), dtype=np.float64)
        for plugin in self._flat["node_order"]:
            total += plugin.node_order(self, task, candidates)  # type: ignore[arg-type]
        return total

    # --- eviction --------------------------------------------------------------------------------
    def _victims(self, point: str, actor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo] | None:
        for tier in self._tiered[point]:
            victims: list[TaskInfo] | None = None
            for plugin in tier:
                answer = getattr(plugin, point)(self, actor, candidates)
                if answer is None:
                    continue
                if not answer:
                    victims = None
                    break
                if victims is None:
                    victims = list(answer)
                else:
                    keep = {t.uid for t in answer}
                    victims = [t for t in victims if t.uid in keep]
            if victims is not None:
                return victims
        return None

    def refusing_plugins(self, point: str, actor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[str]:
        """The plugins whose own answer at `point` (preemptable, reclaimable) leaves no victim among
        `candidates`: why no victim was found, in words (cold path)."""
        return [
            plugin.name
            for plugin in self._flat[point]
            if getattr(plugin, point)(self, actor, candidates) == []
        ]

    def preemptable_fn(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._victims("preemptable", preemptor, preemptees) or []

    def reclaimable_fn(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._victims("reclaimable", reclaimer, reclaimees) or []

    # --- queue gates -------------------------------------------------------------------------------
    def overused_fn(self, queue: QueueInfo) -> bool:
        return any(p.overused(self, queue) for p in self._flat["overused"])  # type: ignore[arg-type]

    def allocatable_fn(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(p.allocatable(self, queue, task) for p in self._flat["allocatable"])  # type: ignore[arg-type]

    def quota_reason(self, queue: QueueInfo, task: TaskInfo) -> str:
        """Why allocatable_fn said no (cold path, for the Unschedulable condition)."""
        for plugin in self._flat["allocatable"]:
            if not plugin.allocatable(self, queue, task):  # type: ignore[arg-type]
                return plugin.quota_reason(self, queue, task)  # type: ignore[arg-type]
        return f"queue {queue.name} has no room"

    def quota_refusal(self, queue: QueueInfo, task: TaskInfo) -> Refusal:
        """quota_reason as a Refusal: whether more nodes would lift the limit (cold path)."""
        for plugin in self._flat["allocatable"]:
            if not plugin.allocatable(self, queue, task):  # type: ignore[arg-type]
                return plugin.quota_refusal(self, queue, task)  # type: ignore[arg-type]
        return Refusal(f"queue {queue.name} has no room", QUOTA)

    def quota_fits(self, queue: QueueInfo, request: Resources) -> bool:
        """Could the queue's quota ever hold `request` (every allocatable plugin agrees; cold path)?"""
        return all(p.quota_fits(self, queue, request) for p in self._flat["allocatable"])  # type: ignore[arg-type]

    def overused_refusal(self, queue: QueueInfo) -> Refusal:
        """Why overused_fn keeps the queue out: the first plugin saying so (cold path)."""
        for plugin in self._flat["overused"]:
            if plugin.overused(self, queue):  # type: ignore[arg-type]
                return plugin.overused_refusal(self, queue)  # type: ignore[arg-type]
        return Refusal(f"queue {queue.name} is overused", QUOTA)

    def preemptive_fn(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(p.preemptive(self, queue, task) for p in self._flat["preemptive"])  # type: ignore[arg-type]

    # --- job gates -----------------------------------------------------------------------------------
    def job_valid_fn(self, job: JobInfo) -> ValidateResult | None:
        for plugin in self._flat["job_valid"]:
            result = plugin.job_valid(self, job)  # type: ignore[arg-type]
            if result is not None and not result.passed:
                return result
        return None

    def job_ready_fn(self, job: JobInfo) -> bool:
        return all(p.job_ready(self, job) for p in self._flat["job_ready"])  # type: ignore[arg-type]

    def _vote(self, point: str, job: JobInfo) -> bool:
        for tier in self._tiered[point]:
            permitted = False
            for plugin in tier:
                answer = getattr(plugin, point)(self, job)
                if answer == Vote.REJECT:
                    return False
                if answer == Vote.PERMIT:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined_fn(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable_fn(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def enqueue_reason(self, job: JobInfo) -> str:
        """Why job_enqueueable_fn said no: the first rejecting plugin's explanation (cold path)."""
        for plugin in self._flat["job_enqueueable"]:
            if plugin.job_enqueueable(self, job) == Vote.REJECT:  # type: ignore[arg-type]
                return plugin.enqueue_reason(self, job)  # type: ignore[arg-type]
        return "podgroup not admitted by enqueue"

    def enqueue_refusals(self, job: JobInfo) -> list[Refusal]:
        """What every plugin rejecting the job at enqueue says, in tier order (cold path)."""
        return [
            plugin.enqueue_refusal(self, job)  # type: ignore[arg-type]
            for plugin in self._flat["job_enqueueable"]
            if plugin.job_enqueueable(self, job) == Vote.REJECT  # type: ignore[arg-type]
        ]

    def job_passes_load_fn(self, job: JobInfo) -> bool:
        return any(p.job_passes_load(self, job) for p in self._flat["job_passes_load"])  # type: ignore[arg-type]

    def job_enqueued_fn(self, job: JobInfo) -> None:
        for plugin in self._flat["job_enqueued"]:
            plugin.job_enqueued(self, job)  # type: ignore[arg-type]

    def job_starving_fn(self, job: JobInfo) -> bool:
        for tier in self._tiered["job_starving"]:
            if tier:
                return all(p.job_starving(self, job) for p in tier)  # type: ignore[arg-type]
        return False

    # --- topology ------------------------------------------------------------------------------------
    def hypernode_gradients_fn(self, job: JobInfo) -> list[list[str]] | None:
        for plugin in self._flat["hypernode_gradients"]:
            gradients = plugin.hypernode_gradients(self, job)  # type: ignore[arg-type]
            if gradients is not None:
                return gradients
        return None

    def hypernode_order_fn(self, job: JobInfo, hypernodes: Sequence[str]) -> dict[str, float]:
        scores = dict.fromkeys(hypernodes, 0.0)
        for plugin in self._flat["hypernode_order"]:
            for name, score in plugin.hypernode_order(self, job, hypernodes).items():  # type: ignore[arg-type]
                scores[name] = scores.get(name, 0.0) + score
        return scores

    # --- events --------------------------------------------------------------------------------------
    def fire_allocate(self, task: TaskInfo) -> None:
        event = Event(task)
        for plugin in self._flat["on_allocate"]:
            plugin.on_allocate(self, event)  # type: ignore[arg-type]

    def fire_deallocate(self, task: TaskInfo) -> None:
        event = Event(task)
        for plugin in self._flat["on_deallocate"]:
            plugin.on_deallocate(self, event)  # type: ignore[arg-type]
