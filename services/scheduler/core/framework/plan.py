"""What a session decides, as values: the only output of the scheduling core."""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.objects import PodGroupCondition


@dataclass(frozen=True, slots=True)
class Bind:
    task: str  # pod key ns/name
    job: str  # podgroup key ns/name
    node: str


@dataclass(frozen=True, slots=True)
class Eviction:
    task: str
    job: str
    node: str
    reason: str  # the action that decided it: preempt, reclaim, ...


@dataclass(frozen=True, slots=True)
class Reservation:
    """Room on `node` held for the pending `task` until it can be bound there: a preemptor's or
    reclaimer's pipelined task, committed with the evictions that free the room."""

    task: str
    job: str
    node: str
    reason: str = ""  # the decision and its victims, for the log


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
class PodGroupUpdate:
    phase: str
    conditions: tuple[PodGroupCondition, ...]
    running: int
    succeeded: int
    failed: int
    allocated_hypernode: str = ""


@dataclass(frozen=True, slots=True)
class QueueUpdate:
    allocated: dict[str, int]
    deserved: dict[str, int]
    share: float


@dataclass(frozen=True, slots=True)
class SessionResult:
    """Everything a session decided: committed plans in order, reservations that were never committed
    (pipelined tasks), and the status projections written at session close."""

    session_id: str
    plans: tuple[Plan, ...] = ()
    pipelined: dict[str, str] = field(default_factory=dict)  # pod key -> node
    podgroups: dict[str, PodGroupUpdate] = field(default_factory=dict)
    queues: dict[str, QueueUpdate] = field(default_factory=dict)

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
