"""Room held for a job that has waited too long, as Slurm's reservation for the top job of EASY backfill
(not the room a preemption reserves for its preemptor: actions/reservations.py). Pure.

The job's start is the earliest moment its pods fit the nodes if nothing new were placed: each pod on a
node frees its room at its expected end (start time + its PodGroup's running estimate or its simulated
duration, `contracts/pending.py`; a pod of unknown length frees it only "eventually"). At that moment the
job's pods are packed first-fit on the nodes their placement constraints allow; the room they take there is
held. Another pod may then go to a node with held room only where it does not delay the job:
- it ends before the job's start (both known), or
- it fits in what the node has left at the job's start next to the held room (`spare`), which every pod
  placed there for longer then uses up.
Nodes without held room are not restricted: what a pod takes there now is room the job does not need.

The room is held afresh each session from the snapshot (no state carries over): pods that end early move
the start forward, pods that overrun their estimate push it back. Packing is greedy, so the start may come
later than the best packing's; feasibility is searched by bisection over the moments pods end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from contracts.pending import expected_run_seconds
from contracts.resources import Resources
from services.scheduler.core.framework.placement import fits_rows
from services.scheduler.core.model.task import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo

HOLDING = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})  # pods whose room comes free when they end


def expected_end(
    annotations: Mapping[str, str], group_annotations: Mapping[str, str], started: float | None, now: float
) -> float:
    """When a pod started at `started` (None: not yet, so now) will end: never before now (one past its
    estimate ends any moment); math.inf when its length is unknown."""
    seconds = expected_run_seconds(annotations, group_annotations)
    if seconds is None:
        return math.inf
    return max((now if started is None else started) + seconds, now)


@dataclass(slots=True)
class Timeline:
    """The pods holding room on nodes, sorted by expected end: node rows, ends, request vectors."""

    rows: np.ndarray
    ends: np.ndarray
    vectors: np.ndarray

    @classmethod
    def of(cls, ssn: Session) -> Timeline:
        rows: list[int] = []
        ends: list[float] = []
        vectors: list[np.ndarray] = []
        shared: dict[Resources, np.ndarray] = {}
        index = ssn.nodes.index
        for facts in ssn.snapshot.facts():
            if facts.status not in HOLDING or not facts.node:
                continue
            row = index.get(facts.node)
            if row is None:
                continue
            job = ssn.jobs.get(facts.group)
            group = job.podgroup.meta.annotations if job is not None else {}
            pod = facts.pod
            started = pod.status.start_time if facts.status is TaskStatus.RUNNING else None
            vector = shared.get(facts.requests)
            if vector is None:
                vector = shared[facts.requests] = ssn.resources.vector(facts.requests)
            rows.append(row)
            ends.append(expected_end(pod.meta.annotations, group, started, ssn.now))
            vectors.append(vector)
        order = np.argsort(np.asarray(ends, dtype=np.float64), kind="stable")
        width = ssn.resources.width
        stacked = np.stack(vectors) if vectors else np.zeros((0, width), dtype=np.int64)
        return cls(
            np.asarray(rows, dtype=np.intp)[order], np.asarray(ends, dtype=np.float64)[order], stacked[order]
        )

    def moments(self, now: float) -> list[float]:
        """When room may come free: now, each later expected end, and math.inf if some end is unknown."""
        later = np.unique(self.ends[self.ends > now])
        return [now, *(float(t) for t in later)]

    def available(self, base: np.ndarray, moment: float) -> np.ndarray:
        """`base` (the nodes' room now) plus the room of every pod ending by `moment`."""
        out = base.copy()
        count = int(np.searchsorted(self.ends, moment, side="right"))
        if count:
            np.add.at(out, self.rows[:count], self.vectors[:count])
        return out


@dataclass(slots=True)
class HeldRoom:
    """Room held on `rows` for `job`'s pods from `start` (math.inf: once pods of unknown length end)."""

    job: str
    start: float
    rows: np.ndarray  # the node rows with held room
    spare: np.ndarray  # per such row, what is left at `start` beside the job's pods (rows x dims)
    reason: str
    _position: dict[int, int] = field(default_factory=dict)
    _charged: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)
    _ends: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._position = {int(row): i for i, row in enumerate(self.rows)}

    def blocks(self, ssn: Session, task: TaskInfo) -> np.ndarray | None:
        """The nodes where `task` fits now but would delay the job; None if there are none."""
        if self._ends_in_time(ssn, task):
            return None
        cols, need = task.requested_columns, task.init_vector
        if not len(cols):
            return None
        now_fits = fits_rows(ssn.nodes.future[self.rows], cols, need)
        late = now_fits & ~fits_rows(self.spare, cols, need)
        if not late.any():
            return None
        mask = np.zeros(len(ssn.nodes), dtype=bool)
        mask[self.rows[late]] = True
        return mask

    def charge(self, ssn: Session, task: TaskInfo, sign: int) -> None:
        """A task placed (sign 1) on a node with held room for longer than the wait uses up its spare room;
        undone (sign -1), it gives it back."""
        if sign < 0:
            charged = self._charged.pop(task.uid, None)
            if charged is not None:
                self.spare[charged[0]] += charged[1]
            return
        position = self._position.get(task.node_index)
        if position is None or task.job == self.job or self._ends_in_time(ssn, task):
            return
        self.spare[position] -= task.init_vector
        self._charged[task.uid] = (position, task.init_vector)

    def outlasts(self, ssn: Session, job: JobInfo) -> bool:
        """Would a job whose pods do not exist yet end before the held room is needed (its PodGroup says how
        long they run)?"""
        annotations = job.podgroup.meta.annotations
        end = expected_end(annotations, annotations, None, ssn.now)
        return job.uid != self.job and math.isfinite(self.start) and end <= self.start

    def _ends_in_time(self, ssn: Session, task: TaskInfo) -> bool:
        end = self._ends.get(task.uid)
        if end is None:
            job = ssn.jobs.get(task.job)
            group = job.podgroup.meta.annotations if job is not None else {}
            end = self._ends[task.uid] = expected_end(task.pod.meta.annotations, group, None, ssn.now)
        return math.isfinite(self.start) and end <= self.start


def hold_room(
    ssn: Session, job: str, tasks: Sequence[TaskInfo], allowed: Sequence[np.ndarray], timeline: Timeline
) -> HeldRoom | None:
    """The room to hold for `tasks` (the pods `job` still needs, each with the nodes its constraints
    allow), or None when they would not fit even once every pod on the nodes has ended."""
    base = ssn.nodes.future_idle()
    moments = timeline.moments(ssn.now)
    if not len(timeline.ends) or math.isfinite(timeline.ends[-1]):
        last = moments[-1]
    else:
        moments.append(math.inf)
        last = math.inf
    packed = _pack(timeline.available(base, last), tasks, allowed)
    if packed is None:
        return None
    low, high = 0, len(moments) - 1  # moments[high] fits; find the first that does
    while low < high:
        middle = (low + high) // 2
        attempt = _pack(timeline.available(base, moments[middle]), tasks, allowed)
        if attempt is not None:
            high, packed = middle, attempt
        else:
            low = middle + 1
    left, taken = packed
    rows = np.flatnonzero(taken.any(axis=1))
    reason = f"room held for starving job {job}"
    return HeldRoom(job=job, start=moments[high], rows=rows, spare=left[rows], reason=reason)


def _pack(
    available: np.ndarray, tasks: Sequence[TaskInfo], allowed: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray] | None:
    """First-fit of `tasks` on `available`: (what is left, what they take) per node, or None."""
    left = available.copy()
    taken = np.zeros_like(available)
    for task, nodes in zip(tasks, allowed, strict=True):
        cols, need = task.requested_columns, task.init_vector
        fits = nodes & fits_rows(left, cols, need) if len(cols) else nodes.copy()
        if not fits.any():
            return None
        row = int(np.argmax(fits))
        left[row] -= need
        taken[row] += need
    return left, taken
