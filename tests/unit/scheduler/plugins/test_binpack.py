"""binpack plugin: Volcano's formula (weighted (used + request) / allocatable), overflow and winners."""

from __future__ import annotations

import numpy as np
import pytest
from support.builders import conf, node, pod, queue, run, session

GPU_WEIGHT_2 = {"binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 2}

ONE_BUSY = [
    node("n1", cpu=4, memory="8Gi"),
    pod("running", node_name="n1", cpu=1, memory="2Gi"),
    node("n2", cpu=4, memory="8Gi"),
]
GPU_NODE = [
    node("g1", cpu=4, memory="8Gi", gpu=4),
    pod("running", node_name="g1", cpu=None, memory=None, gpu=2),
]

# arguments, cluster, pending pod kwargs -> score per node
SCORE_CASES = [
    pytest.param({}, ONE_BUSY, {"cpu": 1, "memory": "2Gi"}, {"n1": 50.0, "n2": 25.0}, id="defaults"),
    pytest.param(
        # n1: (3/4 * 3 + 4/8) / 4; n2: (2/4 * 3 + 2/8) / 4
        {"binpack.cpu": 3},
        ONE_BUSY,
        {"cpu": 2, "memory": "2Gi"},
        {"n1": 68.75, "n2": 43.75},
        id="cpu-weight",
    ),
    pytest.param(
        {"binpack.weight": 2},
        ONE_BUSY,
        {"cpu": 1, "memory": "2Gi"},
        {"n1": 100.0, "n2": 50.0},
        id="plugin-weight",
    ),
    pytest.param(
        {}, ONE_BUSY, {"cpu": 1, "memory": None}, {"n1": 50.0, "n2": 25.0}, id="only-requested-resources"
    ),
    pytest.param(
        # a zero weight adds nothing to the sum of weights nor to the score
        {"binpack.memory": 0},
        ONE_BUSY,
        {"cpu": 1, "memory": "2Gi"},
        {"n1": 50.0, "n2": 25.0},
        id="zero-weight",
    ),
    pytest.param(
        # a negative weight falls back to 1 (as Volcano)
        {"binpack.cpu": -4},
        ONE_BUSY,
        {"cpu": 1, "memory": "2Gi"},
        {"n1": 50.0, "n2": 25.0},
        id="negative-weight",
    ),
    pytest.param(
        {}, GPU_NODE, {"cpu": 1, "memory": "2Gi", "gpu": 1}, {"g1": 25.0}, id="unlisted-gpu-not-scored"
    ),
    pytest.param(
        # (1/4 + 2/8 + 3/4 * 2) / 4
        GPU_WEIGHT_2,
        GPU_NODE,
        {"cpu": 1, "memory": "2Gi", "gpu": 1},
        {"g1": 50.0},
        id="listed-gpu-weighted",
    ),
    pytest.param(
        # a node without the resource adds 0 for it but keeps its weight: (1/4 + 2/8 + 0) / 4
        GPU_WEIGHT_2,
        [*GPU_NODE, node("n2", cpu=4, memory="8Gi")],
        {"cpu": 1, "memory": "2Gi", "gpu": 1},
        {"g1": 50.0, "n2": 12.5},
        id="listed-gpu-missing-on-a-node",
    ),
    pytest.param(
        # the terminating pod still uses 3 cpus: 3 + 2 > 4 zeroes the whole score, although the pod fits
        # the node's future idle resources
        {},
        [node("n1", cpu=4, memory="8Gi"), pod("leaving", node_name="n1", cpu=3, memory=None, deleting=True)],
        {"cpu": 2, "memory": "2Gi"},
        {"n1": 0.0},
        id="overflow-scores-zero",
    ),
    pytest.param(
        {"binpack.weight": 0}, ONE_BUSY, {"cpu": 1, "memory": "2Gi"}, {"n1": 0.0, "n2": 0.0}, id="off"
    ),
]


@pytest.mark.parametrize(("arguments", "cluster", "spec", "expected"), SCORE_CASES)
def test_scores(arguments, cluster, spec, expected):
    plugins = [{"name": "binpack", "arguments": arguments}]
    ssn = session([queue("default"), *cluster, pod("p", **spec)], conf("allocate", ["gang"], plugins))
    task = ssn.jobs["default/podgroup-default-p"].tasks["default-p"]
    candidates = np.array([ssn.nodes.index[name] for name in expected])
    scores = ssn.plugins["binpack"].node_order(ssn, task, candidates)
    assert dict(zip(expected, scores.tolist(), strict=True)) == pytest.approx(expected)


def _skewed():
    # n1 holds 3 of 4 cpus and no memory, n2 6 of 8Gi and no cpu
    return [
        queue("default"),
        node("n1", cpu=4, memory="8Gi"),
        pod("cpu-hog", node_name="n1", cpu=3, memory=None),
        node("n2", cpu=4, memory="8Gi"),
        pod("memory-hog", node_name="n2", cpu=None, memory="6Gi"),
    ]


WINNER_CASES = [
    pytest.param({}, [node("n1"), pod("busy", node_name="n1", cpu=2), node("n2")], "n1", id="fuller-node"),
    # cpu x5: n1 (4/4*5 + 1/8) / 6 = 0.85 > n2 (1/4*5 + 7/8) / 6 = 0.35
    pytest.param({"binpack.cpu": 5}, _skewed()[1:], "n1", id="cpu-weight-picks-cpu-full"),
    # memory x5: n1 (1 + 1/8*5) / 6 = 0.27 < n2 (1/4 + 7/8*5) / 6 = 0.77
    pytest.param({"binpack.memory": 5}, _skewed()[1:], "n2", id="memory-weight-picks-memory-full"),
]


@pytest.mark.parametrize(("arguments", "cluster", "winner"), WINNER_CASES)
def test_winner(arguments, cluster, winner):
    plugins = ["predicates", {"name": "binpack", "arguments": arguments}]
    objects = [queue("default"), *cluster, pod("p", cpu=1, memory="1Gi")]
    for seed in range(3):
        assert run(objects, conf("allocate", ["gang"], plugins), seed=seed).binds == {"default/p": winner}


def test_packs_pods_onto_one_node():
    objects = [queue("default"), node("n1"), node("n2"), node("n3"), *[pod(f"p{i}", cpu=1) for i in range(4)]]
    for seed in range(3):
        result = run(objects, conf("allocate", ["gang"], ["predicates", "binpack"]), seed=seed)
        assert len(result.binds) == 4 and len(set(result.binds.values())) == 1


def test_pipelined_reservations_are_not_used():
    objects = [*_skewed(), pod("p", cpu=1, memory="1Gi"), pod("q", cpu=1, memory="1Gi")]
    ssn = session(objects, conf("allocate", ["gang"], ["binpack"]))
    plugin = ssn.plugins["binpack"]
    p = ssn.jobs["default/podgroup-default-p"].tasks["default-p"]
    q = ssn.jobs["default/podgroup-default-q"].tasks["default-q"]
    candidates = np.array([0, 1])
    before = plugin.node_order(ssn, q, candidates)
    stmt = ssn.statement()
    stmt.pipeline(p, 1)
    assert plugin.node_order(ssn, q, candidates).tolist() == before.tolist()
    stmt.discard()
    stmt.allocate(p, 1)
    assert plugin.node_order(ssn, q, candidates).tolist() == [before[0], 75.0]
    stmt.discard()
    assert plugin.node_order(ssn, q, candidates).tolist() == before.tolist()
