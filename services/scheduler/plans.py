"""Plan messages: what a scheduler replica sends the binder after a session (pure).

A replica's session decides only for the PodGroups it owns on the ring (a session without an ownership
predicate decides for all, and `build_plans` keeps the owned part); a replica sends one message per
committed Statement, plus one message for status changes of owned PodGroups that no Statement touched.
The wire format (MessagePack) is `{plan_id, replica, seq, binds: [{pod, job, node}],
evictions: [{pod, job, node, reason}], reservations: [{pod, job, node, reason}], podgroups: {key: {phase,
conditions, running, succeeded, failed, allocated_hypernode}}}`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from contracts.codec import DecodeError, decode, encode
from contracts.objects import PodGroupCondition, PodGroupStatus
from services.scheduler.core.framework.plan import (
    Bind,
    Eviction,
    Plan,
    PodGroupUpdate,
    Reservation,
    SessionResult,
)
from services.scheduler.core.snapshot import ClusterSnapshot
from shared.name_uuid import name_uuid

# PodGroups per status-only plan: its events are committed as one atomic batch (at most 1,000 events)
STATUS_PLAN_GROUPS = 256

# Fixed namespace for plan ids: the same replica, view seq, index and content always give the same id.
PLAN_ID_NAMESPACE = uuid.UUID("8b1d4c52-3e0f-4f4a-9a36-5d7c2e1b9f60")


class PlanError(ValueError):
    """A plan message that does not decode; the message lists every bad field."""


@dataclass(frozen=True, slots=True)
class PlanMessage:
    plan_id: str
    replica: str
    seq: int  # the view seq the session ran at
    binds: tuple[Bind, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    podgroups: Mapping[str, PodGroupUpdate] = field(default_factory=dict)
    reservations: tuple[Reservation, ...] = ()

    @property
    def subject(self) -> str:
        """The PodGroup the plan is about as its content says: its gang (first bind), else the one it
        reserves room for, else its first victim's, else its first status update's. The binder names a
        PlanRejected after it; the rejection reaches the replica that sent the plan by plan id, whatever
        the subject."""
        plan = Plan(self.binds, self.evictions, reservations=self.reservations)
        return plan_subject(plan) or min(self.podgroups, default="")

    def pod_keys(self) -> tuple[str, ...]:
        return (
            tuple(b.task for b in self.binds)
            + tuple(e.task for e in self.evictions)
            + tuple(r.task for r in self.reservations)
        )


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


def plan_id(replica: str, seq: int, index: int, content: str) -> str:
    """Deterministic: a retried publish of the same decision dedups. The content digest is part of the
    id because two sessions at the same view seq (a periodic tick with no new events) make different
    plans once the first one's placements are assumed, and the second must not be dropped as a duplicate."""
    digest = hashlib.blake2b(content.encode(), digest_size=8).hexdigest()
    return name_uuid(PLAN_ID_NAMESPACE, f"{replica}/{seq}/{index}/{digest}")


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


# --- wire format -------------------------------------------------------------------------------------


def plan_to_plain(plan: PlanMessage) -> dict[str, Any]:
    return {
        "plan_id": plan.plan_id,
        "replica": plan.replica,
        "seq": plan.seq,
        "binds": [{"pod": b.task, "job": b.job, "node": b.node} for b in plan.binds],
        "evictions": [
            {"pod": e.task, "job": e.job, "node": e.node, "reason": e.reason} for e in plan.evictions
        ],
        "podgroups": {key: update_to_plain(u) for key, u in plan.podgroups.items()},
        "reservations": [
            {"pod": r.task, "job": r.job, "node": r.node, "reason": r.reason} for r in plan.reservations
        ],
    }


def update_to_plain(update: PodGroupUpdate) -> dict[str, Any]:
    return {
        "phase": update.phase,
        "conditions": [encode(c) for c in update.conditions],
        "running": update.running,
        "succeeded": update.succeeded,
        "failed": update.failed,
        "allocated_hypernode": update.allocated_hypernode,
    }


def encode_plan(plan: PlanMessage) -> bytes:
    return msgpack.packb(plan_to_plain(plan), use_bin_type=True)


def decode_plan(data: bytes) -> PlanMessage:
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types for malformed input
        raise PlanError(f"plan: not a MessagePack document ({type(exc).__name__}: {exc})") from exc
    return plan_from_plain(raw)


def plan_from_plain(raw: Any) -> PlanMessage:
    """Validate and build; every problem is reported with its field path."""
    reader = _Reader()
    if not isinstance(raw, Mapping):
        raise PlanError(f"plan: expected a map, got {type(raw).__name__}")
    pid = reader.text(raw, "plan_id")
    replica = reader.text(raw, "replica")
    seq = reader.count(raw, "seq")
    binds = tuple(
        Bind(reader.text(item, "pod", at), reader.text(item, "job", at), reader.text(item, "node", at))
        for at, item in reader.items(raw, "binds")
    )
    evictions = tuple(
        Eviction(
            reader.text(item, "pod", at),
            reader.text(item, "job", at),
            reader.text(item, "node", at),
            reader.text(item, "reason", at),
        )
        for at, item in reader.items(raw, "evictions")
    )
    reservations = tuple(
        Reservation(
            reader.text(item, "pod", at),
            reader.text(item, "job", at),
            reader.text(item, "node", at),
            reader.text(item, "reason", at, default=""),
        )
        for at, item in reader.items(raw, "reservations")
    )
    podgroups = reader.podgroups(raw.get("podgroups", {}))
    if not (binds or evictions or reservations or podgroups or reader.errors):
        reader.errors.append("plan: no binds, evictions, reservations or podgroups")
    if reader.errors:
        raise PlanError("invalid plan: " + "; ".join(reader.errors))
    return PlanMessage(pid, replica, seq, binds, evictions, podgroups, reservations)


class _Reader:
    """Collects every field error instead of stopping at the first; `at` is the path of the container."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def text(self, raw: Mapping[str, Any], key: str, at: str = "", *, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str) or (not value and default is None):
            self.errors.append(f"{_path(at, key)}: expected a non-empty string, got {value!r}")
            return ""
        return value

    def count(self, raw: Mapping[str, Any], key: str, at: str = "", *, default: int | None = None) -> int:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.errors.append(f"{_path(at, key)}: expected a non-negative integer, got {value!r}")
            return 0
        return value

    def items(self, raw: Mapping[str, Any], key: str) -> list[tuple[str, Mapping[str, Any]]]:
        value = raw.get(key, [])
        if not isinstance(value, list):
            self.errors.append(f"{key}: expected a list, got {type(value).__name__}")
            return []
        out = []
        for i, item in enumerate(value):
            if isinstance(item, Mapping):
                out.append((f"{key}[{i}]", item))
            else:
                self.errors.append(f"{key}[{i}]: expected a map, got {type(item).__name__}")
        return out

    def podgroups(self, value: Any) -> dict[str, PodGroupUpdate]:
        if not isinstance(value, Mapping):
            self.errors.append(f"podgroups: expected a map, got {type(value).__name__}")
            return {}
        out = {}
        for key, raw in value.items():
            at = f"podgroups[{key!r}]"
            if not isinstance(key, str) or not key:
                self.errors.append(f"podgroups: expected non-empty string keys, got {key!r}")
                continue
            if not isinstance(raw, Mapping):
                self.errors.append(f"{at}: expected a map, got {type(raw).__name__}")
                continue
            out[key] = PodGroupUpdate(
                phase=self.text(raw, "phase", at),
                conditions=self.conditions(raw.get("conditions", []), f"{at}.conditions"),
                running=self.count(raw, "running", at, default=0),
                succeeded=self.count(raw, "succeeded", at, default=0),
                failed=self.count(raw, "failed", at, default=0),
                allocated_hypernode=self.text(raw, "allocated_hypernode", at, default=""),
            )
        return out

    def conditions(self, value: Any, at: str) -> tuple[PodGroupCondition, ...]:
        if not isinstance(value, list):
            self.errors.append(f"{at}: expected a list, got {type(value).__name__}")
            return ()
        out = []
        for i, item in enumerate(value):
            try:
                out.append(decode(PodGroupCondition, item))
            except (DecodeError, TypeError) as exc:
                self.errors.append(f"{at}[{i}]: {exc}")
        return tuple(out)


def _path(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key
