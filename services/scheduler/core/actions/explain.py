"""What preempt and reclaim tell a PodGroup about their decisions (pure): a condition of its own type per
action, beside the gang plugin's Unschedulable / Scheduled, so a user reads why pods were evicted for
the job, or why none were.

- `Preempting` / `Reclaiming`, status True, reason RoomReserved: the victims evicted and the room reserved
  for each pod, committed in one plan;
- status False, reason WouldNotMakeRoom: nothing was evicted, and why each pod that tried found no room
  (by node count: "3 nodes: only pods of equal or higher priority");
- status False, reason ReservationBound: the reserved pods were bound where their room was made;
- status False, reason ReservationReleased: a reservation was given up (its node can no longer hold it).

The evictions themselves say whom they are for (PodEvicting's reason), the reservations which victims free
them (PodNominated's reason): `lahar events` shows both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contracts.objects import PodGroupCondition
from services.scheduler.core.framework.placement import format_reasons
from services.scheduler.core.model.topology import CLUSTER_TOP

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.task import TaskInfo

PREEMPTING = "Preempting"
RECLAIMING = "Reclaiming"
CONDITION_OF = {"preempt": PREEMPTING, "reclaim": RECLAIMING}
ROOM_RESERVED = "RoomReserved"
WOULD_NOT_MAKE_ROOM = "WouldNotMakeRoom"
RESERVATION_BOUND = "ReservationBound"
RESERVATION_RELEASED = "ReservationReleased"
LISTED = 4  # pods named in a message before "and N more"


def listing(items: list[str]) -> str:
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return ", ".join(items[:LISTED]) + more


@dataclass(slots=True)
class Attempts:
    """One job's turn in preempt or reclaim: what each of its pods found."""

    action: str  # preempt | reclaim
    placed: list[tuple[TaskInfo, str, tuple[TaskInfo, ...]]] = field(default_factory=list)
    failed: list[tuple[TaskInfo, str]] = field(default_factory=list)  # the pod and why

    def room(self, task: TaskInfo, node: str, victims: tuple[TaskInfo, ...]) -> None:
        self.placed.append((task, node, victims))

    def no_room(self, task: TaskInfo, why: str | dict[str, int]) -> None:
        self.failed.append((task, why if isinstance(why, str) else format_reasons(why) or "no node to try"))

    def __bool__(self) -> bool:
        return bool(self.placed or self.failed)


def record(ssn: Session, job: JobInfo, attempts: Attempts, *, committed: bool, where: str = "") -> None:
    """The job's condition for this turn; a turn that tried no pod changes nothing. `where` names the
    HyperNode a hard-topology job's victims were chosen in (" inside HyperNode s0-s1")."""
    if not attempts:
        return
    action = attempts.action
    if committed and any(victims for _, _, victims in attempts.placed):
        victims = [v.key for _, _, found in attempts.placed for v in found]
        rooms = [f"{t.key} on {node}" for t, node, _ in attempts.placed]
        message = (
            f"{action}: evicting {len(victims)} pod(s) ({listing(victims)}){where} to reserve room for"
            f" {listing(rooms)}"
        )
        _set(ssn, job, action, "True", ROOM_RESERVED, message)
        return
    if committed:
        return  # placed without evicting anything: nothing to explain
    _set(
        ssn,
        job,
        action,
        "False",
        WOULD_NOT_MAKE_ROOM,
        f"{action} would not make room, nothing evicted: " + why_not(attempts),
    )


def why_not(attempts: Attempts) -> str:
    """Why a turn found no room for the whole gang, pod by pod (the first few)."""
    parts = [f"{t.key}: {why}" for t, why in attempts.failed[:LISTED]]
    if attempts.placed:
        parts.insert(0, f"{len(attempts.placed)} pod(s) would have found room but not the whole gang")
    return "; ".join(parts)


def record_domain(
    ssn: Session,
    job: JobInfo,
    action: str,
    chosen: str,
    tried: list[tuple[str, Attempts]],
    tier: int | None,
) -> None:
    """A hard-topology job's turn (domain_eviction.py): the HyperNode its victims were chosen in, or
    why no HyperNode of its allowed tier could hold the whole gang after evictions."""
    if chosen:
        where = (
            "" if chosen == CLUSTER_TOP else f" inside HyperNode {chosen} (tier {ssn.topology.tier[chosen]})"
        )
        record(ssn, job, tried[0][1], committed=True, where=where)
        return
    if not tried:
        why = f"no HyperNode of tier <= {tier} holds the nodes the job runs on and its minResources"
    else:
        first, attempts = tried[0]
        detail = why_not(attempts) or "no pod tried"
        if first == CLUSTER_TOP:
            why = detail
        else:
            names = listing([name for name, _ in tried])
            why = f"no HyperNode of tier <= {tier} would hold the whole gang after evictions (tried {names});"
            why += f" in {first}: {detail}"
    _set(
        ssn,
        job,
        action,
        "False",
        WOULD_NOT_MAKE_ROOM,
        f"{action} would not make room, nothing evicted: {why}",
    )


def set_condition(ssn: Session, job: JobInfo, kind: str, status: str, reason: str, message: str) -> None:
    job.new_conditions[kind] = PodGroupCondition(
        type=kind,
        status=status,
        transition_id=ssn.uid,
        last_transition_time=ssn.now,
        reason=reason,
        message=message,
    )


def _set(ssn: Session, job: JobInfo, action: str, status: str, reason: str, message: str) -> None:
    set_condition(ssn, job, CONDITION_OF[action], status, reason, message)


def reserving_condition(job: JobInfo) -> str:
    """The condition that told of the job's reservation (one True, this session's first), Preempting by
    default."""
    for condition in (*job.new_conditions.values(), *job.podgroup.status.conditions):
        if condition.type in (PREEMPTING, RECLAIMING) and condition.status == "True":
            return condition.type
    return PREEMPTING
