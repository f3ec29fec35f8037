"""reclaim: starving jobs take resources back from other, over-served queues (Volcano's reclaim action)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, queue, res, run

from contracts.evictions import eviction_cause

TIERS = (["priority", "gang", "conformance"], ["predicates", "proportion"])


@dataclass
class Case:
    name: str
    objects: list[Any]
    evictions: set[str] = field(default_factory=set)
    pipelined: dict[str, str] = field(default_factory=dict)


def seed_003_a(**reclaimer: Any) -> list[Any]:
    """Queue test1 (weight 1) holds a 1-core and a 3-core job on a 4-cpu cluster; queue test2 (weight 3)
    gets a pending 3-core job."""
    return [
        node("n1", cpu=4),
        queue("test1", 1),
        queue("test2", 3),
        podgroup("small", queue="test1"),
        pod("small-0", "small", cpu=1, node_name="n1"),
        podgroup("big", queue="test1"),
        pod("big-0", "big", cpu=3, node_name="n1"),
        podgroup("new", queue="test2"),
        pod("new-0", "new", cpu=3, **reclaimer),
    ]


CASES = [
    Case(
        "seed-003 (a): the weight-3 queue reclaims the newest over-deserved task of the weight-1 queue",
        seed_003_a(),
        evictions={"default/big-0"},
        pipelined={"default/new-0": "n1"},
    ),
    Case(
        "seed-003 (b): a queue marked reclaimable: false keeps its resources",
        [
            node("n1", cpu=4),
            queue("test1", 1, reclaimable=False),
            queue("test2", 1),
            podgroup("held", queue="test1"),
            pod("held-0", "held", cpu=3, node_name="n1"),
            podgroup("new", queue="test2"),
            pod("new-0", "new", cpu=2),
        ],
    ),
    Case(
        "preemptionPolicy Never does not reclaim",
        seed_003_a(preemption_policy="Never"),
    ),
    Case(
        "a queue that may not grow by the task (Preemptive) does not reclaim",
        [seed_003_a()[0], queue("test1", 1), queue("test2", 3, capability=res(cpu=2)), *seed_003_a()[3:]],
    ),
    Case(
        "only Running tasks are reclaimed, not Bound ones",
        [
            node("n1", cpu=4),
            queue("test1", 1),
            queue("test2", 3),
            podgroup("small", queue="test1"),
            pod("small-0", "small", cpu=1, node_name="n1"),
            podgroup("big", queue="test1"),
            pod("big-0", "big", cpu=3, node_name="n1", phase="Pending"),
            podgroup("new", queue="test2"),
            pod("new-0", "new", cpu=3),
        ],
    ),
    Case(
        "jobs of the reclaimer's own queue are not reclaimed",
        [
            node("n1", cpu=4),
            queue("test1", 1),
            podgroup("old", queue="test1"),
            pod("old-0", "old", cpu=4, node_name="n1"),
            podgroup("new", queue="test1"),
            pod("new-0", "new", cpu=2),
        ],
    ),
    Case(
        "a gang that cannot be pipelined as a whole evicts nothing",
        [
            *seed_003_a()[:-2],
            podgroup("new", queue="test2", min_member=2),
            pod("new-0", "new", cpu=3),
            pod("new-1", "new", cpu=3),
        ],
    ),
    Case(
        "victims of different queues: the queue furthest over its share goes first",
        [
            node("n1", cpu=9),
            queue("q2", 1),
            queue("q1", 1),
            queue("q3", 6),
            podgroup("b", queue="q2"),
            pod("b-0", "b", cpu=4, node_name="n1"),
            podgroup("a", queue="q1"),
            pod("a-0", "a", cpu=5, node_name="n1"),
            podgroup("new", queue="q3"),
            pod("new-0", "new", cpu=2),
        ],
        # deserved: q1 = q2 = 3.5 cpu, so q1 (5 allocated) is further over than q2 (4 allocated)
        evictions={"default/a-0"},
        pipelined={"default/new-0": "n1"},
    ),
    Case(
        "a Pending PodGroup does not reclaim",
        [*seed_003_a()[:-2], podgroup("new", queue="test2", phase="Pending"), pod("new-0", "new", cpu=3)],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reclaim(case: Case) -> None:
    result = run(case.objects, conf("reclaim", *TIERS))
    assert set(result.evictions) == case.evictions
    assert result.pipelined == case.pipelined
    assert result.binds == {}
    for plan in result.plans:
        assert all(eviction_cause(e.reason) == "reclaim" for e in plan.evictions)
