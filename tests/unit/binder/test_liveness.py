"""Node liveness: stale heartbeats make a node NotReady and its pods lost; a heartbeat makes it Ready."""

from __future__ import annotations

import pytest
from support.builders import node, pod
from support.events import EventLog

from contracts import payloads
from services.binder.core.core import BinderCore, BinderState
from shared.runner_types import Output


def cluster(core: BinderCore) -> tuple[BinderState, EventLog]:
    """n1 registered at t=100 with a bound pod, a running pod, a finished pod and a terminating pod;
    n2 registered at t=100, empty; an unbound pending pod."""
    state, log = core.initial(), EventLog()
    objects = [
        node("n1"),
        node("n2"),
        pod("bound", "g", node_name="n1", phase="Pending"),
        pod("running", "g", node_name="n1", phase="Running"),
        pod("done", "g", node_name="n1", phase="Succeeded"),
        pod("leaving", "g", node_name="n1", phase="Running", deleting=True),
        pod("pending", "g"),
    ]
    for obj in objects:
        state = core.apply(state, log.created(obj, at=100.0))
    return state, log


def summary(outputs: list[Output]) -> list[tuple[str, str]]:
    return [(o.type, f"{o.namespace}/{o.name}" if o.namespace else o.name) for o in outputs]


LOST_N1 = [
    ("NodeNotReady", "n1"),
    ("PodLost", "default/bound"),
    ("PodLost", "default/leaving"),
    ("PodLost", "default/running"),
]


@pytest.mark.parametrize(
    ("heartbeats", "now", "expected"),
    [
        ({}, 105.0, []),
        ({}, 110.0, []),  # exactly the timeout: not yet
        ({}, 111.0, [*LOST_N1, ("NodeNotReady", "n2")]),  # never heard from: counted from registration
        ({"n1": 108.0, "n2": 108.0}, 115.0, []),
        ({"n1": 108.0, "n2": 104.0}, 115.0, [("NodeNotReady", "n2")]),
        ({"n1": 90.0, "n2": 200.0}, 111.0, LOST_N1),  # an old heartbeat does not predate registration
    ],
    ids=["fresh", "at-timeout", "never-heard", "heartbeats", "one-stale", "heartbeat-before-registration"],
)
def test_stale_nodes_become_not_ready_and_their_pods_lost(
    heartbeats: dict[str, float], now: float, expected: list[tuple[str, str]]
) -> None:
    core = BinderCore()
    state, _ = cluster(core)
    for name, at in heartbeats.items():
        state = core.heartbeat(state, [name], at)
    assert summary(core.reconcile(state, now)) == expected


def test_outputs_name_the_fact_and_its_cause() -> None:
    core = BinderCore()
    state, _ = cluster(core)
    state = core.heartbeat(state, ["n2"], 200.0)
    not_ready, lost, *_ = core.reconcile(state, 111.0)
    assert not_ready.payload == payloads.NodeNotReady(last_heartbeat=100.0)
    assert (not_ready.kind, not_ready.namespace, not_ready.correlation_id) == ("node", None, "n1")
    assert lost.payload == payloads.PodLost(node="n1", reason="NodeLost")
    assert (lost.kind, lost.causation_id, lost.correlation_id) == ("pod", not_ready.id, "default/g")
    # asked again (the loop keeps them in flight), the same ids come back
    assert [o.id for o in core.reconcile(state, 130.0)] == [o.id for o in core.reconcile(state, 111.0)]


def test_the_timeout_is_a_parameter() -> None:
    core = BinderCore(node_timeout_s=60.0)
    state, _ = cluster(core)
    assert core.reconcile(state, 150.0) == []
    assert len(core.reconcile(state, 161.0)) == 5


def land(core: BinderCore, state: BinderState, log: EventLog, outputs: list[Output]) -> BinderState:
    for o in outputs:
        key = f"{o.namespace}/{o.name}" if o.namespace else o.name
        state = core.apply(state, log.event(o.type, key, o.payload, id=o.id))
    return state


def test_lifecycle_not_ready_lost_then_ready_again() -> None:
    core = BinderCore()
    state, log = cluster(core)

    def reconcile(now: float) -> list[Output]:
        """n2 keeps beating: only n1's story is told."""
        return core.reconcile(core.heartbeat(state, ["n2"], now), now)

    lost = reconcile(111.0)
    assert summary(lost) == LOST_N1
    # NodeNotReady lands first; the PodLost still owed keep their ids
    state = land(core, state, log, lost[:1])
    assert reconcile(112.0) == lost[1:]
    state = land(core, state, log, lost[1:])
    assert reconcile(113.0) == []
    assert state.ledger.nodes["n1"].pods == set()
    # silence goes on: nothing more to say
    assert reconcile(500.0) == []
    # the node is heard from again
    state = core.heartbeat(state, ["n1"], 501.0)
    [ready] = reconcile(502.0)
    assert summary([ready]) == [("NodeReady", "n1")]
    state = land(core, state, log, [ready])
    assert state.ledger.nodes["n1"].ready
    assert reconcile(503.0) == []
    # a later loss is a new fact with new ids
    again = reconcile(520.0)
    assert summary(again) == [("NodeNotReady", "n1")]
    assert again[0].id != lost[0].id


def test_a_binder_taking_over_gives_every_node_a_full_timeout() -> None:
    core = BinderCore()
    state, _ = cluster(core)
    state = core.heartbeat(state, ["n1"], 105.0)
    state = core.heartbeat(state, ["n2"], 105.0)
    # restored from a checkpoint long after: heartbeats are not in the log, nobody heard the nodes since
    state = core.load(core.dump(state))
    state = core.watch_from(state, 1000.0)
    assert core.reconcile(state, 1005.0) == []
    state = core.heartbeat(state, ["n1"], 1006.0)
    assert summary(core.reconcile(state, 1011.0)) == [("NodeNotReady", "n2")]


def test_watching_again_does_not_revive_a_not_ready_node() -> None:
    core = BinderCore()
    state, log = cluster(core)
    state = core.apply(state, log.event("NodeNotReady", "n2", {"last_heartbeat": 100.0}))
    state = core.watch_from(state, 1000.0)
    assert ("NodeReady", "n2") not in summary(core.reconcile(state, 1001.0))


def test_a_binder_cut_off_judges_no_node_and_gives_each_a_fresh_timeout_once_it_hears_again() -> None:
    """The issue's outage: the binder's connection drops at 105 and is back at 130. The nodes were silent
    to it for 25 s, longer than the timeout, yet no node is lost: only time it could hear counts."""
    core = BinderCore()
    state, _ = cluster(core)
    state = core.heartbeat(state, ["n1", "n2"], 104.0)
    state = core.deaf(state, 105.0)
    assert core.due(state, 120.0) == []
    assert core.reconcile(state, 120.0) == []
    state = core.heard_all(state, 130.0)
    assert core.due(state, 131.0) == []
    assert core.reconcile(state, 140.0) == []  # a full timeout from 130, not from 104
    # n1 beats again after the outage; n2 really stopped: lost one timeout after the binder could hear
    state = core.heartbeat(state, ["n1"], 131.0)
    assert core.due(state, 140.5) == ["n2"]
    assert summary(core.reconcile(state, 140.5)) == [("NodeNotReady", "n2")]


def test_a_node_silent_before_the_outage_is_still_lost_after_a_fresh_timeout() -> None:
    """Heard silent for 9 of its 10 s before the binder was cut off: it gets a whole timeout again from
    the reconnection, not the second it had left."""
    core = BinderCore()
    state, _ = cluster(core)
    state = core.heartbeat(state, ["n2"], 200.0)  # n1 last heard of at its registration, 100
    state = core.heard_all(core.deaf(state, 109.0), 112.0)
    assert core.reconcile(state, 122.0) == []
    assert summary(core.reconcile(state, 122.5)) == LOST_N1


def test_a_deaf_binder_judges_nobody_however_long_and_its_checkpoint_does_not_carry_it() -> None:
    core = BinderCore()
    state, _ = cluster(core)
    state = core.deaf(state, 105.0)
    assert not core.reconcile(state, 500.0)
    # the deafness is this process's own fact: a checkpoint taken meanwhile does not carry it
    restored = core.load(core.dump(state))
    assert restored.liveness.deaf_since is None
    assert state.liveness.deaf_since == 105.0


def test_hearing_again_does_not_move_the_fresh_timeout_back() -> None:
    core = BinderCore()
    state, _ = cluster(core)
    state = core.watch_from(state, 300.0)
    state = core.heard_all(state, 250.0)  # a late callback of an older gap
    assert state.liveness.watching_since == 300.0
    assert core.reconcile(state, 309.0) == []
    assert summary(core.reconcile(state, 311.0)) == [*LOST_N1, ("NodeNotReady", "n2")]
