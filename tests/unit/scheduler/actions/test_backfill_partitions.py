"""backfill for partitioned jobs: a partition's BestEffort pods go together inside one HyperNode of its
tier, or stay pending and say why. Racks rack-a (n1 n2) and rack-b (n3 n4) of one-pod nodes under a
spine; n1 is taken, so rack-a has room for one pod only."""

from __future__ import annotations

from dataclasses import replace

from support.builders import conf, hypernode, node, pod, podgroup, run

from contracts.objects import NetworkTopologySpec, SubGroupPolicy

PARTITION = "volcano.sh/partition-id"
RACK_OF = {"n1": "rack-a", "n2": "rack-a", "n3": "rack-b", "n4": "rack-b"}
TOPOLOGY = [
    *(node(n, pods=1) for n in RACK_OF),
    hypernode("rack-a", 1, nodes=["n1", "n2"]),
    hypernode("rack-b", 1, nodes=["n3", "n4"]),
    hypernode("spine", 2, hypernodes=["rack-a", "rack-b"]),
    podgroup("busy", phase="Running"),
    pod("busy-0", "busy", node_name="n1"),
]
TIERS = (["priority", "gang", "conformance"], ["predicates", "network-topology-aware"])


def best_effort_job(partitions: int, size: int = 2, tier: int = 1) -> list:
    group = replace(
        podgroup("p", min_member=partitions * size),
        sub_group_policy=(
            SubGroupPolicy("w", NetworkTopologySpec("hard", tier), size, partitions, None, (PARTITION,)),
        ),
    )
    pods = [
        pod(f"p-{i}", "p", cpu=None, memory=None, labels={PARTITION: str(i // size)})
        for i in range(partitions * size)
    ]
    return [group, *pods]


def test_a_partition_of_best_effort_pods_lands_in_one_rack() -> None:
    result = run([*TOPOLOGY, *best_effort_job(1)], conf("backfill", *TIERS))
    assert {RACK_OF[n] for n in result.binds.values()} == {"rack-b"}
    assert len(result.binds) == 2


def test_a_partition_no_rack_holds_waits_and_says_why() -> None:
    """Two partitions of two: rack-b holds one, rack-a (one slot left) none; pending BestEffort pods
    count as ready, so the job runs with one and says why the other waits."""
    result = run([*TOPOLOGY, *best_effort_job(2)], conf("backfill", *TIERS))
    assert {RACK_OF[n] for n in result.binds.values()} == {"rack-b"}
    assert len(result.binds) == 2
    message = " ".join(c.message for c in result.podgroups["default/p"].conditions)
    assert "partitions placed: w-0 in rack-b" in message
    assert "waiting: partition w-1: 2 best-effort pod(s) fit in no single HyperNode of tier <= 1" in message
