"""Plan messages from a session (pure): a replica's session decides only for the PodGroups it owns on the
ring (a session without an ownership predicate decides for all, and `build_plans` keeps the owned part);
a replica sends one message per committed Statement, plus one message for status changes of owned
PodGroups that no Statement touched. The message and its wire format are contracts/plans.py.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from contracts.objects import PodGroupCondition, PodGroupStatus
from contracts.plans import PlanMessage, PodGroupUpdate
from services.scheduler.core.framework.plan import Plan, SessionResult
from services.scheduler.core.snapshot import ClusterSnapshot
from shared.plan_ids import plan_id

# PodGroups per status-only plan: its events are committed as one atomic batch (at most 1,000 events)
STATUS_PLAN_GROUPS = 256


def plan_subject(plan: Plan) -> str:
    """The PodGroup a session's plan acted for, else (a plan read back from the wire does not carry it)
    the gang it places (its first bind's), else the one it reserves room for, else the first victim's
    PodGroup."""
    if plan.job:
        return plan.job
    if plan.binds:
        return plan.binds[0].job
    if plan.reservations:
        return plan.reservations[0].job
    return plan.evictions[0].job if plan.evictions else ""


def status_changed(current: PodGroupStatus, update: PodGroupUpdate) -> bool:
    """Phase or conditions differ; a condition's transition time and session id are not a change (every
    session stamps them anew)."""
    return current.phase != update.phase or _condition_facts(current.conditions) != _condition_facts(
        update.conditions
    )


def _condition_facts(conditions: tuple[PodGroupCondition, ...]) -> set[tuple[str, str, str, str]]:
    return {(c.type, c.status, c.reason, c.message) for c in conditions}


def build_plans(
    result: SessionResult,
    snapshot: ClusterSnapshot,
    replica: str,
    owned: Container[str],
    statuses: Mapping[str, PodGroupStatus] | None = None,
) -> list[PlanMessage]:
    """The plan messages of one session for the PodGroups in `owned`, at the snapshot's seq. Status
    updates ride with the plan of their PodGroup; the rest go in status-only messages at the end, of at
    most STATUS_PLAN_GROUPS PodGroups each (a session over a busy cluster may change thousands).
    `statuses`: the snapshot's status of (at least) every PodGroup the session decided for (the
    session's `owned_statuses()`); by default they are read from the snapshot, a walk over every
    PodGroup."""
    seq = snapshot.sequence
    if statuses is None:
        statuses = {pg.meta.key: pg.status for pg in snapshot.podgroups}
    changed = {
        key: update
        for key, update in sorted(result.podgroups.items())
        if key in owned and key in statuses and status_changed(statuses[key], update)
    }
    messages = []
    for index, plan in enumerate(result.plans):
        if plan_subject(plan) not in owned:
            continue
        groups = {b.job for b in plan.binds} | {e.job for e in plan.evictions} | {plan.job}
        groups |= {r.job for r in plan.reservations}
        attached = {key: changed.pop(key) for key in sorted(groups) if key in changed}
        content = _content(plan, attached)
        messages.append(_message(plan_id(replica, seq, index, content), replica, seq, plan, attached))
    rest = list(changed.items())
    for start in range(0, len(rest), STATUS_PLAN_GROUPS):
        chunk = dict(rest[start : start + STATUS_PLAN_GROUPS])
        content = _content(Plan(), chunk)
        pid = plan_id(replica, seq, len(result.plans) + start // STATUS_PLAN_GROUPS, content)
        messages.append(_message(pid, replica, seq, Plan(), chunk))
    return messages


def _message(
    pid: str, replica: str, seq: int, plan: Plan, podgroups: Mapping[str, PodGroupUpdate]
) -> PlanMessage:
    return PlanMessage(pid, replica, seq, plan.binds, plan.evictions, dict(podgroups), plan.reservations)


def _content(plan: Plan, podgroups: Mapping[str, PodGroupUpdate]) -> str:
    binds = ";".join(f"{b.task}@{b.node}" for b in plan.binds)
    evictions = ";".join(f"{e.task}@{e.node}" for e in plan.evictions)
    groups = ";".join(f"{k}={u.phase}{sorted(_condition_facts(u.conditions))}" for k, u in podgroups.items())
    content = f"{binds}|{evictions}|{groups}"
    if plan.reservations:  # (a plan without any keeps the id it had before reservations existed)
        content += "|" + ";".join(f"{r.task}@{r.node}" for r in plan.reservations)
    return content
