"""What a session decides, as values: the only output of the scheduling core."""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.plans import Bind, Eviction, PodGroupUpdate, Reservation
from contracts.resources import EMPTY, Resources
from services.scheduler.core.framework.stats import SessionStats


@dataclass(frozen=True, slots=True)
class Plan:
    """One committed Statement: a gang's binds land together or not at all, and so do a preemption's
    evictions and the reservations they make room for."""

    binds: tuple[Bind, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    # the PodGroup the statement acted for: the gang it placed, the preemptor's or reclaimer's (whose
    # task is only pipelined, so no bind names it); "" when unknown
    job: str = ""
    reservations: tuple[Reservation, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.binds or self.evictions or self.reservations)


@dataclass(frozen=True, slots=True)
class QueueUpdate:
    """A queue's figures at session close (Volcano's queueAttr), pods left out. Only a fairness plugin
    (proportion, capacity) knows deserved, request, inqueue and real capability; without one they are
    empty (real_capability None: unknown) and overused is None."""

    allocated: dict[str, int]
    deserved: dict[str, int]
    share: float
    request: dict[str, int] = field(default_factory=dict)  # allocated and pending tasks' requests
    inqueue: dict[str, int] = field(default_factory=dict)  # minResources admitted, not yet allocated
    real_capability: dict[str, int] | None = None  # what the queue may hold at most
    overused: bool | None = None


@dataclass(frozen=True, slots=True)
class JobFigures:
    """What the session found about one job it owns, for Volcano's per-job series."""

    unready_tasks: int  # minAvailable minus its schedulable tasks while the gang is unschedulable; else 0
    unschedulable: bool  # the gang was left unschedulable this session (a scheduling retry, for Volcano)
    newly_scheduled: bool  # this session made the gang Scheduled (it was not before)
    share: float | None = None  # its DRF dominant share (with the drf plugin)


@dataclass(frozen=True, slots=True)
class PendingSummary:
    """Why an owned PodGroup waits, as its Unschedulable condition's reason says, with its queue and, when
    the cluster lacks room, how much (milli-units per dimension): what the replica exports as metrics."""

    queue: str
    reason: str
    missing: Resources = EMPTY


@dataclass(frozen=True, slots=True)
class SessionResult:
    """Everything a session decided: committed plans in order, reservations that were never committed
    (pipelined tasks), and the status projections written at session close."""

    session_id: str
    plans: tuple[Plan, ...] = ()
    pipelined: dict[str, str] = field(default_factory=dict)  # pod key -> node
    podgroups: dict[str, PodGroupUpdate] = field(default_factory=dict)
    queues: dict[str, QueueUpdate] = field(default_factory=dict)
    jobs: dict[str, JobFigures] = field(default_factory=dict)  # per owned job
    stats: SessionStats = field(default_factory=SessionStats)
    # the owned PodGroups this session left Unschedulable (a key of `podgroups` missing here does not wait)
    pending: dict[str, PendingSummary] = field(default_factory=dict)

    @property
    def binds(self) -> dict[str, str]:
        return {b.task: b.node for plan in self.plans for b in plan.binds}

    @property
    def evictions(self) -> list[str]:
        return [e.task for plan in self.plans for e in plan.evictions]

    @property
    def reservations(self) -> dict[str, str]:
        """Committed reservations: pod key -> node."""
        return {r.task: r.node for plan in self.plans for r in plan.reservations}
