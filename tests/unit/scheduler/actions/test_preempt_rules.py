"""preempt and reclaim beyond Volcano (issue 15, item 1): transactional plans, minimal victims, no
cycles, the cool-down, a best-effort pod's pod slot, and what the PodGroup is told. One table per rule;
each case names what Volcano does instead where it differs."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, priority_class, queue, res, run

from contracts.evictions import eviction_cause
from services.scheduler.core.framework.plan import SessionResult

CLASSES = [priority_class("low", 10), priority_class("mid", 20), priority_class("high", 100)]
# gang's victim filter off (Volcano's Helm default): a victim job may then be taken below minAvailable
TIERS = (
    ["priority", {"name": "gang", "enablePreemptable": False}, "conformance"],
    ["predicates", "proportion"],
)
NOW = 10_000.0


def job(name: str, *, pc: str = "", min_member: int = 1, queue_name: str = "default") -> Any:
    return podgroup(name, min_member=min_member, queue=queue_name, priority_class=pc)


@dataclass
class Case:
    name: str
    objects: list[Any]
    evictions: set[str] = field(default_factory=set)
    pipelined: dict[str, str] = field(default_factory=dict)
    tiers: tuple[Any, ...] = TIERS
    actions: str = "preempt"


def check(case: Case) -> SessionResult:
    result = run([*CLASSES, *case.objects], conf(case.actions, *case.tiers), now=NOW)
    assert set(result.evictions) == case.evictions
    assert result.pipelined == case.pipelined
    return result


# --- transactional: one plan, or nothing ----------------------------------------------------------------

TRANSACTIONAL = [
    Case(
        "a gang that cannot be made whole by evictions evicts nothing (Volcano #5022, #5026)",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("sys", pc="high"),
            pod("sys-0", "sys", cpu=2, node_name="n2"),
            job("high", pc="high", min_member=2),
            pod("high-0", "high", cpu=2),
            pod("high-1", "high", cpu=2),
        ],
    ),
    Case(
        "a gang that fits evicts exactly what it needs, victims and room in one plan",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            node("n3", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            pod("low-1", "low", cpu=2, node_name="n2"),
            pod("low-2", "low", cpu=2, node_name="n3"),
            job("high", pc="high", min_member=2),
            pod("high-0", "high", cpu=2),
            pod("high-1", "high", cpu=2),
        ],
        evictions={"default/low-0", "default/low-1"},
        pipelined={"default/high-0": "n1", "default/high-1": "n2"},
    ),
]


@pytest.mark.parametrize("case", TRANSACTIONAL, ids=lambda c: c.name)
def test_transactional(case: Case) -> None:
    result = check(case)
    evicting = [plan for plan in result.plans if plan.evictions]
    assert len(evicting) == (1 if case.evictions else 0)
    for plan in evicting:
        assert plan.job == "default/high"
        assert {r.task: r.node for r in plan.reservations} == case.pipelined
        for reservation in plan.reservations:
            victims = [e.task for e in plan.evictions if e.node == reservation.node]
            assert reservation.reason == f"preempt: evicting {', '.join(victims)} on {reservation.node}"


# --- minimal victims ------------------------------------------------------------------------------------

MINIMAL = [
    Case(
        "a victim the preemptor does not need is spared (Volcano evicts both)",
        [
            node("n1", cpu=3),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            pod("low-1", "low", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2),
        ],
        evictions={"default/low-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "an elastic job loses one pod above its minAvailable before a gang is broken (Volcano: the gang)",
        [
            node("n1", cpu=4),
            job("gang", pc="low", min_member=2),
            pod("gang-0", "gang", cpu=1, node_name="n1"),
            pod("gang-1", "gang", cpu=1, node_name="n1"),
            job("elastic", pc="mid", min_member=1),
            pod("elastic-0", "elastic", cpu=1, node_name="n1"),
            pod("elastic-1", "elastic", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
        evictions={"default/elastic-1"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "equal pods lost: the lower priority goes (Volcano's victim order)",
        [
            node("n1", cpu=2),
            job("single", pc="low"),
            pod("single-0", "single", cpu=1, node_name="n1"),
            job("elastic", pc="mid", min_member=1),
            pod("elastic-0", "elastic", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
        evictions={"default/single-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "the node whose victims cost fewest pods wins over the first one (Volcano: the first)",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            job("gang", pc="low", min_member=3),
            pod("gang-0", "gang", cpu=2, node_name="n1"),
            pod("gang-1", "gang", cpu=2, node_name="n3"),
            pod("gang-2", "gang", cpu=2, node_name="n4"),
            node("n3", cpu=2),
            node("n4", cpu=2),
            job("a", pc="low"),
            pod("a-0", "a", cpu=1, node_name="n2"),
            job("b", pc="low"),
            pod("b-0", "b", cpu=1, node_name="n2"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2),
        ],
        # n1 costs the whole 3-pod gang; n2 two single pods
        evictions={"default/a-0", "default/b-0"},
        pipelined={"default/high-0": "n2"},
    ),
    Case(
        "a gang preemptor takes no more pods of an elastic victim than it has pods",
        [
            node("n1", cpu=4),
            job("elastic", pc="low", min_member=1),
            *[pod(f"elastic-{i}", "elastic", cpu=1, node_name="n1") for i in range(4)],
            job("high", pc="high", min_member=2),
            pod("high-0", "high", cpu=1),
            pod("high-1", "high", cpu=1),
        ],
        evictions={"default/elastic-3", "default/elastic-2"},
        pipelined={"default/high-0": "n1", "default/high-1": "n1"},
    ),
]


@pytest.mark.parametrize("case", MINIMAL, ids=lambda c: c.name)
def test_minimal_victims(case: Case) -> None:
    check(case)


# --- no cycles: strictly lower priority only ------------------------------------------------------------

CYCLES = [
    Case(
        "equal priorities never preempt each other, even without the priority plugin (Volcano: they do)",
        [
            node("n1", cpu=2),
            job("a", pc="mid"),
            pod("a-0", "a", cpu=2, node_name="n1"),
            job("b", pc="mid"),
            pod("b-0", "b", cpu=1),
        ],
        tiers=([{"name": "gang", "enablePreemptable": False}, "conformance"], ["predicates"]),
    ),
    Case(
        "a lower-priority job never preempts a higher one back",
        [
            node("n1", cpu=2),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2, node_name="n1"),
            job("low", pc="low"),
            pod("low-0", "low", cpu=1),
        ],
        tiers=([{"name": "gang", "enablePreemptable": False}, "conformance"], ["predicates"]),
    ),
    Case(
        "within a job: only a strictly lower task priority",
        [
            node("n1", cpu=1),
            job("j"),
            pod("j-a-0", "j", cpu=1, node_name="n1", annotations={"volcano.sh/task-priority": "5"}),
            pod("j-b-0", "j", cpu=1, annotations={"volcano.sh/task-priority": "5"}),
        ],
        tiers=([{"name": "gang", "enablePreemptable": False, "enableJobStarving": False}],),
    ),
]


@pytest.mark.parametrize("case", CYCLES, ids=lambda c: c.name)
def test_no_cycles(case: Case) -> None:
    check(case)


# --- cool-down (volcano.sh/cooldown-time, Volcano's cdp plugin) ------------------------------------------


def cooling(value: str, *, started: float | None, label: bool = False, **kwargs: Any) -> Any:
    where = (
        {"labels": {"volcano.sh/cooldown-time": value}}
        if label
        else {"annotations": {"volcano.sh/cooldown-time": value}}
    )
    return pod("low-0", "low", cpu=2, node_name="n1", started=started, **where, **kwargs)


def cooldown_case(name: str, victim: Any, evicted: bool, actions: str = "preempt") -> Case:
    objects = [node("n1", cpu=2), job("low", pc="low"), victim, job("high", pc="high")]
    objects.append(pod("high-0", "high", cpu=2))
    return Case(
        name,
        objects,
        evictions={"default/low-0"} if evicted else set(),
        pipelined={"default/high-0": "n1"} if evicted else {},
        actions=actions,
    )


COOLDOWN = [
    cooldown_case("started 1m ago with a 10m cool-down: protected", cooling("10m", started=NOW - 60), False),
    cooldown_case("started 11m ago with a 10m cool-down: a victim", cooling("10m", started=NOW - 660), True),
    cooldown_case("the label counts as the annotation", cooling("1h", started=NOW - 60, label=True), False),
    cooldown_case("a malformed duration protects nothing (as Volcano)", cooling("soon", started=NOW), True),
    cooldown_case("a Bound pod that has not started is not protected", cooling("1h", started=None), True),
    cooldown_case(
        "not started yet, though bound, is not protected",
        cooling("1h", started=NOW, phase="Pending"),
        True,
    ),
]


@pytest.mark.parametrize("case", COOLDOWN, ids=lambda c: c.name)
def test_cooldown(case: Case) -> None:
    result = check(case)
    if not case.evictions:
        (condition,) = [c for c in result.podgroups["default/high"].conditions if c.type == "Preempting"]
        assert condition.reason == "WouldNotMakeRoom"
        assert "cool-down" in condition.message


def test_reclaim_honours_the_cooldown_too() -> None:
    def objects(started: float) -> list[Any]:
        return [
            node("n1", cpu=4),
            queue("q1", 1),
            queue("q2", 3),
            podgroup("held", queue="q1"),
            pod(
                "held-0",
                "held",
                cpu=3,
                node_name="n1",
                started=started,
                annotations={"volcano.sh/cooldown-time": "5m"},
            ),
            podgroup("new", queue="q2"),
            pod("new-0", "new", cpu=3),
        ]

    tiers = (["priority", "gang", "conformance"], ["predicates", "proportion"])
    assert run(objects(NOW - 60), conf("reclaim", *tiers), now=NOW).evictions == []
    assert run(objects(NOW - 600), conf("reclaim", *tiers), now=NOW).evictions == ["default/held-0"]


# --- a pod slot (Volcano #3335) ------------------------------------------------------------------------

SLOTS = [
    Case(
        "a best-effort pod holding a node's last pod slot is a victim for a pod that needs the slot",
        [
            node("n1", cpu=4, pods=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=1, node_name="n1"),
            job("be", pc="low"),
            pod("be-0", "be", cpu=None, memory=None, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
        # both free the slot and lose one pod; be-0's job is created later, so it goes first
        evictions={"default/be-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "a best-effort preemptor takes a best-effort pod's slot, never a pod with requests",
        [
            node("n1", cpu=4, pods=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=1, node_name="n1"),
            job("be", pc="low"),
            pod("be-0", "be", cpu=None, memory=None, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=None, memory=None),
        ],
        evictions={"default/be-0"},
        pipelined={"default/high-0": "n1"},
    ),
]


@pytest.mark.parametrize("case", SLOTS, ids=lambda c: c.name)
def test_pod_slots(case: Case) -> None:
    check(case)


# --- what the PodGroup and the events are told ----------------------------------------------------------


def test_evictions_and_reservations_say_why() -> None:
    case = MINIMAL[0]
    result = check(case)
    (plan,) = result.plans
    (eviction,) = plan.evictions
    assert eviction_cause(eviction.reason) == "preempt"
    assert eviction.reason == "preempt: for default/high-0 (job default/high, priority 100)"
    (condition,) = [c for c in result.podgroups["default/high"].conditions if c.type == "Preempting"]
    assert (condition.status, condition.reason) == ("True", "RoomReserved")
    assert condition.message == (
        "preempt: evicting 1 pod(s) (default/low-0) to reserve room for default/high-0 on n1"
    )


def test_a_preemption_that_makes_no_room_says_why_per_node() -> None:
    """high-0 would fit on n1; high-1 then finds n1's victim already taken and only sys-0, of equal
    priority, on n2."""
    result = check(TRANSACTIONAL[0])
    (condition,) = [c for c in result.podgroups["default/high"].conditions if c.type == "Preempting"]
    assert (condition.status, condition.reason) == ("False", "WouldNotMakeRoom")
    assert condition.message == (
        "preempt would not make room, nothing evicted: 1 pod(s) would have found room but not the whole"
        " gang; default/high-1: 1 node: no pod it may evict; 1 node: only pods of equal or higher priority"
    )


@pytest.mark.parametrize("tiers", [TIERS, (["priority", "cdp", "conformance"], ["predicates"])])
def test_the_cooldown_holds_with_or_without_cdp_in_the_conf(tiers: tuple[Any, ...]) -> None:
    """Volcano protects only when its cdp plugin is configured; a conf naming it loads unchanged here."""
    case = replace(COOLDOWN[0], tiers=tiers)
    assert check(case).evictions == []


def test_reclaim_says_why_a_queue_takes_nothing_back() -> None:
    objects = [
        node("n1", cpu=4),
        queue("q1", 1),
        queue("q2", 3, capability=res(cpu=2)),
        podgroup("held", queue="q1"),
        pod("held-0", "held", cpu=4, node_name="n1"),
        podgroup("new", queue="q2"),
        pod("new-0", "new", cpu=3),
    ]
    tiers = (["priority", "gang", "conformance"], ["predicates", "proportion"])
    result = run(objects, conf("reclaim", *tiers), now=NOW)
    assert result.evictions == []
    (condition,) = [c for c in result.podgroups["default/new"].conditions if c.type == "Reclaiming"]
    assert (condition.status, condition.reason) == ("False", "WouldNotMakeRoom")
    assert condition.message == (
        "reclaim would not make room, nothing evicted: default/new-0: queue q2 may not grow by it"
        " (it would pass its deserved share)"
    )
