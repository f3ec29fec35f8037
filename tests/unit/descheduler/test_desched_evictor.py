"""Which pods may go: the DefaultEvictor's filters, nodeFit, the cool-down, gangs' minMember and the
policy's limits. One overloaded node (n1) and idle ones; each case changes one thing about the pods."""

from __future__ import annotations

from typing import Any

import pytest
from desched_cluster import Cluster, evicted, load, node, policy, priority_class

from contracts.objects import Taint, Toleration
from services.descheduler.core.evictor import Settings

ARGS = {
    "thresholds": {"cpu": 30, "memory": 30},
    "targetThresholds": {"cpu": 50, "memory": 90},
    "metrics": {"type": "Lahar"},
}


def overloaded(*extra: Any) -> Cluster:
    cluster = Cluster(node("n1", cpu=4), node("n2", cpu=4), node("n3", cpu=4), *extra)
    return cluster


def usage(cluster: Cluster) -> dict:
    loads = {name: load("100m", "1Gi") for name in cluster.view.nodes}
    loads["n1"] = load("4", "2Gi")
    return loads


def plan(cluster: Cluster, evictor: dict | None = None, now: float = 10_000.0, **top: Any) -> list[str]:
    return evicted(cluster.plan(policy("LoadAware", ARGS, evictor, **top), usage(cluster), now=now))


@pytest.mark.parametrize(
    ("pod_args", "evictor", "allowed"),
    [
        ({}, None, True),
        ({"priority": 10_000}, {"priorityThreshold": {"value": 10_000}}, False),  # at the threshold
        ({"priority": 9_999}, {"priorityThreshold": {"value": 10_000}}, True),
        ({"priority": 2_000_000_000}, None, False),  # system-critical
        ({"priority": 2_000_000_000}, {"evictSystemCriticalPods": True}, True),
        # evictSystemCriticalPods lifts the priority threshold too, as in the descheduler
        ({"priority": 50_000}, {"evictSystemCriticalPods": True, "priorityThreshold": {"value": 1}}, True),
        ({"labels": {"tier": "batch"}}, {"labelSelector": {"matchLabels": {"tier": "batch"}}}, True),
        ({"labels": {"tier": "web"}}, {"labelSelector": {"matchLabels": {"tier": "batch"}}}, False),
        (
            {"labels": {"tier": "web"}},
            {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}},
            True,
        ),
        ({"stopping": True}, None, False),  # already being evicted
        ({"namespace": "kube-system"}, None, False),  # evictableNamespaces.exclude below
    ],
)
def test_default_evictor_filters(pod_args: dict, evictor: dict | None, allowed: bool) -> None:
    cluster = overloaded()
    cluster.job_pod("a-0", "n1", cpu="2", **pod_args)
    cluster.job_pod("a-1", "n1", cpu="2", **pod_args)
    args = {**ARGS, "evictableNamespaces": {"exclude": ["kube-system"]}}
    result = cluster.plan(policy("LoadAware", args, evictor), usage(cluster))
    assert bool(result.evictions) == allowed


def test_a_priority_threshold_by_class_name_reads_the_class() -> None:
    cluster = overloaded().classes(priority_class("important", 5000))
    for i in range(2):
        cluster.job_pod(f"a-{i}", "n1", cpu="1", priority=6000)
        cluster.job_pod(f"b-{i}", "n1", cpu="1", priority=4000)
    assert plan(cluster, {"priorityThreshold": {"name": "important"}}) == ["b-0"]
    # a class that does not exist refuses every pod (the descheduler refuses to start with it)
    assert plan(cluster, {"priorityThreshold": {"name": "missing"}}) == []


def test_a_pod_without_a_priority_takes_its_class_or_the_global_default() -> None:
    cluster = overloaded().classes(priority_class("everyone", 20_000, global_default=True))
    cluster.job_pod("a-0", "n1", cpu="2", priority=None)
    assert plan(cluster, {"priorityThreshold": {"value": 10_000}}) == []


def test_plain_pods_are_never_evicted_unless_annotated() -> None:
    """No Job creates them again: the descheduler's "pod does not have any ownerRefs"."""
    cluster = overloaded()
    cluster.plain_pod("bare", "n1", cpu="3")
    assert plan(cluster) == []
    forced = overloaded()
    forced.job_pod("hot-0", "n1", cpu="3", annotations={"descheduler.alpha.kubernetes.io/evict": "true"})
    forced.job_pod("hot-1", "n1", cpu="1")
    # the annotation lifts the filters (here the priority threshold), not the gang's minMember
    assert plan(forced, {"priorityThreshold": {"value": 0}}) == ["hot-0"]


def test_ignore_pvc_pods_skips_pods_of_jobs_with_volume_claims() -> None:
    cluster = overloaded()
    cluster.job_pod("data-0", "n1", job="data", cpu="2")
    cluster.job_pod("data-1", "n1", job="data", cpu="2")
    cluster.view.claim_jobs.add("default/data")
    assert plan(cluster, {"ignorePvcPods": True}) == []
    assert plan(cluster, {"ignorePvcPods": False}) == ["data-0"]


def test_a_descheduled_pod_and_its_replacement_cool_down() -> None:
    cluster = overloaded()
    cluster.job_pod("a-0", "n1", cpu="2")
    cluster.job_pod("a-1", "n1", cpu="2")
    cluster.view.descheduled_at["default/a-0"] = 9_500.0
    assert plan(cluster, now=10_000.0) == ["a-1"]  # 500 s ago, within the 30 min default
    assert plan(cluster, now=9_500.0 + 1800.0) == ["a-0"]  # cooled down
    settings = Settings(cooldown_s=60.0)
    result = cluster.plan(policy("LoadAware", ARGS), usage(cluster), now=10_000.0, settings=settings)
    assert evicted(result) == ["a-0"]


def test_a_gang_keeps_its_min_member_running() -> None:
    cluster = overloaded()
    for i in range(4):
        cluster.job_pod(f"mpi-{i}", "n1", job="mpi", cpu="1", min_member=3)
    assert plan(cluster) == ["mpi-0"]  # 4 running, minMember 3: one may go, however hot n1 stays


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        ({}, ["a-0", "a-1", "b-0"]),
        ({"maxNoOfPodsToEvictPerNode": 1}, ["a-0"]),
        ({"maxNoOfPodsToEvictTotal": 2}, ["a-0", "a-1"]),
        ({"maxNoOfPodsToEvictPerNamespace": 1}, ["a-0", "b-0"]),
    ],
)
def test_the_policys_limits(top: dict, expected: list[str]) -> None:
    """n1 (10 cpus, all in use) stays above its 50 % target throughout; the two idle nodes have room."""
    cluster = Cluster(node("n1", cpu=10), node("n2", cpu=4), node("n3", cpu=4))
    for i in range(3):
        cluster.job_pod(f"a-{i}", "n1", job="a", cpu="1")
    cluster.job_pod("b-0", "n1", job="b", cpu="1", namespace="other")
    cluster.job_pod("b-1", "n1", job="b", cpu="1", namespace="other")
    loads = {"n1": load("10", "2Gi"), "n2": load("0", "1Gi"), "n3": load("0", "1Gi")}
    # a-2 and b-1 would leave their jobs without a running pod (minMember 1)
    assert evicted(cluster.plan(policy("LoadAware", ARGS, **top), loads)) == expected


def test_node_fit_needs_another_node_that_takes_the_pod() -> None:
    tainted = node("n2", cpu=4, taints=[Taint("dedicated", "gpu", "NoSchedule")])
    cluster = Cluster(node("n1", cpu=4), tainted, node("n3", cpu="500m"))
    cluster.job_pod("a-0", "n1", cpu="2")
    cluster.job_pod("a-1", "n1", cpu="2")
    loads = {"n1": load("4", "2Gi"), "n2": load("0", "1Gi"), "n3": load("0", "100Mi")}
    with_fit = policy("LoadAware", ARGS, {"nodeFit": True})
    # n2's taint refuses it, n3 has 500m: nowhere for a 2-cpu pod
    assert evicted(cluster.plan(with_fit, loads)) == []
    assert evicted(cluster.plan(policy("LoadAware", ARGS), loads)) == ["a-0"]  # without nodeFit it goes
    tolerant = Cluster(node("n1", cpu=4), tainted, node("n3", cpu="500m"))
    for i in range(2):
        tolerant.job_pod(f"a-{i}", "n1", cpu="2", tolerations=[Toleration("dedicated", "Equal", "gpu")])
    assert evicted(tolerant.plan(with_fit, loads)) == ["a-0"]


def test_node_fit_respects_the_pods_node_selector() -> None:
    cluster = Cluster(node("n1", cpu=4), node("n2", cpu=4, labels={"zone": "b"}), node("n3", cpu=4))
    cluster.job_pod("a-0", "n1", cpu="2", node_selector={"zone": "a"})
    cluster.job_pod("a-1", "n1", cpu="2", node_selector={"zone": "a"})
    loads = {"n1": load("4", "2Gi"), "n2": load("0", "1Gi"), "n3": load("0", "1Gi")}
    assert evicted(cluster.plan(policy("LoadAware", ARGS, {"nodeFit": True}), loads)) == []


def test_a_pod_is_only_moved_if_some_underutilized_node_tolerates_it() -> None:
    """Even without nodeFit, as the descheduler: the destinations' taints must be tolerated."""
    taint = [Taint("maintenance", "", "NoSchedule")]
    cluster = Cluster(node("n1", cpu=4), node("n2", cpu=4, taints=taint), node("n3", cpu=4, taints=taint))
    cluster.job_pod("a-0", "n1", cpu="2")
    cluster.job_pod("a-1", "n1", cpu="2")
    loads = {"n1": load("4", "2Gi"), "n2": load("0", "1Gi"), "n3": load("0", "1Gi")}
    assert evicted(cluster.plan(policy("LoadAware", ARGS), loads)) == []
