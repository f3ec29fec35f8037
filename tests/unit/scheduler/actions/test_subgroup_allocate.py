"""allocate for PodGroups with sub-groups (a Job's partitions): a gang of sub-gangs, each within one
HyperNode of its tier. The first table replays Volcano's TestAllocateWithPartitionPolicyNetworkTopology
cases on its layout: nodes of 2 cpu / 4Gi, pods of 2 cpu (one per node), racks s0 = {s0-n1, s0-n2} and
s1 = {s1-n3, s1-n4} at tier 1 under s2 at tier 2."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.builders import conf, hypernode, node, pod, podgroup, queue, run, session

from contracts.objects import LabelSelector, NetworkTopologySpec, SubGroupPolicy, frozen_map

TOPOLOGY = conf("allocate", ["gang"], ["predicates", "network-topology-aware"])
SPEC = "volcano.sh/task-spec"
INSTANCE = "volcano.sh/task-instance"
PARTITION = "volcano.sh/partition-id"
RACK = {"s0-n1": "s0", "s0-n2": "s0", "s1-n3": "s1", "s1-n4": "s1", "s2-n5": "s2"}


def topology_spec(mode: str, tier: int | None) -> NetworkTopologySpec | None:
    return NetworkTopologySpec(mode, tier) if mode else None


def policy(name: str, key: str, mode: str = "hard", tier: int = 1, size: int = 1, minimum: int = 0):
    return SubGroupPolicy(name, topology_spec(mode, tier), size, minimum, None, (key,))


def volcano_layout(nodes: tuple[str, ...] = ("s0-n1", "s0-n2", "s1-n3", "s1-n4")) -> list:
    racks = {"s0": [n for n in nodes if n.startswith("s0")], "s1": [n for n in nodes if n.startswith("s1")]}
    return [
        queue("default"),
        *[node(n, cpu=2, memory="4Gi") for n in nodes],
        *[hypernode(name, 1, members) for name, members in racks.items()],
        hypernode("s2", 2, hypernodes=list(racks)),
    ]


def job(min_member: int, mode: str, tier: int | None, policies, pods: list[tuple[str, str, str]]) -> list:
    """pods: (name, label key, label value)."""
    pg = replace(
        podgroup("pg1", min_member=min_member, network_topology=topology_spec(mode, tier)),
        sub_group_policy=tuple(policies),
    )
    return [pg, *[pod(n, "pg1", cpu=2, memory="4Gi", labels={k: v}) for n, k, v in pods]]


MASTER = ("p1", SPEC, "master")
WORKERS = [("p2", SPEC, "worker"), ("p3", SPEC, "worker")]


# (name, objects, binds expected by Volcano's test)
VOLCANO_CASES = [
    (
        "job hard tier 2, sub-groups soft: enough room",
        job(3, "hard", 2, [policy("task1", SPEC, "soft", 0)], [MASTER, *WORKERS]),
        3,
    ),
    (
        "job hard tier 2, sub-groups soft: minAvailable < replicas",
        job(1, "hard", 1, [policy("task1", SPEC, "soft", 0)], [MASTER, ("p2", SPEC, "worker")]),
        2,
    ),
    (
        "job soft, sub-groups hard tier 1 of sizes 2 and 1",
        job(
            3,
            "soft",
            None,
            [policy("task1", SPEC, size=2), policy("task2", INSTANCE)],
            [("p1", SPEC, "master"), ("p2", SPEC, "master"), ("p3", INSTANCE, "worker")],
        ),
        3,
    ),
    (
        "job soft, sub-groups hard tier 1: a sub-group cannot cross its tier",
        job(3, "soft", None, [policy("task1", SPEC)], [MASTER, *WORKERS, ("p4", SPEC, "worker")]),
        0,
    ),
    (
        "job hard tier 2, sub-groups hard tier 1: highest tier not reached",
        job(3, "hard", 2, [policy("task1", SPEC)], [MASTER, *WORKERS]),
        3,
    ),
    (
        "job hard tier 2, sub-groups hard tier 1 of sizes 1 and 2",
        job(
            3,
            "hard",
            2,
            [policy("task1", SPEC), policy("task2", INSTANCE, size=2)],
            [MASTER, ("p2", INSTANCE, "worker"), ("p3", INSTANCE, "worker")],
        ),
        3,
    ),
    (
        "job hard tier 2, sub-groups hard tier 1: several HyperNodes available",
        job(2, "hard", 2, [policy("task1", SPEC)], [MASTER, ("p2", SPEC, "worker")]),
        2,
    ),
    (
        "job hard tier 2, minMember 5 cannot be met by 4 nodes",
        job(
            5,
            "hard",
            2,
            [policy("task1", SPEC, minimum=1), policy("task2", INSTANCE, size=2, minimum=1)],
            [
                MASTER,
                ("p2", INSTANCE, "worker"),
                ("p3", INSTANCE, "worker"),
                ("p4", INSTANCE, "worker2"),
                ("p5", INSTANCE, "worker2"),
            ],
        ),
        0,
    ),
    (
        "job hard tier 2, minSubGroups 2 of size 2 next to a master cannot be met by 4 nodes",
        job(
            3,
            "hard",
            2,
            [policy("task1", SPEC, minimum=1), policy("task2", INSTANCE, size=2, minimum=2)],
            [
                MASTER,
                ("p2", INSTANCE, "worker"),
                ("p3", INSTANCE, "worker"),
                ("p4", INSTANCE, "worker2"),
                ("p5", INSTANCE, "worker2"),
            ],
        ),
        0,
    ),
    (
        "job hard tier 2, minSubGroups met by the room there is",
        job(
            3,
            "hard",
            2,
            [policy("task1", SPEC, minimum=2), policy("task2", INSTANCE, size=2, minimum=1)],
            [
                ("p1", SPEC, "master"),
                ("p2", SPEC, "master2"),
                ("p3", SPEC, "master3"),
                ("p4", SPEC, "master4"),
                ("p5", INSTANCE, "worker"),
                ("p6", INSTANCE, "worker"),
                ("p7", INSTANCE, "worker2"),
                ("p8", INSTANCE, "worker2"),
            ],
        ),
        4,
    ),
]


@pytest.mark.parametrize(("name", "objects", "binds"), VOLCANO_CASES, ids=[c[0] for c in VOLCANO_CASES])
def test_volcano_partition_cases(name, objects, binds):
    layout = volcano_layout(("s0-n1", "s0-n2", "s1-n3")) if "sizes 2 and 1" in name else volcano_layout()
    result = run([*layout, *objects], TOPOLOGY)
    assert len(result.binds) == binds, result.podgroups["default/pg1"].conditions


# --- partitions as the job-controller labels them ---------------------------------------------------------
# racks r1..r3 of two 2-cpu nodes each (tier 1) under spine s (tier 2); 1-cpu pods: a rack holds 4
RACKS = {"r1": ("n1", "n2"), "r2": ("n3", "n4"), "r3": ("n5", "n6")}
RACK_OF = {n: rack for rack, members in RACKS.items() for n in members}


def racks_cluster(busy: dict[str, int] | None = None) -> list:
    """`busy`: node -> cpus a running pod of another job already holds there."""
    objects = [
        queue("default"),
        *[node(f"n{i}", cpu=2, memory="8Gi") for i in range(1, 7)],
        *[hypernode(name, 1, members) for name, members in RACKS.items()],
        hypernode("s", 2, hypernodes=list(RACKS)),
    ]
    for i, (name, cpus) in enumerate((busy or {}).items()):
        objects.append(pod(f"busy-{i}", node_name=name, cpu=cpus, memory=None))
    return objects


def partitioned(
    partitions: int,
    size: int,
    *,
    minimum: int = 0,
    mode: str = "hard",
    tier: int | None = 1,
    tier_name: str = "",
    job_topology: NetworkTopologySpec | None = None,
) -> list:
    """A job of one task `w` split into `partitions` partitions of `size` 1-cpu pods, as expanded by the
    job-controller (labels and subGroupPolicy)."""
    spec = NetworkTopologySpec(mode, tier, tier_name) if mode else None
    rule = SubGroupPolicy("w", spec, size, minimum, LabelSelector(frozen_map({SPEC: "w"})), (PARTITION,))
    total = partitions * size
    pg = replace(
        podgroup("j", min_member=(minimum or partitions) * size, network_topology=job_topology),
        sub_group_policy=(rule,),
    )
    pods = [
        pod(f"j-w-{i}", "j", role="w", memory=None, labels={SPEC: "w", PARTITION: str(i // size)})
        for i in range(total)
    ]
    return [pg, *pods]


def racks_of_partitions(binds: dict[str, str], size: int) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for key, node_name in binds.items():
        index = int(key.rsplit("-", 1)[1])
        out.setdefault(index // size, set()).add(RACK_OF[node_name])
    return out


@pytest.mark.parametrize(
    ("partitions", "size", "busy", "placed"),
    [
        (3, 2, None, 3),  # 3 partitions of 2: each within one rack
        (3, 4, None, 3),  # a partition fills a rack
        (2, 3, None, 2),  # 3 pods per partition: one rack each, never split
        # every rack keeps 3 free cpus, spread over its 2 nodes: a partition of 3 still fits each
        (3, 3, {"n1": 1, "n3": 1, "n5": 1}, 3),
    ],
)
def test_each_partition_lands_in_one_rack(partitions, size, busy, placed):
    for seed in range(3):
        result = run([*racks_cluster(busy), *partitioned(partitions, size)], TOPOLOGY, seed=seed)
        by_partition = racks_of_partitions(result.binds, size)
        assert all(len(racks) == 1 for racks in by_partition.values())
        if placed:
            assert len(by_partition) == placed and len(result.binds) == placed * size


def test_partitions_that_fit_only_across_racks_wait_and_say_which():
    # every rack keeps 3 free cpus; partitions of 4 fit the cluster (9 cpus) but no rack
    busy = {"n1": 1, "n3": 1, "n5": 1}
    result = run([*racks_cluster(busy), *partitioned(2, 4)], TOPOLOGY)
    assert result.binds == {}
    message = next(c.message for c in result.podgroups["default/j"].conditions if c.type == "Unschedulable")
    assert "partition w-0: 4 pod(s) fit in no single HyperNode of tier <= 1 in the cluster" in message


def test_soft_partitions_prefer_one_rack_and_fall_back_to_the_spine():
    busy = {"n1": 1, "n3": 1, "n5": 1}
    result = run([*racks_cluster(busy), *partitioned(2, 4, mode="soft")], TOPOLOGY)
    assert len(result.binds) == 8  # no rack holds 4: soft partitions spread over the spine
    fits = run([*racks_cluster(), *partitioned(2, 4, mode="soft")], TOPOLOGY)
    assert all(len(r) == 1 for r in racks_of_partitions(fits.binds, 4).values())


def test_min_partitions_places_the_partitions_that_fit():
    # room for 2 partitions of 4 (racks r1, r2); the third rack is full: minPartitions 2 runs the job
    busy = {"n5": 2, "n6": 2}
    result = run([*racks_cluster(busy), *partitioned(3, 4, minimum=2)], TOPOLOGY)
    by_partition = racks_of_partitions(result.binds, 4)
    assert len(by_partition) == 2 and all(len(r) == 1 for r in by_partition.values())
    assert len({next(iter(r)) for r in by_partition.values()}) == 2
    scheduled = next(c for c in result.podgroups["default/j"].conditions if c.type == "Scheduled")
    assert scheduled.message.startswith("partitions placed: ")


def test_min_partitions_not_met_places_nothing():
    busy = {"n3": 2, "n4": 2, "n5": 2, "n6": 2}
    result = run([*racks_cluster(busy), *partitioned(3, 4, minimum=2)], TOPOLOGY)
    assert result.binds == {}
    message = next(c.message for c in result.podgroups["default/j"].conditions if c.type == "Unschedulable")
    assert "partition w-1: 4 pod(s) fit in no single HyperNode of tier <= 1 in the cluster" in message
    assert "0 of the 2 partitions of w it needs are placed" in message


def test_job_topology_bounds_all_partitions():
    # the job must stay inside one rack: two partitions of 2 share it
    job_spec = NetworkTopologySpec("hard", 1)
    result = run([*racks_cluster(), *partitioned(2, 2, job_topology=job_spec)], TOPOLOGY)
    assert len(result.binds) == 4 and len({RACK_OF[n] for n in result.binds.values()}) == 1
    # three partitions of 2 cannot share one rack of 4 cpus
    assert run([*racks_cluster(), *partitioned(3, 2, job_topology=job_spec)], TOPOLOGY).binds == {}


def test_partition_tier_by_name():
    cluster = [
        replace(o, tier_name="rack") if getattr(o, "kind", "") == "HyperNode" and o.tier == 1 else o
        for o in racks_cluster()
    ]
    result = run([*cluster, *partitioned(3, 2, tier=None, tier_name="rack")], TOPOLOGY)
    assert len(result.binds) == 6
    assert all(len(r) == 1 for r in racks_of_partitions(result.binds, 2).values())
    unknown = run([*cluster, *partitioned(3, 2, tier=None, tier_name="pod")], TOPOLOGY)
    assert unknown.binds == {}
    message = next(c.message for c in unknown.podgroups["default/j"].conditions if c.type == "Unschedulable")
    assert "no HyperNode has tier name 'pod'" in message


def test_jobs_without_partitions_build_no_sub_groups():
    ssn = session(
        [*racks_cluster(), podgroup("plain", min_member=2), pod("a", "plain"), pod("b", "plain")], TOPOLOGY
    )
    ssn.run()
    assert ssn.jobs["default/plain"].sub_groups is None


# --- mixed-depth trees ----------------------------------------------------------------------------------
# root t3 (tier 3) holds spine t2 (tier 2, over racks a and b of tier 1) and rack c (tier 1) directly; and
# spine d (tier 2) holds nodes directly, with no rack under it
def mixed_cluster() -> list:
    names = ["a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"]
    return [
        queue("default"),
        *[node(n, cpu=2, memory="8Gi") for n in names],
        hypernode("a", 1, ["a1", "a2"]),
        hypernode("b", 1, ["b1", "b2"]),
        hypernode("c", 1, ["c1", "c2"]),
        hypernode("t2", 2, hypernodes=["a", "b"]),
        hypernode("d", 2, ["d1", "d2"]),
        hypernode("t3", 3, hypernodes=["t2", "c", "d"]),
    ]


def test_mixed_depth_partitions_each_in_one_domain():
    result = run([*mixed_cluster(), *partitioned(4, 4, tier=2)], TOPOLOGY)
    assert len(result.binds) == 16
    domain = {"a": "t2", "b": "t2", "c": "c", "d": "d"}
    for index in range(4):
        nodes = {n for k, n in result.binds.items() if int(k.rsplit("-", 1)[1]) // 4 == index}
        assert len({domain[n[0]] for n in nodes}) == 1


def test_mixed_depth_tier_1_partitions_skip_the_rackless_spine():
    # racks a, b, c hold one partition of 4 each; d has no tier-1 HyperNode, so a 4th partition waits
    result = run([*mixed_cluster(), *partitioned(4, 4, tier=1, minimum=3)], TOPOLOGY)
    assert len(result.binds) == 12
    assert not any(n.startswith("d") for n in result.binds.values())


def test_mixed_depth_job_level_topology():
    # a whole job of 4 pods, hard at tier 2: the rackless spine d or a tier-2 spine both qualify
    pg = podgroup("k", min_member=4, network_topology=NetworkTopologySpec("hard", 2))
    pods = [pod(f"k-{i}", "k", memory=None) for i in range(4)]
    busy = [pod(f"x-{n}", node_name=n, cpu=2, memory=None) for n in ("a1", "a2", "b1", "b2", "c1", "c2")]
    result = run([*mixed_cluster(), *busy, pg, *pods], TOPOLOGY)
    assert sorted(result.binds.values()) == ["d1", "d1", "d2", "d2"]
    assert result.podgroups["default/k"].allocated_hypernode == "d"
