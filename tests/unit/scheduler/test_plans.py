"""Plan messages from a real session: kept by ownership, statuses only when they changed, deterministic
ids, and a wire format whose errors name the field."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import msgpack
import pytest
from support.builders import gang, node

from contracts.objects import PodGroup
from contracts.plans import PlanError, PlanMessage, decode_plan, encode_plan
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.snapshot import ClusterSnapshot
from services.scheduler.plans import build_plans
from shared.ring import Ring

G1, G2, G3 = "default/g1", "default/g2", "default/g3"


def cluster(*, g3_status_from: SessionResult | None = None) -> ClusterSnapshot:
    """n1 fits g1 and g2 (two 1-cpu pods each); g3 (six pods) never fits."""
    objects: list[Any] = [node("n1", cpu=4), *gang("g1", 2), *gang("g2", 2), *gang("g3", 6)]
    if g3_status_from is not None:
        update = g3_status_from.podgroups[G3]
        objects = [
            replace(o, status=replace(o.status, phase=update.phase, conditions=update.conditions))
            if isinstance(o, PodGroup) and o.meta.key == G3
            else o
            for o in objects
        ]
    return ClusterSnapshot.from_objects(objects, sequence=42)


@pytest.fixture(scope="module")
def session() -> tuple[ClusterSnapshot, SessionResult]:
    snapshot = cluster()
    return snapshot, run_session(snapshot)


def summary(messages: list[PlanMessage]) -> list[tuple[list[str], list[str]]]:
    return [(sorted({b.job for b in m.binds}), sorted(m.podgroups)) for m in messages]


@pytest.mark.parametrize(
    ("owned", "expected"),
    [
        (set(), []),
        ({G1}, [([G1], [G1])]),
        ({G2, G3}, [([G2], [G2]), ([], [G3])]),
        ({G1, G2, G3}, [([G1], [G1]), ([G2], [G2]), ([], [G3])]),
    ],
    ids=["none", "g1", "g2-g3", "all"],
)
def test_messages_keep_what_the_replica_owns(
    session: tuple[ClusterSnapshot, SessionResult], owned: set[str], expected: list[Any]
) -> None:
    snapshot, result = session
    assert len(result.plans) == 2  # g1 and g2 placed, g3 unschedulable
    messages = build_plans(result, snapshot, "r1", owned)
    assert summary(messages) == expected
    for message in messages:
        assert (message.replica, message.seq) == ("r1", 42)
    if G3 in owned:
        status = messages[-1].podgroups[G3]
        assert [c.type for c in status.conditions] == ["Unschedulable"]


def test_replicas_of_a_ring_together_send_every_plan_exactly_once(
    session: tuple[ClusterSnapshot, SessionResult],
) -> None:
    snapshot, result = session
    ring = Ring(["r1", "r2", "r3"])
    keys = [pg.meta.key for pg in snapshot.podgroups]
    binds = []
    for replica, owned in ring.assign(keys).items():
        binds += [b for m in build_plans(result, snapshot, replica, set(owned)) for b in m.binds]
    assert sorted(binds, key=str) == sorted((b for p in result.plans for b in p.binds), key=str)


def test_unchanged_statuses_are_not_sent(session: tuple[ClusterSnapshot, SessionResult]) -> None:
    _, first = session
    # the view already has g3's Unschedulable condition; the new session's stays True, so it keeps the
    # time it turned True (Kubernetes' lastTransitionTime)
    snapshot = cluster(g3_status_from=first)
    result = run_session(snapshot, now=99.0)
    assert result.podgroups[G3].conditions[0].last_transition_time == 0.0
    assert summary(build_plans(result, snapshot, "r1", {G3})) == []


def test_plan_ids_are_deterministic_and_distinct(session: tuple[ClusterSnapshot, SessionResult]) -> None:
    snapshot, result = session
    owned = {G1, G2, G3}
    ids = [m.plan_id for m in build_plans(result, snapshot, "r1", owned)]
    assert ids == [m.plan_id for m in build_plans(result, snapshot, "r1", owned)]
    assert len(set(ids)) == 3
    assert set(ids).isdisjoint(m.plan_id for m in build_plans(result, snapshot, "r2", owned))
    later = replace(snapshot, sequence=43)
    assert set(ids).isdisjoint(m.plan_id for m in build_plans(result, later, "r1", owned))
    # same replica, same seq, another decision (the first one's pods were assumed meanwhile)
    other = replace(result, plans=result.plans[1:])
    assert build_plans(other, snapshot, "r1", {G2})[0].plan_id not in ids


def test_encode_decode_round_trip(session: tuple[ClusterSnapshot, SessionResult]) -> None:
    snapshot, result = session
    for message in build_plans(result, snapshot, "r1", {G1, G2, G3}):
        assert decode_plan(encode_plan(message)) == message


def _valid() -> dict[str, Any]:
    return {
        "plan_id": "p1",
        "replica": "r1",
        "seq": 3,
        "binds": [{"pod": "default/a", "job": "default/g", "node": "n1"}],
        "evictions": [{"pod": "default/b", "job": "default/h", "node": "n2", "reason": "preempt"}],
        "podgroups": {"default/g": {"phase": "Inqueue", "conditions": [{"type": "Scheduled"}]}},
    }


def _with(**changes: Any) -> dict[str, Any]:
    return {**_valid(), **changes}


@pytest.mark.parametrize(
    ("doc", "fields"),
    [
        ({k: v for k, v in _valid().items() if k != "plan_id"}, ["plan_id"]),
        (_with(replica=""), ["replica"]),
        (_with(seq=-1), ["seq"]),
        (_with(seq=True), ["seq"]),
        (_with(binds=[{"pod": "default/a", "job": "default/g", "node": 3}]), ["binds[0].node"]),
        (_with(binds=[{"pod": "default/a"}, "x"]), ["binds[0].job", "binds[0].node", "binds[1]"]),
        (_with(binds={"pod": "a"}), ["binds"]),
        (_with(evictions=[{"pod": "default/b", "job": "default/h", "node": "n2"}]), ["evictions[0].reason"]),
        (_with(podgroups={"default/g": {"conditions": []}}), ["podgroups['default/g'].phase"]),
        (
            _with(podgroups={"default/g": {"phase": "Inqueue", "running": -1}}),
            ["podgroups['default/g'].running"],
        ),
        (_with(podgroups={"default/g": {"phase": "Inqueue", "conditions": [{}]}}), ["conditions[0]"]),
        (_with(podgroups={"": {"phase": "Inqueue"}}), ["podgroups"]),
        (_with(binds=[], evictions=[], podgroups={}), ["no binds, evictions, reservations or podgroups"]),
        (["not", "a", "map"], ["plan: expected a map"]),
    ],
)
def test_decode_errors_name_every_bad_field(doc: Any, fields: list[str]) -> None:
    with pytest.raises(PlanError) as error:
        decode_plan(msgpack.packb(doc))
    for field in fields:
        assert field in str(error.value)


def test_decode_rejects_bytes_that_are_not_msgpack() -> None:
    with pytest.raises(PlanError, match="not a MessagePack document"):
        decode_plan(b"\xc1")


def test_decode_accepts_the_documented_format() -> None:
    plan = decode_plan(msgpack.packb(_valid()))
    assert (plan.plan_id, plan.subject, plan.pod_keys()) == ("p1", "default/g", ("default/a", "default/b"))
    assert plan.podgroups["default/g"].conditions[0].type == "Scheduled"
