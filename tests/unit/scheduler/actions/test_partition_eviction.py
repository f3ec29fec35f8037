"""Preempt and reclaim for partitioned jobs (a PodGroup with a subGroupPolicy, a Job's partitionPolicy):
victims are chosen so that every partition the job needs fits whole inside one HyperNode of its tier,
the cheapest such HyperNode per partition; the job's minPartitions and nothing more; one plan or nothing.
Table-driven, one rule a case, on three racks of two 2-cpu nodes (rack-a: n1 n2, rack-b: n3 n4, rack-c:
n5 n6) under one spine (tier 2); a partitioned pod takes a whole node."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.builders import conf, pod, podgroup, queue, res, run
from support.rack_eviction import CLASSES, HARD_1, TIERS, Case, condition, racks, running

from contracts.objects import NetworkTopologySpec, SubGroupPolicy

RACKS = {"rack-a": ("n1", "n2"), "rack-b": ("n3", "n4"), "rack-c": ("n5", "n6")}
RACK_OF = {n: rack for rack, members in RACKS.items() for n in members}
TOPOLOGY = racks(RACKS)
PARTITION = "volcano.sh/partition-id"


def partitioned(
    partitions: int = 1,
    size: int = 2,
    minimum: int | None = None,
    *,
    tier: NetworkTopologySpec | None = HARD_1,
    job_topology: NetworkTopologySpec | None = None,
    queue_name: str = "default",
    placed: dict[int, str] | None = None,
) -> list:
    """Job `p`: `partitions` x `size` pods of 2 cpu (pod i in partition i // size), needing `minimum`
    whole partitions (all by default)."""
    need = partitions if minimum is None else minimum
    group = replace(
        podgroup(
            "p",
            priority_class="high",
            min_member=need * size,
            queue=queue_name,
            network_topology=job_topology,
            min_resources=res(cpu=2 * need * size),
        ),
        sub_group_policy=(SubGroupPolicy("w", tier, size, need, None, (PARTITION,)),),
    )
    pods = [
        pod(
            f"p-{i}",
            "p",
            cpu=2,
            priority_class="high",
            labels={PARTITION: str(i // size)},
            node_name=(placed or {}).get(i, ""),
        )
        for i in range(partitions * size)
    ]
    return [group, *pods]


CASES = [
    Case(
        "a partition's victims in one rack, not the two cheapest pods across racks",
        [
            *running("low-1", "low", "n1"),
            *running("mid-2", "mid", "n2"),
            *running("mid-3", "mid", "n3"),
            *running("low-4", "low", "n4"),
            *running("mid-5", "mid", "n5"),
            *running("mid-6", "mid", "n6"),
            *partitioned(),
        ],
        {"default/low-1-0", "default/mid-2-0"},
        {"default/p-0": "n1", "default/p-1": "n2"},
        condition="for partition(s) w-0 in rack-a to reserve room for",
    ),
    Case(
        "the rack whose victims cost least wins for each partition",
        [
            *running("mid-1", "mid", "n1"),
            *running("mid-2", "mid", "n2"),
            *running("low-3", "low", "n3"),
            *running("low-4", "low", "n4"),
            *running("low-5", "low", "n5"),
            *running("mid-6", "mid", "n6"),
            *partitioned(2),
        ],
        {"default/low-3-0", "default/low-4-0", "default/low-5-0", "default/mid-6-0"},
        {"default/p-0": "n3", "default/p-1": "n4", "default/p-2": "n5", "default/p-3": "n6"},
        condition="for partition(s) w-0 in rack-b, w-1 in rack-c",
    ),
    Case(
        "only the minPartitions the job needs make room",
        [*(p for n in RACK_OF for p in running(f"low-{n}", "low", n)), *partitioned(3, minimum=2)],
        {"default/low-n1-0", "default/low-n2-0", "default/low-n3-0", "default/low-n4-0"},
        {"default/p-0": "n1", "default/p-1": "n2", "default/p-2": "n3", "default/p-3": "n4"},
    ),
    Case(
        "no rack holds a partition after evictions: nothing is evicted",
        [
            *running("low-1", "low", "n1"),
            *running("sys-2", "high", "n2"),
            *running("low-3", "low", "n3"),
            *running("sys-4", "high", "n4"),
            *running("low-5", "low", "n5"),
            *running("sys-6", "high", "n6"),
            *partitioned(),
        ],
        condition="partition w-0: no HyperNode of tier <= 1 would hold its 2 pod(s) after evictions"
        " (tried rack-a, rack-b, rack-c)",
    ),
    Case(
        "fewer partitions than minPartitions have room: nothing is evicted",
        [
            *running("low-1", "low", "n1"),
            *running("low-2", "low", "n2"),
            *running("low-3", "low", "n3"),
            *running("low-4", "low", "n4"),
            *running("sys-5", "high", "n5"),
            *running("low-6", "low", "n6"),
            *partitioned(3),
        ],
        condition="2 partition(s) would have room but not the whole job",
    ),
    Case(
        "a partition already running in a rack makes room only in that rack, not on a free node elsewhere",
        [*running("low-4", "low", "n4"), *partitioned(placed={0: "n3"})],
        {"default/low-4-0"},
        {"default/p-1": "n4"},
    ),
    Case(
        "a partition of tier 2 that no rack can hold takes its victims across racks of the spine",
        [
            *running("low-1", "low", "n1"),
            *running("sys-2", "high", "n2"),
            *running("sys-3", "high", "n3"),
            *running("low-4", "low", "n4"),
            *running("sys-5", "high", "n5"),
            *running("sys-6", "high", "n6"),
            *partitioned(tier=NetworkTopologySpec(mode="hard", highest_tier_allowed=2)),
        ],
        {"default/low-1-0", "default/low-4-0"},
        condition="w-0 in spine",
    ),
    Case(
        "a job of soft topology with hard partitions still preempts, each partition in one rack",
        [
            *running("low-1", "low", "n1"),
            *running("mid-2", "mid", "n2"),
            *running("mid-3", "mid", "n3"),
            *running("low-4", "low", "n4"),
            *running("sys-5", "high", "n5"),
            *running("sys-6", "high", "n6"),
            *partitioned(job_topology=NetworkTopologySpec(mode="soft")),
        ],
        {"default/low-1-0", "default/mid-2-0"},
        {"default/p-0": "n1", "default/p-1": "n2"},
    ),
    Case(
        "the job's hard tier bounds its partitions: its narrowest HyperNode with room is the job's domain",
        [
            *running("low-1", "low", "n1"),
            *running("low-2", "low", "n2"),
            *(p for n in ("n3", "n4", "n5", "n6") for p in running(f"sys-{n}", "high", n)),
            *partitioned(job_topology=NetworkTopologySpec(mode="hard", highest_tier_allowed=2)),
        ],
        {"default/low-1-0", "default/low-2-0"},
        condition="for partition(s) w-0 in rack-a inside HyperNode rack-a (tier 1)",
    ),
    Case(
        "pods in their cool-down are no victims: the partition takes the other rack",
        [
            podgroup("cool", priority_class="low", phase="Running"),
            pod(
                "cool-0",
                "cool",
                cpu=2,
                node_name="n1",
                priority_class="low",
                labels={"volcano.sh/cooldown-time": "600s"},
                started=0.0,
            ),
            *running("low-2", "low", "n2"),
            *running("mid-3", "mid", "n3"),
            *running("mid-4", "mid", "n4"),
            *running("sys-5", "high", "n5"),
            *running("sys-6", "high", "n6"),
            *partitioned(),
        ],
        {"default/mid-3-0", "default/mid-4-0"},
        {"default/p-0": "n3", "default/p-1": "n4"},
    ),
    Case(
        "reclaim: a partition's victims of other queues in one rack",
        [
            queue("mine", 10, deserved=res(cpu=12)),
            queue("theirs"),
            queue("kept", 10, reclaimable=False),
            *running("k-1", "low", "n1", "kept"),
            *running("t-2", "low", "n2", "theirs"),
            *running("t-3", "low", "n3", "theirs"),
            *running("t-4", "low", "n4", "theirs"),
            *running("t-5", "low", "n5", "theirs"),
            *running("t-6", "low", "n6", "theirs"),
            *partitioned(queue_name="mine"),
        ],
        {"default/t-3-0", "default/t-4-0"},
        {"default/p-0": "n3", "default/p-1": "n4"},
        action="reclaim",
        condition="reclaim: evicting 2 pod(s) (default/t-3-0, default/t-4-0) for partition(s) w-0 in rack-b",
    ),
    Case(
        "reclaim: victims that only free room across racks are left alone (two of them may go)",
        [
            queue("mine", 10, deserved=res(cpu=12)),
            queue("theirs"),
            queue("kept", 10, reclaimable=False),
            *running("k-1", "low", "n1", "kept"),
            *running("t-2", "low", "n2", "theirs"),
            *running("t-3", "low", "n3", "theirs"),
            *running("k-4", "low", "n4", "kept"),
            *running("t-5", "low", "n5", "theirs"),
            *running("k-6", "low", "n6", "kept"),
            *partitioned(queue_name="mine"),
        ],
        action="reclaim",
        condition="partition w-0: no HyperNode of tier <= 1 would hold its 2 pod(s) after evictions",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_partition_eviction(case: Case) -> None:
    result = run([*CLASSES, *TOPOLOGY, *case.objects], conf(case.action, *TIERS), now=60.0)
    assert set(result.evictions) == case.evictions
    if case.pipelined:
        assert result.pipelined == case.pipelined
    assert len(result.plans) == (1 if case.evictions else 0)  # one plan: evictions and reservations
    kind = "Preempting" if case.action == "preempt" else "Reclaiming"
    if case.condition:
        assert case.condition in condition(result, "default/p", kind)
    if not case.evictions:
        assert "nothing evicted" in condition(result, "default/p", kind)


@pytest.mark.parametrize("case", [c for c in CASES if c.pipelined], ids=lambda c: c.name)
def test_every_partition_reserved_inside_one_rack(case: Case) -> None:
    result = run([*CLASSES, *TOPOLOGY, *case.objects], conf(case.action, *TIERS), now=60.0)
    racks: dict[int, set[str]] = {}
    placed = {**result.pipelined, **{f"default/{k}": v for k, v in _running(case.objects).items()}}
    for pod_key, node_name in placed.items():
        index = int(pod_key.rsplit("-", 1)[1])
        racks.setdefault(index // 2, set()).add(RACK_OF[node_name])
    assert racks and all(len(found) == 1 for found in racks.values())


def _running(objects: list[Any]) -> dict[str, str]:
    return {
        o.meta.name: o.spec.node_name
        for o in objects
        if getattr(o, "spec", None) is not None and o.meta.name.startswith("p-") and o.spec.node_name
    }


CONTRASTS = [
    c
    for c in CASES
    if c.name.startswith(("a partition's victims in one rack", "reclaim: victims that only free room"))
]


@pytest.mark.parametrize("case", CONTRASTS, ids=[c.name for c in CONTRASTS])
def test_without_its_partitions_the_same_job_evicts_across_racks(case: Case) -> None:
    """The cases' point: the pods of the same job without its subGroupPolicy (one plain gang) would take
    the cheapest victims wherever they are, splitting the partition over two racks."""
    plain = [
        replace(o, sub_group_policy=()) if getattr(o, "sub_group_policy", ()) else o for o in case.objects
    ]
    result = run([*CLASSES, *TOPOLOGY, *plain], conf(case.action, *TIERS), now=60.0)
    assert len({RACK_OF[node_name] for node_name in result.pipelined.values()}) == 2
