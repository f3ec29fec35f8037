"""Plan messages read on the binder's hot path (pure): the wire format of contracts/plans.py,
decoded by msgspec into the Structs below in one pass in C.

`decode_plan` (contracts/plans.py) reads a plan field by field in Python, collecting every problem, and
cost the binder about as much per plan as checking it. A plan as a replica writes it fits these Structs, which
say what that reader accepts (non-empty names, non-negative counts); anything they do not take, a bad
plan or an odd but acceptable one, is handed to `decode_plan`, so a plan decodes to the same
PlanMessage, or fails with the same PlanError listing every bad field, either way.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.objects import PodGroupCondition
from contracts.plans import Bind, Eviction, PlanMessage, PodGroupUpdate, Reservation, decode_plan

Name = Annotated[str, msgspec.Meta(min_length=1)]
Count = Annotated[int, msgspec.Meta(ge=0)]


class _Bind(msgspec.Struct, frozen=True):
    pod: Name
    job: Name
    node: Name


class _Eviction(msgspec.Struct, frozen=True):
    pod: Name
    job: Name
    node: Name
    reason: Name


class _Reservation(msgspec.Struct, frozen=True):
    pod: Name
    job: Name
    node: Name
    reason: str = ""


class _Update(msgspec.Struct, frozen=True):
    phase: Name
    conditions: tuple[PodGroupCondition, ...] = ()
    running: Count = 0
    succeeded: Count = 0
    failed: Count = 0
    allocated_hypernode: str = ""


class _Plan(msgspec.Struct, frozen=True):
    plan_id: Name
    replica: Name
    seq: Count
    binds: tuple[_Bind, ...] = ()
    evictions: tuple[_Eviction, ...] = ()
    podgroups: dict[Name, _Update] = {}
    reservations: tuple[_Reservation, ...] = ()


_DECODER = msgspec.msgpack.Decoder(_Plan)


def read_plan(data: bytes) -> PlanMessage:
    """The plan a message holds; raises PlanError (from `decode_plan`) naming every bad field."""
    try:
        wire = _DECODER.decode(data)
    except msgspec.DecodeError:  # (a ValidationError is one) judged again, field by field
        return decode_plan(data)
    if not (wire.binds or wire.evictions or wire.reservations or wire.podgroups):
        return decode_plan(data)  # an empty plan is refused there, with its reason
    return PlanMessage(
        wire.plan_id,
        wire.replica,
        wire.seq,
        tuple(Bind(b.pod, b.job, b.node) for b in wire.binds),
        tuple(Eviction(e.pod, e.job, e.node, e.reason) for e in wire.evictions),
        {
            key: PodGroupUpdate(
                u.phase, u.conditions, u.running, u.succeeded, u.failed, u.allocated_hypernode
            )
            for key, u in wire.podgroups.items()
        },
        tuple(Reservation(r.pod, r.job, r.node, r.reason) for r in wire.reservations),
    )
