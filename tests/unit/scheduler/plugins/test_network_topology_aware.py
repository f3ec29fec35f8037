"""network-topology-aware plugin on seed 002's layout: te1..te8, two per rack (tier 1), two racks per spine
(tier 2), one root s0 (tier 3); every node has 2 cpus, so a rack holds 4 one-cpu pods and a spine 8."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from support.builders import conf, hypernode, node, pod, podgroup, queue, run, session

from contracts.objects import NetworkTopologySpec
from contracts.resources import Resources
from services.scheduler.core.model.topology import CLUSTER_TOP

TOPOLOGY = conf("allocate", ["gang"], ["predicates", "network-topology-aware"])
RACKS = {
    "s0-s1-rack-1": ("te1", "te2"),
    "s0-s1-rack-2": ("te3", "te4"),
    "s0-s2-rack-3": ("te5", "te6"),
    "s0-s2-rack-4": ("te7", "te8"),
}
RACK_OF = {n: rack for rack, members in RACKS.items() for n in members}
SPINE_OF = {n: rack[:5] for n, rack in RACK_OF.items()}


def cluster(tier_names: bool = False) -> list:
    racks = [hypernode(name, 1, members) for name, members in RACKS.items()]
    spines = [
        hypernode("s0-s1", 2, hypernodes=["s0-s1-rack-1", "s0-s1-rack-2"]),
        hypernode("s0-s2", 2, hypernodes=["s0-s2-rack-3", "s0-s2-rack-4"]),
    ]
    root = [hypernode("s0", 3, hypernodes=["s0-s1", "s0-s2"])]
    if tier_names:
        racks = [replace(h, tier_name="rack") for h in racks]
        spines = [replace(h, tier_name="spine") for h in spines]
    nodes = [node(f"te{i}", cpu=2, memory="4Gi") for i in range(1, 9)]
    return [queue("default"), *nodes, *racks, *spines, *root]


def job(
    replicas: int,
    mode: str | None = "hard",
    tier: int | None = None,
    *,
    tier_name: str = "",
    min_member: int | None = None,
    annotations=None,
    **pod_kwargs,
) -> list:
    spec = NetworkTopologySpec(mode, tier, tier_name) if mode else None
    pg = podgroup(
        "j",
        min_member=replicas if min_member is None else min_member,
        network_topology=spec,
        annotations=annotations,
    )
    return [pg, *[pod(f"j-w-{i}", "j", **pod_kwargs) for i in range(replicas)]]


def cpus(count: int) -> Resources:
    return Resources.parse({"cpu": count})


def task_of(ssn, name: str, group: str = "j"):
    return ssn.jobs[f"default/{group}"].tasks[f"default-{name}"]


def _unschedulable(result) -> str:
    return next(c.message for c in result.podgroups["default/j"].conditions if c.type == "Unschedulable")


# --- whole sessions -----------------------------------------------------------------------------------------
def test_tier_1_job_fits_in_one_rack():
    for seed in range(3):
        result = run([*cluster(), *job(4, tier=1)], TOPOLOGY, seed=seed)
        assert len(result.binds) == 4
        assert len({RACK_OF[n] for n in result.binds.values()}) == 1
        assert result.podgroups["default/j"].allocated_hypernode in RACKS


def test_tier_1_job_larger_than_a_rack_stays_pending():
    result = run([*cluster(), *job(6, tier=1)], TOPOLOGY)
    assert result.binds == {}
    # (a job larger than every HyperNode of its tier is told the cluster lacks room: never-fits does not
    # look at topology)
    assert _unschedulable(result) == (
        "2/6 tasks in gang unschedulable: 2 nodes: insufficient cpu; cluster lacks cpu 2"
    )


@pytest.mark.parametrize("tier_name", ["", "spine"])
def test_tier_2_job_lands_in_one_spine(tier_name):
    tier = None if tier_name else 2
    for seed in range(3):
        result = run(
            [*cluster(tier_names=True), *job(6, tier=tier, tier_name=tier_name)], TOPOLOGY, seed=seed
        )
        assert len(result.binds) == 6
        assert len({SPINE_OF[n] for n in result.binds.values()}) == 1


def test_tier_2_job_skips_the_spine_without_room():
    # s0-s1 keeps 5 free cpus: only s0-s2 can take 6 pods
    busy = [pod("b1", node_name="te1", cpu=2, memory=None), pod("b2", node_name="te3", cpu=1, memory=None)]
    result = run([*cluster(), *busy, *job(6, tier=2)], TOPOLOGY)
    assert len(result.binds) == 6
    assert {SPINE_OF[n] for n in result.binds.values()} == {"s0-s2"}


def test_fullest_fitting_rack_wins():
    # rack-1 already holds a cpu: (1 + 2) / 4 beats (0 + 2) / 4 in the HyperNode binpack
    busy = [pod("b1", node_name="te2", cpu=1, memory=None)]
    for seed in range(3):
        result = run([*cluster(), *busy, *job(2, tier=1)], TOPOLOGY, seed=seed)
        assert set(result.binds.values()) <= {"te1", "te2"} and len(result.binds) == 2


def test_job_stays_in_its_allocated_hypernode():
    # the job already runs in rack-3 (recorded on the PodGroup): new pods may not leave it at tier 1
    annotations = {"volcano.sh/allocated-hypernode": "s0-s2-rack-3"}
    objects = [
        *cluster(),
        podgroup("j", min_member=1, annotations=annotations, network_topology=NetworkTopologySpec("hard", 1)),
        pod("j-w-0", "j", node_name="te5"),
        pod("j-w-1", "j"),
        pod("j-w-2", "j"),
    ]
    for seed in range(3):
        result = run(objects, TOPOLOGY, seed=seed)
        assert set(result.binds.values()) <= {"te5", "te6"} and len(result.binds) == 2


def test_soft_job_spreads_when_no_domain_fits():
    result = run([*cluster(), *job(10, mode="soft")], TOPOLOGY)
    assert len(result.binds) == 10
    assert {SPINE_OF[n] for n in result.binds.values()} == {"s0-s1", "s0-s2"}


def test_soft_job_stays_together_when_it_fits():
    for seed in range(3):
        result = run([*cluster(), *job(3, mode="soft")], TOPOLOGY, seed=seed)
        assert len(result.binds) == 3
        assert len({RACK_OF[n] for n in result.binds.values()}) == 1


def test_normal_pods_pack_into_the_fuller_hypernode():
    busy = [pod("b1", node_name="te3", cpu=1, memory=None)]
    for seed in range(3):
        result = run([*cluster(), *busy, pod("p")], TOPOLOGY, seed=seed)
        assert result.binds["default/p"] in {"te3", "te4"}


# --- extension points -------------------------------------------------------------------------------------
GRADIENT_CASES = [
    pytest.param(
        job(2, tier=2),
        [["s0-s1-rack-1", "s0-s1-rack-2", "s0-s2-rack-3", "s0-s2-rack-4"], ["s0-s1", "s0-s2"]],
        id="tier-2",
    ),
    pytest.param(
        job(2, mode="soft"),
        [
            ["s0-s1-rack-1", "s0-s1-rack-2", "s0-s2-rack-3", "s0-s2-rack-4"],
            ["s0-s1", "s0-s2"],
            ["s0"],
            [CLUSTER_TOP],
        ],
        id="soft-is-hard-up-to-the-cluster",
    ),
    pytest.param(job(2, tier=None), [[CLUSTER_TOP]], id="hard-without-tier-searches-the-cluster"),
    pytest.param(job(2, tier=None, tier_name="nope"), [[CLUSTER_TOP]], id="unknown-tier-name"),
    pytest.param(job(2, mode=None), None, id="no-topology-not-this-plugins-job"),
    pytest.param(
        # racks have 4 cpus: a minResources of 5 keeps only wider domains
        [replace(job(2, tier=2)[0], min_resources=cpus(5)), *job(2, tier=2)[1:]],
        [["s0-s1", "s0-s2"]],
        id="min-resources-filter",
    ),
    pytest.param(
        [replace(job(2, tier=2)[0], min_resources=cpus(9)), *job(2, tier=2)[1:]],
        [],
        id="nothing-fits",
    ),
    pytest.param(
        job(2, tier=2, annotations={"volcano.sh/allocated-hypernode": "s0-s2-rack-3"}),
        [["s0-s2-rack-3", "s0-s2-rack-4"], ["s0-s2"]],
        id="search-from-the-allocated-hypernode",
    ),
    pytest.param(
        job(2, tier=1, annotations={"volcano.sh/allocated-hypernode": "s0-s2"}),
        [],
        id="allocated-hypernode-above-the-allowed-tier",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), GRADIENT_CASES)
def test_gradients(objects, expected):
    ssn = session([*cluster(tier_names=True), *objects], TOPOLOGY)
    assert ssn.plugins["network-topology-aware"].hypernode_gradients(ssn, ssn.jobs["default/j"]) == expected


def test_gradients_see_placements_of_the_session():
    # minResources 3 cpus: a rack qualifies while it has 3 idle cpus; filling rack-1 in the session drops it
    objects = [
        *cluster(),
        replace(job(1, tier=1)[0], min_resources=cpus(3)),
        *job(1, tier=1)[1:],
        pod("filler"),
    ]
    ssn = session(objects, TOPOLOGY)
    plugin, j = ssn.plugins["network-topology-aware"], ssn.jobs["default/j"]
    assert plugin.hypernode_gradients(ssn, j) == [list(RACKS)]
    filler = next(iter(ssn.jobs["default/podgroup-default-filler"].tasks.values()))
    stmt = ssn.statement()
    stmt.allocate(filler, ssn.nodes.index["te1"])
    stmt.allocate(task_of(ssn, "j-w-0"), ssn.nodes.index["te2"])
    assert plugin.hypernode_gradients(ssn, j) == [list(RACKS)[1:]]
    stmt.discard()
    assert plugin.hypernode_gradients(ssn, j) == [list(RACKS)]


def test_hypernode_scores():
    # rack-1 holds one cpu of another pod; rack-2 one cpu of the job itself; rack-3 nothing
    objects = [
        *cluster(),
        pod("other", node_name="te1", cpu=1, memory=None),
        podgroup("j", min_member=1, network_topology=NetworkTopologySpec("hard", 1)),
        pod("j-w-0", "j", node_name="te3", cpu=1, memory=None),
        pod("j-w-1", "j"),
        pod("j-w-2", "j"),
    ]
    ssn = session(objects, TOPOLOGY)
    plugin, j = ssn.plugins["network-topology-aware"], ssn.jobs["default/j"]
    # pending request: 2 cpus, 2Gi. rack-1/rack-2: ((1+2)/4 + 2/8) / 2 = 0.5, rack-3: (2/4 + 2/8) / 2
    # rack-1 and rack-2 tie at the top: + tasks already inside / all tasks (0/3 and 1/3)
    scores = plugin.hypernode_order(ssn, j, ["s0-s1-rack-1", "s0-s1-rack-2", "s0-s2-rack-3"])
    assert scores == pytest.approx(
        {"s0-s1-rack-1": 50.0, "s0-s1-rack-2": 50.0 + 100 / 3, "s0-s2-rack-3": 37.5}
    )


def test_hypernode_the_pending_pods_overflow_scores_zero():
    objects = [
        *cluster(),
        pod("filler", node_name="te4", cpu=1, memory=None),
        podgroup("j", min_member=1, network_topology=NetworkTopologySpec("hard", 1)),
        pod("j-w-0", "j", node_name="te3", cpu=2, memory=None),
        pod("j-w-1", "j"),
        pod("j-w-2", "j"),
    ]
    ssn = session(objects, TOPOLOGY)
    plugin = ssn.plugins["network-topology-aware"]
    scores = plugin.hypernode_order(ssn, ssn.jobs["default/j"], ["s0-s1-rack-2", "s0-s2-rack-3"])
    assert scores == pytest.approx({"s0-s1-rack-2": 0.0, "s0-s2-rack-3": 37.5})


def test_topology_task_node_scores():
    annotations = {"volcano.sh/allocated-hypernode": "s0-s1-rack-1"}
    objects = [*cluster(), *job(2, tier=3, annotations=annotations)]
    ssn = session(
        objects, conf("allocate", ["gang"], [{"name": "network-topology-aware", "arguments": {"weight": 2}}])
    )
    plugin = ssn.plugins["network-topology-aware"]
    task = task_of(ssn, "j-w-0")
    index = ssn.nodes.index
    # tiers 1..4 (the cluster top counts): own rack 1, LCA spine (4-2)/3, LCA root (4-3)/3; x100 x2
    scores = plugin.node_order(ssn, task, np.array([index["te1"], index["te3"], index["te5"]]))
    assert scores.tolist() == pytest.approx([200.0, 400 / 3, 200 / 3])
    # te1 and te2 tie at the top: both get + tasks in rack-1 / all tasks, i.e. 1/2 once j-w-1 runs there
    stmt = ssn.statement()
    stmt.allocate(task_of(ssn, "j-w-1"), index["te1"])
    scores = plugin.node_order(ssn, task, np.array([index["te1"], index["te2"], index["te3"]]))
    assert scores.tolist() == pytest.approx([300.0, 300.0, 400 / 3])
    stmt.discard()
    no_domain = session([*cluster(), *job(2, tier=3)], TOPOLOGY)
    scores = no_domain.plugins["network-topology-aware"].node_order(
        no_domain, next(iter(no_domain.jobs["default/j"].tasks.values())), np.arange(8)
    )
    assert scores.tolist() == [0.0] * 8


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # weights fading^(tier-1) over tiers 1..4 = 1, .8, .64, .512; binpack per tier for te2 (rack-1 holds
        # a cpu): rack (2/4 + 1/8)/2, spine (2/8 + 1/16)/2, root and cluster top (2/16 + 1/32)/2
        pytest.param({}, {"te2": 52.75 / 2.952, "te3": 40.25 / 2.952}, id="fading"),
        pytest.param(
            {"hypernode.binpack.normal-pod.fading": 0}, {"te2": 31.25, "te3": 18.75}, id="tier-1-only"
        ),
        pytest.param({"hypernode.binpack.normal-pod.enable": False}, {"te2": 0.0, "te3": 0.0}, id="disabled"),
        pytest.param(
            {"hypernode.binpack.cpu": 3}, {"te2": 68.575 / 2.952, "te3": 49.825 / 2.952}, id="cpu-weight"
        ),
    ],
)
def test_normal_pod_scores(arguments, expected):
    objects = [*cluster(), pod("other", node_name="te1", cpu=1, memory=None), pod("p", cpu=1, memory="1Gi")]
    plugins = [{"name": "network-topology-aware", "arguments": arguments}]
    ssn = session(objects, conf("allocate", ["gang"], plugins))
    task = next(iter(ssn.jobs["default/podgroup-default-p"].tasks.values()))
    candidates = np.array([ssn.nodes.index[n] for n in expected])
    scores = ssn.plugins["network-topology-aware"].node_order(ssn, task, candidates)
    assert dict(zip(expected, scores.tolist(), strict=True)) == pytest.approx(expected)


def test_hypernode_sums_follow_placements_evictions_and_undo():
    objects = [*cluster(), podgroup("r"), pod("r-0", "r", node_name="te5"), *job(2, tier=1)]
    ssn = session(objects, TOPOLOGY)
    index = ssn.plugins["network-topology-aware"]._index
    initial = index.state.copy()
    stmt = ssn.statement()
    stmt.allocate(task_of(ssn, "j-w-0"), ssn.nodes.index["te1"])
    stmt.pipeline(task_of(ssn, "j-w-1"), ssn.nodes.index["te2"])
    stmt.evict(task_of(ssn, "r-0", "r"), "test")
    rack_1 = index.row["s0-s1-rack-1"]
    assert index.held[rack_1, 0] == 2000 and index.idle[rack_1, 0] == 3000 and index.future[rack_1, 0] == 2000
    stmt.discard()
    assert (index.state == initial).all()
    fresh = type(index)(ssn.topology, ssn.nodes)
    assert (fresh.state == index.state).all()


# --- the allocate action routes every topology job through its HyperNode gradients ------------------


def test_soft_job_tries_the_narrowest_domain_first():
    # rack-1 has 3 free cpus: a soft job of 4 fits rack-2, -3 or -4 whole, wherever its first pod would go
    busy = [pod("b1", node_name="te1", cpu=1, memory=None)]
    for seed in range(8):
        result = run([*cluster(), *busy, *job(4, mode="soft")], TOPOLOGY, seed=seed)
        assert len(result.binds) == 4
        assert len({RACK_OF[n] for n in result.binds.values()}) == 1


def test_job_without_eligible_domain_stays_pending():
    # minResources of 9 cpus: no HyperNode within tier 2 has them, although 2 pods would fit anywhere
    objects = [*cluster(), replace(job(2, tier=2)[0], min_resources=cpus(9)), *job(2, tier=2)[1:]]
    assert run(objects, TOPOLOGY).binds == {}
