"""starvation: which jobs are overdue, the room held for one and from when, which pods may still go to
nodes with held room, enqueue past the cluster's load, and the plugin's arguments."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, queue

from contracts.objects import PodGroup, PodGroupCondition, PodGroupStatus, PodStatus
from contracts.pending import BEHIND_STARVING_JOB, INSUFFICIENT_CLUSTER_CAPACITY, INSUFFICIENT_QUEUE_QUOTA
from contracts.resources import Resources
from services.scheduler.core.conf import ConfError, parse_conf
from services.scheduler.core.framework.session import Session
from services.scheduler.core.plugins.starvation import StarvationPlugin, overdue
from services.scheduler.core.snapshot import ClusterSnapshot

NOW = 1000.0
THRESHOLD = {"name": "starvation", "arguments": {"threshold": "10m"}}
STARVATION = conf("enqueue, allocate", ["priority", "gang"], ["predicates", "proportion", THRESHOLD])


def waiting(name: str, since: float, reason: str = INSUFFICIENT_CLUSTER_CAPACITY, **kwargs: Any) -> PodGroup:
    """A PodGroup Unschedulable since `since` for `reason`."""
    pg = podgroup(name, **kwargs)
    condition = PodGroupCondition("Unschedulable", "True", last_transition_time=since, reason=reason)
    return replace(pg, status=PodGroupStatus(phase=pg.status.phase, conditions=(condition,)))


def running(name: str, node_name: str, cpu: int, started: float, seconds: float | None) -> Any:
    """A pod of no PodGroup running on `node_name` since `started` for `seconds` (None: unknown)."""
    notes = {} if seconds is None else {"lahar.dev/sim-duration": f"{seconds:g}s"}
    made = pod(name, node_name=node_name, cpu=cpu, memory=None, annotations=notes)
    return replace(made, status=PodStatus(phase="Running", start_time=started))


def one_pod(name: str, cpu: int, seconds: float | None) -> list[Any]:
    """An Inqueue gang of one pod that runs `seconds` (None: unknown)."""
    notes = {} if seconds is None else {"lahar.dev/sim-duration": f"{seconds:g}s"}
    return [podgroup(name), pod(f"{name}-0", name, cpu=cpu, memory=None, annotations=notes)]


def big(pods: int = 2, cpu: int = 8, since: float = 0.0) -> list[Any]:
    """A gang waiting for room since `since`: overdue at NOW with the 10m threshold."""
    return [
        waiting("big", since, min_member=pods),
        *(pod(f"big-{i}", "big", cpu=cpu, memory=None) for i in range(pods)),
    ]


def open_session(objects: list[Any], scheduler_conf=STARVATION, now: float = NOW, **kwargs: Any) -> Session:
    return Session(
        ClusterSnapshot.from_objects([queue("default"), *objects]), scheduler_conf, now=now, **kwargs
    )


def condition(result: Any, name: str) -> tuple[str, str]:
    found = next(
        c
        for c in result.podgroups[f"default/{name}"].conditions
        if c.type == "Unschedulable" and c.status == "True"
    )
    return found.reason, found.message


# --- overdue ----------------------------------------------------------------------------------------------
OVERDUE_CASES = [
    pytest.param(waiting("g", 0.0), True, id="waited-past-the-threshold"),
    pytest.param(waiting("g", NOW - 600), True, id="exactly-the-threshold"),
    pytest.param(waiting("g", NOW - 599), False, id="not-yet"),
    pytest.param(waiting("g", 0.0, BEHIND_STARVING_JOB), True, id="held-back-by-room-held-for-another"),
    pytest.param(waiting("g", 0.0, INSUFFICIENT_QUEUE_QUOTA), False, id="waiting-on-quota-is-not-starving"),
    pytest.param(waiting("g", 0.0, "NotEnoughTasks"), False, id="waiting-for-its-pods"),
    pytest.param(podgroup("g"), False, id="never-unschedulable"),
]


@pytest.mark.parametrize(("group", "expected"), OVERDUE_CASES)
def test_overdue(group: PodGroup, expected: bool) -> None:
    ssn = open_session([node("n1"), group, pod("g-0", "g", cpu=8)])
    assert overdue(ssn.jobs["default/g"], NOW, 600.0) is expected


def test_a_ready_gang_is_not_overdue() -> None:
    ssn = open_session([node("n1"), waiting("g", 0.0), pod("g-0", "g", node_name="n1")])
    assert not overdue(ssn.jobs["default/g"], NOW, 600.0)


# --- the held room -----------------------------------------------------------------------------------------
def test_the_held_room_is_needed_when_the_pods_it_waits_for_end() -> None:
    # n1 frees its 4 busy cpus at 1100, n2 at 1300: the gang of two 8-cpu pods starts at 1300 on both
    objects = [
        node("n1", cpu=8),
        node("n2", cpu=8),
        node("n3", cpu=2),
        running("r1", "n1", 4, 0.0, 1100),
        running("r2", "n2", 4, 0.0, 1300),
        *big(),
    ]
    ssn = open_session(objects)
    result = ssn.run()
    held = ssn.plugins["starvation"].held  # type: ignore[attr-defined]
    assert held is not None
    assert (held.job, held.start) == ("default/big", 1300.0)
    assert sorted(ssn.nodes.names[r] for r in held.rows) == ["n1", "n2"]
    assert result.binds == {}
    assert condition(result, "big") == (
        INSUFFICIENT_CLUSTER_CAPACITY,
        "2/2 tasks in gang unschedulable: 3 nodes: insufficient cpu; "
        "cluster lacks cpu 16; waited past the starvation threshold: room held on 2 nodes",
    )


def test_pods_of_unknown_length_hold_their_room_until_the_end_of_time() -> None:
    objects = [node("n1", cpu=8), running("r1", "n1", 4, 0.0, None), *big(pods=1)]
    ssn = open_session(objects)
    ssn.run()
    held = ssn.plugins["starvation"].held  # type: ignore[attr-defined]
    assert held is not None and held.start == math.inf


def test_no_room_is_held_for_a_gang_the_empty_cluster_cannot_hold() -> None:
    ssn = open_session([node("n1", cpu=8), *big(pods=3)])
    ssn.run()
    assert ssn.plugins["starvation"].held is None  # type: ignore[attr-defined]


def test_the_job_that_waited_longest_gets_the_room() -> None:
    objects = [
        node("n1", cpu=8),
        running("r1", "n1", 8, 0.0, 1100),
        waiting("late", 200.0),
        pod("late-0", "late", cpu=8, memory=None),
        waiting("early", 100.0),
        pod("early-0", "early", cpu=8, memory=None),
    ]
    ssn = open_session(objects)
    ssn.run()
    assert ssn.plugins["starvation"].held.job == "default/early"  # type: ignore[attr-defined]


# --- who may use nodes with held room (n1, n2 held from 1300; n3 free and not held) ------------------
def held_cluster(n1_cpu: int = 8, n3_cpu: int = 2) -> list[Any]:
    return [
        node("n1", cpu=n1_cpu),
        node("n2", cpu=8),
        node("n3", cpu=n3_cpu),
        running("r1", "n1", 4, 0.0, 1100),
        running("r2", "n2", 4, 0.0, 1300),
        *big(),
    ]


# (seconds it runs, room on n3, not held) -> the nodes it may go to, none when held back
BACKFILL_CASES = [
    pytest.param(300, 0, {"n1", "n2"}, id="ends-exactly-when-the-held-room-is-needed"),
    pytest.param(299, 0, {"n1", "n2"}, id="ends-before-the-held-room-is-needed"),
    pytest.param(301, 0, set(), id="would-delay-it-and-nothing-else-is-free"),
    pytest.param(None, 0, set(), id="unknown-length-may-not-delay-it"),
    pytest.param(3000, 2, {"n3"}, id="a-long-pod-goes-to-a-node-it-does-not-need"),
]


@pytest.mark.parametrize(("seconds", "n3_cpu", "placed"), BACKFILL_CASES)
def test_backfill_only_where_it_does_not_delay_the_starving_job(
    seconds: float | None, n3_cpu: int, placed: set[str]
) -> None:
    result = open_session([*held_cluster(n3_cpu=n3_cpu), *one_pod("small", 2, seconds)]).run()
    if placed:
        assert list(result.binds) == ["default/small-0"] and result.binds["default/small-0"] in placed
    else:
        assert result.binds == {}
        assert condition(result, "small") == (
            BEHIND_STARVING_JOB,
            "1/1 tasks in gang unschedulable: 2 nodes: room held for starving job default/big; "
            "1 node: insufficient cpu",
        )


def test_a_long_pod_fits_beside_the_held_room_once() -> None:
    # n1 has 10 cpus: 2 are left beside the 8 held at 1300, for one 2-cpu pod of any length
    objects = [
        *held_cluster(n1_cpu=10, n3_cpu=0),
        *one_pod("first", 2, None),
        *one_pod("second", 2, None),
    ]
    result = open_session(objects).run()
    assert result.binds == {"default/first-0": "n1"}
    assert condition(result, "second")[0] == BEHIND_STARVING_JOB


def test_the_starving_job_itself_is_not_held_back() -> None:
    # everything on the nodes has ended by now: the gang fits and is placed at once
    objects = [node("n1", cpu=8), node("n2", cpu=8), *big()]
    result = open_session(objects).run()
    assert sorted(result.binds) == ["default/big-0", "default/big-1"]


def test_threshold_zero_turns_it_off() -> None:
    off = conf(
        "enqueue, allocate",
        ["priority", "gang"],
        ["predicates", "proportion", {"name": "starvation", "arguments": {"threshold": 0}}],
    )
    ssn = open_session([*held_cluster(n3_cpu=0), *one_pod("long", 2, None)], off)
    result = ssn.run()
    assert ssn.plugins["starvation"].held is None  # type: ignore[attr-defined]
    assert list(result.binds) == ["default/long-0"]


# --- enqueue ---------------------------------------------------------------------------------------------
def pending_big(since: float, reason: str = INSUFFICIENT_CLUSTER_CAPACITY) -> list[Any]:
    return [
        waiting(
            "big", since, reason, min_member=2, phase="Pending", min_resources=Resources.parse({"cpu": 16})
        )
    ]


ENQUEUE = conf(
    "enqueue, allocate", ["priority", "gang"], ["overcommit", "predicates", "proportion", THRESHOLD]
)
BUSY = [
    node("n1", cpu=8),
    node("n2", cpu=8),
    running("r1", "n1", 8, 0.0, 1100),
    running("r2", "n2", 8, 0.0, 1300),
]

ENQUEUE_CASES = [
    pytest.param(pending_big(0.0), [], "Inqueue", id="overdue-passes-the-clusters-load"),
    pytest.param(pending_big(NOW - 10), [], "Pending", id="not-overdue-waits"),
    pytest.param(
        pending_big(0.0),
        [queue("default", capability=Resources.parse({"cpu": 8}))],
        "Pending",
        id="overdue-does-not-pass-its-queues-capability",
    ),
]


@pytest.mark.parametrize(("objects", "queues", "phase"), ENQUEUE_CASES)
def test_enqueue(objects: list[Any], queues: list[Any], phase: str) -> None:
    snapshot = ClusterSnapshot.from_objects([*(queues or [queue("default")]), *BUSY, *objects])
    result = Session(snapshot, ENQUEUE, now=NOW).run()
    assert result.podgroups["default/big"].phase == phase


def test_while_room_is_held_a_job_that_ends_in_time_passes_the_load() -> None:
    # big holds n1 and n2 from 1300; a 200 s job is admitted although the cluster is full, a longer one not
    objects = [
        node("n1", cpu=8),
        node("n2", cpu=8),
        running("r1", "n1", 8, 0.0, 1100),
        running("r2", "n2", 8, 0.0, 1300),
        *big(),
    ]
    for name, seconds in (("short", 200), ("long", 400)):
        group = podgroup(name, phase="Pending", min_resources=Resources.parse({"cpu": 2}))
        objects.append(
            replace(group, meta=replace(group.meta, annotations={"lahar.dev/sim-duration": f"{seconds}s"}))
        )
    result = open_session(objects, ENQUEUE).run()
    assert (result.podgroups["default/short"].phase, result.podgroups["default/long"].phase) == (
        "Inqueue",
        "Pending",
    )


# --- arguments -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("5m", ""),
        (0, ""),
        ("1h30m", ""),
        ("soon", "threshold: expected a duration such as 30s, 1m30s or 250ms, got 'soon'"),
        ("-1m", "threshold: expected 0 (off) or more, got '-1m'"),
    ],
)
def test_threshold_argument(value: Any, problem: str) -> None:
    assert StarvationPlugin.argument_problems({"threshold": value}) == ([problem] if problem else [])
    plugin = f"  - name: starvation\n    arguments: {{threshold: {value!r}}}\n"
    text = f"actions: allocate\ntiers:\n- plugins:\n{plugin}"
    if problem:
        with pytest.raises(ConfError, match=re.escape("tiers[0].plugins[0].arguments.threshold")):
            parse_conf(text)
    else:
        parse_conf(text)


def test_a_replica_keeps_out_of_room_held_for_a_job_another_replica_places() -> None:
    # this replica does not own big: it plans big's room from its pods all the same, and holds back its own
    objects = [*held_cluster(n3_cpu=0), *one_pod("small", 2, None)]
    ssn = open_session(objects, owns=lambda key: key != "default/big")
    result = ssn.run()
    assert ssn.plugins["starvation"].held.job == "default/big"  # type: ignore[attr-defined]
    assert result.binds == {}
    assert condition(result, "small")[0] == BEHIND_STARVING_JOB
    assert "default/big" not in result.podgroups


def test_no_room_is_held_for_a_job_its_queue_could_never_hold() -> None:
    # q1 may hold 8 cpus: the gang of 16 waits on its quota however long it waits, so no node is held
    capped = queue("q1", capability=Resources.parse({"cpu": 8}))
    group = replace(waiting("big", 0.0, min_member=2), queue="q1")
    objects = [capped, *held_cluster(n3_cpu=0)[:5], group, *big()[1:], *one_pod("small", 2, None)]
    ssn = open_session(objects)
    result = ssn.run()
    assert ssn.plugins["starvation"].held is None  # type: ignore[attr-defined]
    assert list(result.binds) == ["default/small-0"]
