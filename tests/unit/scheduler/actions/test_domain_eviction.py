"""Gang-aware eviction in hard network-topology mode (Volcano 1.15): preempt and reclaim choose a hard
job's victims inside one HyperNode of its allowed tier where the whole gang then fits, the cheapest such
HyperNode; never across HyperNodes; nothing when no HyperNode can hold the gang. Table-driven, one rule a
case, on two racks of two 2-cpu nodes (rack-a: n1 n2, rack-b: n3 n4) under one spine (tier 2)."""

from __future__ import annotations

import pytest
from support.builders import conf, pod, podgroup, queue, res, run
from support.rack_eviction import CLASSES, HARD_1, TIERS, Case, condition, racks, running

from contracts.objects import NetworkTopologySpec

TOPOLOGY = racks({"rack-a": ("n1", "n2"), "rack-b": ("n3", "n4")})


def gang(
    name: str = "g",
    replicas: int = 2,
    *,
    topology: NetworkTopologySpec | None = HARD_1,
    min_member: int | None = None,
    queue_name: str = "default",
    placed: dict[int, str] | None = None,
) -> list:
    pods = [
        pod(f"{name}-{i}", name, cpu=2, priority_class="high", node_name=(placed or {}).get(i, ""))
        for i in range(replicas)
    ]
    group = podgroup(
        name,
        priority_class="high",
        min_member=replicas if min_member is None else min_member,
        queue=queue_name,
        network_topology=topology,
        min_resources=res(cpu=2 * (replicas if min_member is None else min_member)),
    )
    return [group, *pods]


# low-1 and low-3 (the cheapest victims) sit in different racks; mid-2 and mid-4 beside them
SPLIT = [
    *running("low-1", "low", "n1"),
    *running("mid-2", "mid", "n2"),
    *running("low-3", "low", "n3"),
    *running("mid-4", "mid", "n4"),
]


CASES = [
    Case(
        "victims in one rack, never the two cheapest across racks",
        [*SPLIT, *gang()],
        {"default/low-1-0", "default/mid-2-0"},
        {"default/g-0": "n1", "default/g-1": "n2"},
        condition="inside HyperNode rack-a (tier 1)",
    ),
    Case(
        "the rack whose victims cost least wins",
        [
            *running("mid-1", "mid", "n1"),
            *running("mid-2", "mid", "n2"),
            *running("low-3", "low", "n3"),
            *running("low-4", "low", "n4"),
            *gang(),
        ],
        {"default/low-3-0", "default/low-4-0"},
        {"default/g-0": "n3", "default/g-1": "n4"},
        condition="inside HyperNode rack-b",
    ),
    Case(
        "a wider allowed tier lets the victims spread: the cheapest two across racks",
        [*SPLIT, *gang(topology=NetworkTopologySpec(mode="hard", highest_tier_allowed=2))],
        {"default/low-1-0", "default/low-3-0"},
        condition="inside HyperNode spine (tier 2)",
    ),
    Case(
        "a hard job naming no tier has the whole cluster as its domain",
        [*SPLIT, *gang(topology=NetworkTopologySpec(mode="hard"))],
        {"default/low-1-0", "default/low-3-0"},
    ),
    Case(
        "no rack can hold the gang after evictions: nothing is evicted",
        [
            *running("low-1", "low", "n1"),
            *running("sys-2", "high", "n2"),
            *running("low-3", "low", "n3"),
            *running("sys-4", "high", "n4"),
            *gang(),
        ],
        condition="would hold the whole gang after evictions (tried rack-a, rack-b)",
    ),
    Case(
        "a job already running in a rack makes room only in that rack",
        [
            *running("low-1", "low", "n1"),
            *running("low-2", "low", "n2"),
            *running("mid-4", "mid", "n4"),
            *gang(replicas=2, min_member=2, placed={0: "n3"}),
        ],
        {"default/mid-4-0"},
        {"default/g-1": "n4"},
    ),
    Case(
        "a gang larger than every rack: no domain, nothing evicted",
        [*SPLIT, *gang(replicas=3)],
        condition="no HyperNode of tier <= 1 holds the nodes the job runs on and its minResources",
    ),
    Case(
        "soft mode: preempt leaves the job alone, as Volcano's does",
        [*SPLIT, *gang(topology=NetworkTopologySpec(mode="soft"))],
    ),
    Case(
        "reclaim: victims of other queues in one rack",
        [
            queue("mine", deserved=res(cpu=8)),
            queue("theirs"),
            *running("t-1", "low", "n1", "theirs"),
            *running("t-2", "low", "n2", "theirs"),
            *running("t-3", "low", "n3", "theirs"),
            *running("t-4", "low", "n4", "theirs"),
            *gang(queue_name="mine"),
        ],
        {"default/t-1-0", "default/t-2-0"},
        {"default/g-0": "n1", "default/g-1": "n2"},
        action="reclaim",
        condition="reclaim: evicting 2 pod(s) (default/t-1-0, default/t-2-0) inside HyperNode rack-a",
    ),
    Case(
        "reclaim: victims that only free room across racks are left alone",
        [
            queue("mine", deserved=res(cpu=8)),
            queue("theirs"),
            queue("kept", reclaimable=False),
            *running("t-1", "low", "n1", "theirs"),
            *running("k-2", "low", "n2", "kept"),
            *running("t-3", "low", "n3", "theirs"),
            *running("k-4", "low", "n4", "kept"),
            *gang(queue_name="mine"),
        ],
        action="reclaim",
        condition="no HyperNode of tier <= 1 would hold the whole gang",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_domain_eviction(case: Case) -> None:
    result = run([*CLASSES, *TOPOLOGY, *case.objects], conf(case.action, *TIERS))
    assert set(result.evictions) == case.evictions
    if case.pipelined:
        assert result.pipelined == case.pipelined
    assert len(result.plans) == (1 if case.evictions else 0)  # one plan: evictions and reservations
    if case.condition:
        kind = "Preempting" if case.action == "preempt" else "Reclaiming"
        assert case.condition in condition(result, "default/g", kind)
