"""The balance plugins against the descheduler's semantics: node classification, numberOfNodes, the
order of nodes and pods, when evicting stops (the node under its targets, the room on the underutilized
nodes used up), and HighNodeUtilization's opposite walk."""

from __future__ import annotations

import pytest
from desched_cluster import Cluster, evicted, load, node, policy, res

LOAD_AWARE_ARGS = {
    "thresholds": {"cpu": 30, "memory": 30},
    "targetThresholds": {"cpu": 80, "memory": 85},
    "metrics": {"type": "Lahar"},
}
EIGHT = [node(f"te{i}", cpu=4, memory="8Gi") for i in range(1, 9)]


def idle(*names: str, cpu: str = "200m", memory: str = "1Gi") -> dict:
    return {name: load(cpu, memory) for name in names}


def seed_cluster() -> Cluster:
    """Seed 002: three low-priority pods of one job and a stress pod (a plain pod) on te3."""
    cluster = Cluster(*EIGHT)
    for i in range(3):
        cluster.job_pod(f"low-{i}", "te3", job="low", cpu="300m", memory="256Mi", priority=1000)
    cluster.plain_pod("stress", "te3", cpu="1500m", memory="1Gi")
    return cluster


def test_seed_002_the_hot_node_sheds_low_priority_pods_until_below_its_targets() -> None:
    usage = idle(*(f"te{i}" for i in range(1, 9)))
    each = res(cpu="1", memory="200Mi")
    usage["te3"] = load("3800m", "3Gi", pods={f"default/low-{i}": each for i in range(3)})
    result = seed_cluster().plan(
        policy("LoadAware", LOAD_AWARE_ARGS, {"priorityThreshold": {"value": 10000}}), usage
    )
    # 3.8 of 4 cpus is 95 % > 80 %; one low pod (1 cpu measured) takes te3 to 70 %: below its target
    assert evicted(result) == ["low-0"]
    (eviction,) = result.evictions
    assert eviction.node == "te3" and eviction.plugin == "LoadAware" and eviction.label == "overutilized:cpu"
    assert "cpu 95.0% > 80%" in eviction.reason
    assert eviction.message.startswith("deschedule: LoadAware: node te3")
    assert result.runs[0].classes["te3"] == "over" and result.runs[0].classes["te5"] == "under"


@pytest.mark.parametrize(
    ("te3_cpu", "expected"),
    [
        ("3100m", []),  # 77.5 %: not above the 80 % target
        ("3300m", ["low-0"]),  # 82.5 %: one pod of 300m measured as its requests brings it to 75 %
        # 100 %: two take it to 85 %, still above; the third would leave the job below its minMember of 1
        ("4000m", ["low-0", "low-1"]),
    ],
)
def test_evicting_stops_once_the_node_is_below_its_targets(te3_cpu: str, expected: list[str]) -> None:
    usage = {**idle(*(f"te{i}" for i in range(1, 9))), "te3": load(te3_cpu, "2Gi")}
    result = seed_cluster().plan(policy("LoadAware", LOAD_AWARE_ARGS), usage)
    assert evicted(result) == expected


@pytest.mark.parametrize(
    ("number_of_nodes", "evicts"),
    [(0, True), (5, True), (7, False), (9, False)],  # seven nodes are underutilized: more than N needed
)
def test_number_of_nodes_asks_for_more_underutilized_nodes_than_it(
    number_of_nodes: int, evicts: bool
) -> None:
    usage = {**idle(*(f"te{i}" for i in range(1, 9))), "te3": load("4", "2Gi")}
    args = {**LOAD_AWARE_ARGS, "numberOfNodes": number_of_nodes}
    result = seed_cluster().plan(policy("LoadAware", args), usage)
    assert bool(result.evictions) == evicts
    if not evicts:
        assert "numberOfNodes" in result.runs[0].note


def test_underutilized_means_below_every_threshold_and_overutilized_above_any_target() -> None:
    cluster = Cluster(*EIGHT[:4])
    usage = {
        "te1": load("1", "1Gi"),  # cpu 25 %, memory 12.5 %: under (both at or below 30 %)
        "te2": load("1", "4Gi"),  # memory 50 %: neither
        "te3": load("1", "7Gi"),  # memory 87.5 % > 85 %: over although cpu is low
        "te4": load("3900m", "1Gi"),  # cpu 97.5 %: over
    }
    result = cluster.plan(policy("LoadAware", LOAD_AWARE_ARGS), usage)
    assert dict(result.runs[0].classes) == {"te1": "under", "te2": "normal", "te3": "over", "te4": "over"}


def test_stale_or_missing_usage_leaves_a_node_unknown_neither_source_nor_room() -> None:
    usage = {**idle("te1", "te2"), "te3": load("4", "2Gi", age_s=600)}  # older than the 5m default
    result = seed_cluster().plan(policy("LoadAware", LOAD_AWARE_ARGS), usage)
    assert result.evictions == ()
    assert result.runs[0].classes["te3"] == "unknown" and result.runs[0].classes["te8"] == "unknown"


def test_the_most_loaded_node_is_emptied_first_and_the_room_caps_the_total() -> None:
    """te1 has room for 1.2 cpus up to its 80 % target: two 1-cpu evictions use it up."""
    cluster = Cluster(*EIGHT[:3])
    for i in range(3):
        cluster.job_pod(f"a-{i}", "te2", job="a", cpu="1", memory="128Mi")
        cluster.job_pod(f"b-{i}", "te3", job="b", cpu="1", memory="128Mi")
    usage = {"te1": load("2", "1Gi"), "te2": load("3400m", "1Gi"), "te3": load("3800m", "1Gi")}
    args = {**LOAD_AWARE_ARGS, "thresholds": {"cpu": 50, "memory": 30}}
    result = cluster.plan(policy("LoadAware", args), usage)
    # te3 first (most loaded): one pod takes it to 2.8 (70 %); then te2: one pod; the room (3.2 - 2) is gone
    assert evicted(result) == ["b-0", "a-0"]


def test_within_a_node_the_lowest_priority_goes_first_then_the_biggest_user() -> None:
    cluster = Cluster(*EIGHT[:2])
    cluster.job_pod("hi-0", "te2", cpu="100m", priority=500)
    cluster.job_pod("lo-0", "te2", cpu="100m", priority=100)
    cluster.job_pod("lo-1", "te2", cpu="100m", priority=100)
    pods = {"default/lo-0": res(cpu="500m", memory="1Mi"), "default/lo-1": res(cpu="2", memory="1Mi")}
    usage = {"te1": load("100m", "1Gi"), "te2": load("3900m", "1Gi", pods=pods)}
    result = cluster.plan(policy("LoadAware", LOAD_AWARE_ARGS), usage)
    assert evicted(result) == ["lo-1"]  # 2 cpus measured: te2 at 1.9 of 4, below its target


def test_low_node_utilization_judges_by_requests_and_evicts_besteffort_before_guaranteed() -> None:
    cluster = Cluster(node("n1", cpu=10, memory="10Gi"), node("n2", cpu=10, memory="10Gi"))
    for i in range(9):
        cluster.job_pod(f"w-{i}", "n1", job="w", cpu="1", memory="100Mi")
    args = {
        "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
        "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
    }
    result = cluster.plan(policy("LowNodeUtilization", args))
    # n1 requests 90 % cpu: four 1-cpu pods take it to 50 %, not above its target
    assert evicted(result) == ["w-0", "w-1", "w-2", "w-3"]
    assert result.evictions[0].label == "overutilized:cpu"


def test_low_node_utilization_with_deviation_thresholds_judges_around_the_average() -> None:
    cluster = Cluster(*(node(f"n{i}", cpu=10, memory="100Gi") for i in range(3)))
    for i in range(6):
        cluster.job_pod(f"a-{i}", "n0", job="a", cpu="1", memory="1Gi")
    cluster.job_pod("b-0", "n1", job="b", cpu="1", memory="1Gi")
    args = {
        "useDeviationThresholds": True,
        "thresholds": {"cpu": 10},
        "targetThresholds": {"cpu": 10},
    }
    result = cluster.plan(policy("LowNodeUtilization", args))
    # average 23.3 %: under below 13.3 % (n2), over above 33.3 % (n0); two pods bring n0 to 40 %, then 30 %
    assert result.runs[0].classes == {"n0": "over", "n1": "under", "n2": "under"}
    assert evicted(result) == ["a-0", "a-1", "a-2"]


def test_high_node_utilization_empties_the_least_used_nodes_onto_the_others() -> None:
    cluster = Cluster(*(node(f"n{i}", cpu=10, memory="10Gi") for i in range(3)))
    cluster.job_pod("x-0", "n0", job="x", cpu="500m", memory="100Mi")
    cluster.job_pod("x-1", "n0", job="x", cpu="500m", memory="100Mi")
    for i in range(5):
        cluster.job_pod(f"y-{i}", "n1", job="y", cpu="1", memory="100Mi")
    for i in range(6):
        cluster.job_pod(f"z-{i}", "n2", job="z", cpu="1", memory="100Mi")
    result = cluster.plan(policy("HighNodeUtilization", {"thresholds": {"cpu": 20, "memory": 20}}))
    assert evicted(result) == ["x-0"]  # x-1 stays: the job's minMember is 1
    assert result.evictions[0].label == "underutilized"
    assert result.runs[0].classes == {"n0": "under", "n1": "normal", "n2": "normal"}


@pytest.mark.parametrize(
    ("usage", "note"),
    [
        ({f"te{i}": load("200m", "1Gi") for i in range(1, 9)}, "every node is underutilized"),
        ({f"te{i}": load("2", "4Gi") for i in range(1, 9)}, "no node is underutilized"),
        (
            {**{f"te{i}": load("200m", "1Gi") for i in range(1, 8)}, "te8": load("2", "4Gi")},
            "above its targets",
        ),
    ],
)
def test_nothing_to_do_says_why(usage: dict, note: str) -> None:
    result = seed_cluster().plan(policy("LoadAware", LOAD_AWARE_ARGS), usage)
    assert result.evictions == () and note in result.runs[0].note


def test_one_ready_node_is_not_enough() -> None:
    cluster = Cluster(EIGHT[0])
    cluster.job_pod("a-0", "te1")
    result = cluster.plan(policy("LoadAware", LOAD_AWARE_ARGS), {"te1": load("4", "8Gi")})
    assert result.evictions == () and "1 ready node" in result.note
