"""The binder shell's pure parts: its state beside the core's (node objects, answered plans) and its
checkpoint form, the node read model's writes, heartbeat decoding and rejection reasons as labels."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.builders import gang, node

from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from services.binder.core.core import BinderCore
from services.binder.metrics import rejection_reason
from services.binder.read_model import node_writes
from services.binder.state import BinderShellCore, BinderShellState
from shared.bus.heartbeats import (
    Heartbeat,
    HeartbeatError,
    decode_heartbeat,
    encode_heartbeat,
    heartbeats_for,
)
from shared.runner_types import Event

CORE = BinderShellCore(BinderCore())
CREATED = {"Node": "NodeRegistered", "Pod": "PodCreated", "PodGroup": "PodGroupCreated"}


def event(seq: int, type: str, key: str, payload: dict[str, Any]) -> Event:
    namespace, _, name = key.rpartition("/")
    kind = EVENT_TYPES[type].subject_kind
    return Event(seq, type, kind, namespace or None, name, payload, f"e{seq}", 100.0 + seq, key)


def folded(*changes: tuple[str, str, dict[str, Any]]) -> BinderShellState:
    objects = [node("n1"), node("n2"), *gang("g", 2)]
    steps = [(CREATED[o.kind], o.meta.key, {"object": encode_object(o)}) for o in objects] + list(changes)
    state = CORE.initial()
    for seq, (type, key, payload) in enumerate(steps, start=1):
        state = CORE.apply(state, event(seq, type, key, payload))
    return state


def test_node_objects_follow_registration_and_readiness() -> None:
    state = folded(
        ("NodeNotReady", "n2", {"last_heartbeat": 1.0}), ("NodeNotReady", "ghost", {"last_heartbeat": 1.0})
    )
    assert state.changed == {"n1", "n2"}
    assert (state.nodes["n1"].node.ready, state.nodes["n2"].node.ready) == (True, False)
    writes = node_writes(state.nodes, ["n2", "n1", "ghost"])
    assert [(w.kind, w.namespace, w.name, w.seq) for w in writes] == [
        ("node", None, "n1", 1),
        ("node", None, "n2", 6),
    ]
    assert writes[1].object is not None and writes[1].object["object"]["ready"] is False


def test_plans_answered_in_the_log_are_remembered_and_checkpointed() -> None:
    state = folded(
        ("PodBound", "default/g-worker-0", {"node": "n1", "plan": "p1"}),
        ("PlanRejected", "default/g", {"reason": "x", "checked_seq": 5, "plan": "p2"}),
        ("PodRunning", "default/g-worker-0", {"node": "n1"}),
    )
    assert list(state.answered) == ["p1", "p2"]
    loaded = CORE.load(CORE.dump(state))
    assert CORE.dump(loaded) == CORE.dump(state)
    assert loaded.answered == state.answered and loaded.nodes == state.nodes
    assert loaded.changed == {"n1", "n2"}  # after a load every node is written again
    assert loaded.core.ledger.pods["default/g-worker-0"].node == "n1"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x81\xa4node", "not a JSON document"),
        (b"[1, 2]", "expected an object"),
        (json.dumps({"time": 1.0, "nodes": []}).encode(), "agent: expected a non-empty string"),
        (json.dumps({"agent": "a", "time": True, "nodes": []}).encode(), "time: expected epoch seconds"),
        (json.dumps({"agent": "a", "time": 1.0}).encode(), "nodes: expected a list"),
        (json.dumps({"agent": "a", "time": 1.0, "nodes": ["n1", 3]}).encode(), "nodes: expected non-empty"),
        (json.dumps({"agent": "a", "time": 1.0, "nodes": ["n"] * 2001}).encode(), "at most 2000"),
    ],
    ids=["not-json", "a-list", "no-agent", "bool-time", "no-nodes", "bad-node", "too-many"],
)
def test_bad_heartbeats_say_what_is_wrong(data: bytes, problem: str) -> None:
    with pytest.raises(HeartbeatError, match=problem):
        decode_heartbeat(data)


def test_heartbeats_round_trip_and_split_an_agents_nodes() -> None:
    beat = Heartbeat("sim", 2.5, ("n.1", "n2"))
    assert decode_heartbeat(encode_heartbeat(beat)) == beat
    nodes = [f"n{i}" for i in range(4500)]
    beats = heartbeats_for("sim", nodes, 7.0)
    assert [len(b.nodes) for b in beats] == [2000, 2000, 500]
    assert [n for b in beats for n in b.nodes] == nodes and {b.time for b in beats} == {7.0}


@pytest.mark.parametrize(
    ("verdict", "label"),
    [
        ("pod default/p is already bound to node n1", "already_bound"),
        ("pod default/p does not fit node n1: cpu requests 2000, 1000 idle", "insufficient_resources"),
        ("node n1 is NotReady", "node_not_ready"),
        ("node n1 silent for 12.0s", "node_not_ready"),
        ("queue q capability exceeded on cpu: allocated 1 + plan 2 > capability 2", "queue_capability"),
        ("pod default/p not found", "not_found"),
        ("pod default/p is Running on node n2, not on node n1", "victim_moved"),
        ("something new", "other"),
    ],
)
def test_rejections_are_counted_under_a_few_reasons(verdict: str, label: str) -> None:
    assert rejection_reason(verdict) == label
