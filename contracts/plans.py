"""Plan messages: what a scheduler replica (or the descheduler) sends the binder, one per committed
decision, on LAHAR_PLANS (`lahar.plan.<sender>`): the wire format its writers and its one reader share.

The body is MessagePack: `{plan_id, replica, seq, binds: [{pod, job, node}], evictions: [{pod, job, node,
reason}], reservations: [{pod, job, node, reason}], podgroups: {key: {phase, conditions, running,
succeeded, failed, allocated_hypernode}}}`; `seq` is the view sequence the decision was made at. Headers:
`Nats-Msg-Id` (the plan id: a retried send of the same decision is stored once), `traceparent` /
`tracestate` (the plan's span), and PUBLISHED_AT_HEADER (epoch seconds when it was sent: the binder's bind
latency). How a scheduler builds its plans from a session is services/scheduler/plans.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack
import msgspec

from contracts.codec import DecodeError, decode, encode
from contracts.objects import PodGroupCondition

PUBLISHED_AT_HEADER = "Lahar-Plan-Published-At"
_pack = msgspec.msgpack.Encoder().encode


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
class PodGroupUpdate:
    phase: str
    conditions: tuple[PodGroupCondition, ...]
    running: int
    succeeded: int
    failed: int
    allocated_hypernode: str = ""


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
        if self.binds:
            return self.binds[0].job
        if self.reservations:
            return self.reservations[0].job
        if self.evictions:
            return self.evictions[0].job
        return min(self.podgroups, default="")

    def pod_keys(self) -> tuple[str, ...]:
        return (
            tuple(b.task for b in self.binds)
            + tuple(e.task for e in self.evictions)
            + tuple(r.task for r in self.reservations)
        )


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
    return _pack(plan_to_plain(plan))


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
    evictions = tuple(Eviction(*fields) for fields in reader.pod_moves(raw, "evictions", reason_default=None))
    reservations = tuple(
        Reservation(*fields) for fields in reader.pod_moves(raw, "reservations", reason_default="")
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

    def pod_moves(
        self, raw: Mapping[str, Any], key: str, *, reason_default: str | None
    ) -> list[tuple[str, str, str, str]]:
        """The (pod, job, node, reason) of each item under key: evictions need a reason, reservations
        may leave it out (reason_default "")."""
        return [
            (
                self.text(item, "pod", at),
                self.text(item, "job", at),
                self.text(item, "node", at),
                self.text(item, "reason", at, default=reason_default),
            )
            for at, item in self.items(raw, key)
        ]

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
