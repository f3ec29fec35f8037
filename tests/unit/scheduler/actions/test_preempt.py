"""preempt: same-queue, priority-driven eviction for starving jobs (Volcano's preempt action)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, priority_class, queue, res, run

from contracts.evictions import eviction_cause
from services.scheduler.core.conf import ConfError

CLASSES = [
    priority_class("low", 10),
    priority_class("mid", 20),
    priority_class("high", 100),
    replace(priority_class("never", 100), preemption_policy="Never"),
]

# gang's victim filter off, as in Volcano's Helm default: a job at minAvailable may then lose pods
TIERS = (
    ["priority", {"name": "gang", "enablePreemptable": False}, "conformance"],
    ["predicates", "proportion"],
)
GANG_SAFE = (["priority", "gang", "conformance"], ["predicates", "proportion"])


def job(name: str, *, pc: str = "", min_member: int = 1, queue_name: str = "default", phase: str = "Inqueue"):
    return podgroup(name, min_member=min_member, queue=queue_name, priority_class=pc, phase=phase)


@dataclass
class Case:
    name: str
    objects: list[Any]
    evictions: set[str] = field(default_factory=set)
    pipelined: dict[str, str] = field(default_factory=dict)
    tiers: tuple = TIERS
    configurations: Any = None


CASES = [
    Case(
        "higher-priority starving job evicts a lower-priority job of its queue",
        [
            node("n1", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
        evictions={"default/low-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "a pod annotated volcano.sh/preemptable=false is never evicted",
        [
            node("n1", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1", preemptable=False),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
    ),
    Case(
        "preemptionPolicy Never does not preempt",
        [
            node("n1", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1, preemption_policy="Never"),
        ],
    ),
    Case(
        "preemptionPolicy Never inherited from the PriorityClass",
        [
            node("n1", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("high", pc="never"),
            pod("high-0", "high", cpu=1, priority_class="never"),
        ],
    ),
    Case(
        "gang-safe: a victim job is never taken below minAvailable",
        [
            node("n1", cpu=3),
            job("low", pc="low", min_member=2),
            pod("low-0", "low", cpu=1, node_name="n1"),
            pod("low-1", "low", cpu=1, node_name="n1"),
            pod("low-2", "low", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2),
        ],
        tiers=GANG_SAFE,
    ),
    Case(
        "gang-safe: pods above minAvailable may go",
        [
            node("n1", cpu=3),
            job("low", pc="low", min_member=1),
            pod("low-0", "low", cpu=1, node_name="n1"),
            pod("low-1", "low", cpu=1, node_name="n1"),
            pod("low-2", "low", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2),
        ],
        evictions={"default/low-0", "default/low-1"},
        pipelined={"default/high-0": "n1"},
        tiers=GANG_SAFE,
    ),
    Case(
        "equal priority does not preempt",
        [
            node("n1", cpu=2),
            job("low", pc="mid"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("high", pc="mid"),
            pod("high-0", "high", cpu=1),
        ],
    ),
    Case(
        "jobs of another queue are not preempted (that is reclaim)",
        [
            node("n1", cpu=2),
            queue("q1"),
            queue("q2"),
            job("low", pc="low", queue_name="q1"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("high", pc="high", queue_name="q2"),
            pod("high-0", "high", cpu=1),
        ],
    ),
    Case(
        "victims of one queue: the lowest-priority job goes first and only as many as needed",
        [
            node("n1", cpu=2),
            job("mid", pc="mid"),
            pod("mid-0", "mid", cpu=1, node_name="n1"),
            job("low", pc="low"),
            pod("low-0", "low", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
        evictions={"default/low-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "a node whose victims cannot make room is skipped for the next one",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            job("top", pc="high"),
            pod("top-0", "top", cpu=1, node_name="n1"),
            job("low", pc="low"),
            pod("low-0", "low", cpu=1, node_name="n1"),
            pod("low-1", "low", cpu=2, node_name="n2"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2),
        ],
        evictions={"default/low-1"},
        pipelined={"default/high-0": "n2"},
    ),
    Case(
        "queue quota is part of the fit: free nodes do not help a queue at its capability",
        [
            node("n1", cpu=4),
            queue("capped", capability=res(cpu=2)),
            job("low", pc="low", queue_name="capped"),
            pod("low-0", "low", cpu=1, node_name="n1"),
            job("high", pc="high", queue_name="capped"),
            pod("high-0", "high", cpu=2),
        ],
        evictions={"default/low-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "a victim's pod slot comes back as its resources do: a pod-full node can make room (Volcano #3335)",
        [
            node("n1", cpu=2, pods=2),
            node("n2", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=1, node_name="n1"),
            pod("low-1", "low", cpu=1, node_name="n1"),
            pod("low-2", "low", cpu=2, node_name="n2"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
        # Volcano before #3188 evicted low-2 on n2: a releasing pod kept its slot on n1
        evictions={"default/low-1"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "a victim the preemptor turns out not to need is spared (the set is irreducible)",
        [
            node("n1", cpu=3),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            pod("low-1", "low", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2),
        ],
        # reverse task order takes low-1 first; it is not enough, so low-0 goes too; low-0 alone makes
        # room, so low-1 is spared (Volcano evicts both)
        evictions={"default/low-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "a gang that cannot be pipelined as a whole evicts nothing",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("sys", pc="low"),
            pod("sys-0", "sys", cpu=2, node_name="n2", preemptable=False),
            job("high", pc="high", min_member=2),
            pod("high-0", "high", cpu=2),
            pod("high-1", "high", cpu=2),
        ],
    ),
    Case(
        "a pending PodGroup does not preempt",
        [
            node("n1", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            job("high", pc="high", phase="Pending"),
            pod("high-0", "high", cpu=1),
        ],
    ),
    Case(
        "kube-system pods are protected by conformance",
        [
            node("n1", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1", namespace="kube-system"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
    ),
    Case(
        "Bound (not yet running) tasks are victims too",
        [
            node("n1", cpu=2),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1", phase="Pending"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=1),
        ],
        evictions={"default/low-0"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "within a job a higher-priority task evicts a lower-priority one",
        [
            node("n1", cpu=1),
            job("j"),
            pod("j-a-0", "j", cpu=1, node_name="n1", annotations={"volcano.sh/task-priority": "1"}),
            pod("j-b-0", "j", cpu=1, annotations={"volcano.sh/task-priority": "10"}),
        ],
        evictions={"default/j-a-0"},
        pipelined={"default/j-b-0": "n1"},
        # gang's starving and victim rules would forbid it (a job at minAvailable is not starving)
        tiers=(["priority", {"name": "gang", "enablePreemptable": False, "enableJobStarving": False}],),
    ),
    Case(
        "topology-aware variant reprieves victims it does not need",
        [
            node("n1", cpu=3),
            job("low", pc="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            pod("low-1", "low", cpu=1, node_name="n1"),
            job("high", pc="high"),
            pod("high-0", "high", cpu=2),
        ],
        # as in the greedy case low-1 then low-0 are tried; low-0 alone makes room, so low-1 is reprieved
        evictions={"default/low-0"},
        pipelined={"default/high-0": "n1"},
        configurations=[{"name": "preempt", "arguments": {"enableTopologyAwarePreemption": True}}],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_preempt(case: Case) -> None:
    result = run([*CLASSES, *case.objects], conf("preempt", *case.tiers, configurations=case.configurations))
    assert set(result.evictions) == case.evictions
    assert result.pipelined == case.pipelined
    assert result.binds == {}
    for plan in result.plans:
        assert all(eviction_cause(e.reason) == "preempt" for e in plan.evictions)


@pytest.mark.parametrize("seed", range(6))
def test_topology_aware_variant_picks_the_node_with_the_cheapest_victims(seed: int) -> None:
    """Whatever node the random offset starts at, every candidate is dry-run and the one whose victims
    have the lowest priority wins (the greedy walk would take n1, the first node)."""
    objects = [
        *CLASSES,
        node("n1", cpu=2),
        node("n2", cpu=2),
        node("n3", cpu=2),
        job("mid", pc="mid"),
        pod("mid-0", "mid", cpu=2, node_name="n1"),
        pod("mid-1", "mid", cpu=2, node_name="n3"),
        job("low", pc="low"),
        pod("low-0", "low", cpu=2, node_name="n2"),
        job("high", pc="high"),
        pod("high-0", "high", cpu=2),
    ]
    arguments = {"enableTopologyAwarePreemption": True, "minCandidateNodesAbsolute": 3}
    result = run(
        objects,
        conf("preempt", *TIERS, configurations=[{"name": "preempt", "arguments": arguments}]),
        seed=seed,
    )
    assert result.evictions == ["default/low-0"]
    assert result.pipelined == {"default/high-0": "n2"}


def test_evictions_land_in_one_plan_per_job() -> None:
    objects = [
        *CLASSES,
        node("n1", cpu=2),
        node("n2", cpu=2),
        job("low", pc="low"),
        pod("low-0", "low", cpu=2, node_name="n1"),
        pod("low-1", "low", cpu=2, node_name="n2"),
        job("high", pc="high", min_member=2),
        pod("high-0", "high", cpu=2),
        pod("high-1", "high", cpu=2),
    ]
    result = run(objects, conf("preempt", ["priority", "conformance"], ["predicates"]))
    assert len(result.plans) == 1
    assert {e.task for e in result.plans[0].evictions} == {"default/low-0", "default/low-1"}
    assert result.pipelined == {"default/high-0": "n1", "default/high-1": "n2"}


def test_unknown_argument_is_rejected() -> None:
    with pytest.raises(ConfError, match="enableTopologyAware"):
        conf(
            "preempt",
            ["priority"],
            configurations=[{"name": "preempt", "arguments": {"enableTopologyAware": True}}],
        )
