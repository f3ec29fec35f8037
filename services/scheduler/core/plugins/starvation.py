"""starvation: a bound on how long a job may wait for room while smaller jobs keep taking it (Volcano
issues #4690, #3095, #2052; Volcano deleted its reservation plugin; its sla plugin orders jobs, holds no
room).

A job is overdue when its PodGroup has been Unschedulable for room (reason InsufficientClusterCapacity or
BehindStarvingJob, contracts/pending.py) for `threshold` or longer without a break (the condition keeps its
transition time while it stays True) and its gang is still short. Then:
- enqueue admits it past the cluster's load (job_passes_load; not past its queue's quota);
- the overdue job that has waited longest, whose queue's quota could hold it and whose pods would fit the
  cluster once the pods on it end, gets room held for it, Slurm-style (plugins/held_room.py): the room
  it will start in, by the expected ends of what runs there, and other pods go there only where they do
  not delay it (they end before it starts, or fit beside it). Its condition says so; the pods it holds
  back are BehindStarvingJob;
- while room is held, enqueue also admits past the load a job whose PodGroup says how long it runs
  (running estimate, simulated duration) and that would end before the held room is needed: the room the
  drain leaves idle is what it backfills.

Room is held for one job at a time: every replica computes the same from the whole cluster, whichever
replica owns the job, so none places into room another holds. Arguments: `threshold` (a duration, default
10m; 0 turns the plugin off).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from contracts.parse_fields import duration_seconds
from contracts.pending import BEHIND_STARVING_JOB, INSUFFICIENT_CLUSTER_CAPACITY
from contracts.resources import EMPTY, Resources
from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.framework.plugin import Event, NodeFailure, Plugin
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.pending import CONSTRAINT, HELD
from services.scheduler.core.model.task import TaskInfo, TaskStatus
from services.scheduler.core.plugins.held_room import HeldRoom, Timeline, hold_room

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session

DEFAULT_THRESHOLD_S = 600.0
WAITING_FOR_ROOM = frozenset({INSUFFICIENT_CLUSTER_CAPACITY, BEHIND_STARVING_JOB})


def threshold_seconds(arguments: Mapping[str, Any]) -> float:
    value = arguments.get("threshold", DEFAULT_THRESHOLD_S)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return duration_seconds(str(value))


def overdue(job: JobInfo, now: float, threshold: float) -> bool:
    """Unschedulable for room for `threshold` or longer, and the gang still short."""
    since = job.unschedulable_since()
    return (
        since is not None
        and since[1] in WAITING_FOR_ROOM
        and now - since[0] >= threshold
        and job.ready_task_num() < job.min_available
    )


class StarvationPlugin(Plugin):
    name = "starvation"
    arguments_spec: ClassVar[Mapping[str, type]] = {"threshold": str}

    @classmethod
    def argument_problems(cls, arguments: Mapping[str, Any]) -> list[str]:
        try:
            seconds = threshold_seconds(arguments)
        except ValueError as exc:
            return [f"threshold: {exc}"]
        if seconds < 0:
            return [f"threshold: expected 0 (off) or more, got {arguments['threshold']!r}"]
        return []

    def on_session_open(self, ssn: Session) -> None:
        self.threshold = threshold_seconds(self.arguments)
        self._held: HeldRoom | None = None
        self._planned = self.threshold <= 0  # off: nothing to plan
        self._planning = False

    def job_passes_load(self, ssn: Session, job: JobInfo) -> bool:
        if self.threshold <= 0:
            return False
        if overdue(job, ssn.now, self.threshold):
            return True
        held = self._current(ssn)
        return held is not None and held.outlasts(ssn, job)

    def predicate(self, ssn: Session, task: TaskInfo) -> Sequence[NodeFailure]:
        held = self._current(ssn)
        if held is None or task.job == held.job:
            return ()
        blocked = held.blocks(ssn, task)
        return () if blocked is None else (NodeFailure(held.reason, blocked, kind=HELD),)

    def on_allocate(self, ssn: Session, event: Event) -> None:
        held = self._current(ssn)
        if held is not None:
            held.charge(ssn, event.task, 1)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        held = self._current(ssn)
        if held is not None:
            held.charge(ssn, event.task, -1)

    @property
    def held(self) -> HeldRoom | None:
        """The room the session holds, once planned (tests and reports)."""
        return self._held

    def _current(self, ssn: Session) -> HeldRoom | None:
        """Planned on first use, when every plugin's predicates are ready (not at session open, where a
        later tier's plugin has not opened yet)."""
        if not self._planned and not self._planning:
            self._planning = True  # the plan asks the predicates, this one's included: it answers nothing
            self._held = hold_for_overdue(ssn, self.threshold)
            self._planning = False
            self._planned = True
        return self._held


def hold_for_overdue(ssn: Session, threshold: float) -> HeldRoom | None:
    """The room held for the overdue job that has waited longest and can fit, if any."""
    candidates = [
        job for job in ssn.jobs.values() if not job.is_pending_phase() and overdue(job, ssn.now, threshold)
    ]
    if not candidates:
        return None
    candidates.sort(key=lambda job: (_waiting_since(job), job.creation_timestamp, job.uid))
    timeline = Timeline.of(ssn)
    for job in candidates:
        tasks = needed_tasks(ssn, job)
        queue = ssn.queues.get(job.queue)
        if not tasks or queue is None or not ssn.quota_fits(queue, _sum(tasks)):
            continue  # it waits for pods, or its queue could never hold it: room held for it would idle
        allowed = [_allowed_nodes(ssn, task) for task in tasks]
        held = hold_room(ssn, job.uid, tasks, allowed, timeline)
        if held is not None:
            count = len(held.rows)
            nodes = f"{count} node{'s' if count != 1 else ''}"
            job.hold_note = f"waited past the starvation threshold: room held on {nodes}"
            return held
    return None


def _waiting_since(job: JobInfo) -> float:
    since = job.unschedulable_since()
    return since[0] if since is not None else 0.0


def needed_tasks(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """The pending pods the gang still needs (minMember less its ready ones), in task order; [] when it
    has fewer than that (it waits for pods, not room). Another replica's job is modelled from its pods'
    facts here, only to plan its room."""
    pending = [t for t in job.tasks_by_status[TaskStatus.PENDING].values() if not t.best_effort]
    if not job.owned:
        pending = _foreign_pending(ssn, job)
    need = job.min_available - job.ready_task_num()
    if need <= 0 or len(pending) < need:
        return []
    ordered = PriorityQueue(ssn.task_order_fn, pending)
    return [ordered.pop() for _ in range(need)]


def _sum(tasks: list[TaskInfo]) -> Resources:
    total = EMPTY
    for task in tasks:
        total = total + task.resreq
    return total


def _foreign_pending(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    tasks = []
    for facts in ssn.snapshot.facts():
        if facts.group == job.uid and facts.waits and not facts.best_effort:
            vector = ssn.resources.vector(facts.requests)
            tasks.append(TaskInfo(facts, job.uid, job.priority, vector, np.flatnonzero(vector > 0)))
    return tasks


def _allowed_nodes(ssn: Session, task: TaskInfo) -> np.ndarray:
    """The nodes the task's placement constraints allow (failures about room, or that eviction could fix,
    do not count)."""
    allowed = np.ones(len(ssn.nodes), dtype=bool)
    for failure in ssn.predicate_failures(task):
        if failure.kind == CONSTRAINT and not failure.resolvable:
            allowed &= ~failure.nodes
    return allowed
