"""nodeorder plugin: Kubernetes' scorers with Volcano's weights, exact integer scores, and the winners."""

from __future__ import annotations

import numpy as np
import pytest
from support.builders import conf, node, pod, queue, run, session

from contracts.objects import (
    NodeAffinity,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    SelectorRequirement,
    Taint,
    Toleration,
)

ONLY = {
    "leastrequested.weight": 0,
    "mostrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "tainttoleration.weight": 0,
}


def _weights(**weights: int) -> dict[str, int]:
    """Every scorer off but the given ones (`least=1` -> leastrequested.weight: 1)."""
    names = {
        "least": "leastrequested",
        "most": "mostrequested",
        "balanced": "balancedresource",
        "affinity": "nodeaffinity",
        "taint": "tainttoleration",
    }
    return {**ONLY, **{f"{names[k]}.weight": v for k, v in weights.items()}}


def _preferred(*terms: tuple[int, str, str, tuple[str, ...]]) -> NodeAffinity:
    return NodeAffinity(
        preferred=tuple(
            PreferredSchedulingTerm(w, NodeSelectorTerm(match_expressions=(SelectorRequirement(k, op, v),)))
            for w, k, op, v in terms
        )
    )


BUSY_AND_EMPTY = [
    node("n1", cpu=3, memory="8Gi"),
    pod("running", node_name="n1", cpu=1, memory=None),
    node("n2", cpu=4, memory="8Gi"),
]

# arguments, cluster, pending pod kwargs -> score per node
SCORE_CASES = [
    pytest.param(
        # n1: least cpu (3-2)*100//3=33, mem (8-1)*100//8=87 -> 60; balanced |2/3-1/8|/2 -> 72; taints 100*3
        # n2: least 75, 87 -> 81; balanced |1/4-1/8|/2 -> 93; taints 300
        {},
        BUSY_AND_EMPTY,
        {"cpu": 1, "memory": "1Gi"},
        {"n1": 432, "n2": 474},
        id="defaults",
    ),
    pytest.param(
        # n1: cpu 2*100//3=66, mem 1*100//8=12 -> 39; n2: 25, 12 -> 18; x2
        _weights(most=2),
        BUSY_AND_EMPTY,
        {"cpu": 1, "memory": "1Gi"},
        {"n1": 78, "n2": 36},
        id="most-allocated",
    ),
    pytest.param(
        # requested above allocatable scores 0 for that resource (LeastAllocated) / is capped (MostAllocated)
        _weights(least=1, most=1),
        [node("n1", cpu=1, memory="8Gi")],
        {"cpu": 2, "memory": "4Gi"},
        {"n1": (0 + 50) // 2 + (100 + 50) // 2},
        id="over-requested",
    ),
    pytest.param(
        # fractions cpu 1/4, memory 2/8, gpu 2/4: std sqrt(((-1/12)^2*2 + (1/6)^2)/3) = 0.1178 -> 88
        _weights(balanced=1),
        [
            node("g1", cpu=4, memory="8Gi", gpu=4),
            pod("running", node_name="g1", cpu=None, memory=None, gpu=1),
        ],
        {"cpu": 1, "memory": "2Gi", "gpu": 1},
        {"g1": 88},
        id="balanced-with-gpu",
    ),
    pytest.param(
        # a node without gpus is balanced over cpu and memory only: fractions 1/4, 2/8 -> 100
        _weights(balanced=1),
        [
            node("g1", cpu=4, memory="8Gi", gpu=4),
            pod("running", node_name="g1", cpu=None, memory=None, gpu=1),
            node("n2", cpu=4, memory="8Gi"),
        ],
        {"cpu": 1, "memory": "2Gi", "gpu": 1},
        {"g1": 88, "n2": 100},
        id="balanced-gpu-where-present",
    ),
    pytest.param(
        # a node with no memory is scored on cpu alone: least 75, balance of one fraction 100;
        # n2: least (75 + 100) // 2, balance |1/4 - 0| / 2 -> 87
        _weights(least=1, balanced=1),
        [node("n1", cpu=4, memory="0"), node("n2", cpu=4, memory="8Gi")],
        {"cpu": 1, "memory": None},
        {"n1": 175, "n2": 174},
        id="resource-missing-on-a-node",
    ),
    pytest.param(
        # a best-effort pod is not scored for balance; least still counts what the node holds
        _weights(least=1, balanced=1),
        BUSY_AND_EMPTY,
        {"cpu": None, "memory": None},
        {"n1": (66 + 100) // 2, "n2": 100},
        id="best-effort-skips-balance",
    ),
    pytest.param(
        # raw 10, 30, 40 -> 100*raw//40 = 25, 75, 100; x2
        _weights(affinity=2),
        [
            node("n1", labels={"zone": "a"}),
            node("n2", labels={"ssd": "y"}),
            node("n3", labels={"zone": "a", "ssd": "y"}),
            node("n4"),
        ],
        {"node_affinity": _preferred((10, "zone", "In", ("a",)), (30, "ssd", "Exists", ()))},
        {"n1": 50, "n2": 150, "n3": 200, "n4": 0},
        id="preferred-affinity",
    ),
    pytest.param(
        # intolerable PreferNoSchedule taints 2, 1, 0 -> 100 - 100*count//2; x3 (NoSchedule ones do not count)
        _weights(taint=3),
        [
            node("n1", taints=[Taint("a", "", "PreferNoSchedule"), Taint("b", "", "PreferNoSchedule")]),
            node("n2", taints=[Taint("a", "", "PreferNoSchedule"), Taint("c", "")]),
            node("n3"),
        ],
        {"tolerations": (Toleration("c", "Exists"),)},
        {"n1": 0, "n2": 150, "n3": 300},
        id="taint-toleration",
    ),
    pytest.param(
        # a toleration with effect NoSchedule does not tolerate a PreferNoSchedule taint; one without does
        _weights(taint=1),
        [
            node("n1", taints=[Taint("a", "", "PreferNoSchedule"), Taint("b", "", "PreferNoSchedule")]),
            node("n2", taints=[Taint("a", "", "PreferNoSchedule")]),
        ],
        {"tolerations": (Toleration("a", "Exists", effect="NoSchedule"), Toleration("b", "Exists"))},
        {"n1": 0, "n2": 0},
        id="toleration-effect-must-cover-prefer-no-schedule",
    ),
]


@pytest.mark.parametrize(("arguments", "cluster", "spec", "expected"), SCORE_CASES)
def test_scores(arguments, cluster, spec, expected):
    plugins = [{"name": "nodeorder", "arguments": arguments}]
    ssn = session([queue("default"), *cluster, pod("p", **spec)], conf("allocate", ["gang"], plugins))
    task = ssn.jobs["default/podgroup-default-p"].tasks["default-p"]
    candidates = np.array([ssn.nodes.index[name] for name in expected])
    scores = ssn.plugins["nodeorder"].node_order(ssn, task, candidates)
    assert dict(zip(expected, scores.tolist(), strict=True)) == expected


def _cluster(n1_labels=None):
    # n1 holds 3 of 4 cpus, n2 holds 1 cpu and 2Gi of 8Gi
    return [
        queue("default"),
        node("n1", cpu=4, memory="8Gi", labels=n1_labels),
        pod("busy-1", node_name="n1", cpu=3, memory=None),
        node("n2", cpu=4, memory="8Gi"),
        pod("busy-2", node_name="n2", cpu=1, memory="2Gi"),
    ]


WINNER_CASES = [
    pytest.param({}, {}, "n2", id="least-allocated-prefers-the-emptier"),
    pytest.param(_weights(most=1), {}, "n1", id="most-allocated-prefers-the-fuller"),
    pytest.param(
        # same least score (cpu 0, mem 87 vs cpu 50, mem 62: 43 vs 56) would pick n2 anyway; balance alone:
        # n1 |1 - 1/8|/2 -> 56, n2 |1/2 - 3/8|/2 -> 93
        _weights(balanced=1),
        {},
        "n2",
        id="balanced-prefers-balance",
    ),
    pytest.param(
        {}, {"node_affinity": _preferred((1, "zone", "In", ("a",)))}, "n1", id="affinity-beats-load"
    ),
    pytest.param(
        {"nodeaffinity.weight": 0},
        {"node_affinity": _preferred((1, "zone", "In", ("a",)))},
        "n2",
        id="affinity-weight-zero",
    ),
    pytest.param(
        # least x20: n1 860 + 56 + 200 + 300 < n2 1120 + 93 + 300
        {"leastrequested.weight": 20},
        {"node_affinity": _preferred((1, "zone", "In", ("a",)))},
        "n2",
        id="least-weight-outweighs-affinity",
    ),
]


@pytest.mark.parametrize(("arguments", "spec", "winner"), WINNER_CASES)
def test_winner(arguments, spec, winner):
    plugins = ["predicates", {"name": "nodeorder", "arguments": arguments}]
    objects = [*_cluster({"zone": "a"}), pod("p", cpu=1, memory="1Gi", **spec)]
    for seed in range(3):
        assert run(objects, conf("allocate", ["gang"], plugins), seed=seed).binds == {"default/p": winner}


def test_spreads_pods_by_least_allocated():
    objects = [
        queue("default"),
        node("n1"),
        node("n2"),
        *[pod(f"p{i}", cpu=1, memory="1Gi") for i in range(4)],
    ]
    result = run(objects, conf("allocate", ["gang"], ["predicates", "nodeorder"]))
    assert sorted(result.binds.values()) == ["n1", "n1", "n2", "n2"]


def test_held_resources_follow_placements_and_undo():
    objects = [*_cluster(), pod("p", cpu=1, memory="1Gi")]
    ssn = session(objects, conf("allocate", ["gang"], ["nodeorder"]))
    plugin = ssn.plugins["nodeorder"]
    task = ssn.jobs["default/podgroup-default-p"].tasks["default-p"]
    candidates = np.array([0, 1])
    before = plugin.node_order(ssn, task, candidates)
    stmt = ssn.statement()
    stmt.pipeline(task, 1)  # a reservation counts as held, as in the Kubernetes NodeInfo Volcano scores
    after = plugin.node_order(ssn, task, candidates)
    assert after[0] == before[0] and after[1] < before[1]
    stmt.discard()
    assert plugin.node_order(ssn, task, candidates).tolist() == before.tolist()
