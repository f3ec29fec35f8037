"""drf plugin: dominant shares, job order, live updates, preemption victims."""

from __future__ import annotations

from collections import Counter

import pytest
from support.builders import conf, node, pod, podgroup, queue, run, session

DRF = conf("allocate", ["drf"])


@pytest.mark.parametrize(
    ("nodes", "running", "share"),
    [
        pytest.param([node("n1", cpu=8, memory="16Gi")], [{"cpu": 2}], 0.25, id="cpu-dominant"),
        pytest.param([node("n1", cpu=8, memory="4Gi")], [{"memory": "2Gi"}], 0.5, id="memory-dominant"),
        pytest.param([node("n1", cpu=8, gpu=2)], [{"cpu": 1, "gpu": 1}], 0.5, id="gpu-dominant"),
        # each pod is one unit of the `pods` resource, as in Volcano
        pytest.param([node("n1", cpu=100, memory="100Gi", pods=4)], [{}, {}], 0.5, id="pods-dominant"),
        # nobody has a gpu: the dimension is ignored, not a share of 1
        pytest.param([node("n1", cpu=8)], [{"cpu": 2, "gpu": 1}], 0.25, id="absent-resource-ignored"),
        pytest.param([node("n1", cpu=4), node("n2", cpu=4)], [{"cpu": 2}] * 2, 0.5, id="cluster-total"),
    ],
)
def test_job_share(nodes, running, share):
    objects = [queue("default"), *nodes, podgroup("j"), podgroup("idle"), pod("idle-w-0", "idle")]
    for i, requests in enumerate(running):
        requests = {"cpu": 1, "memory": "1Gi", **requests}
        objects.append(pod(f"j-w-{i}", "j", node_name=nodes[0].meta.name, **requests))
    ssn = session(objects, DRF)
    plugin = ssn.plugins["drf"]
    assert plugin.job_share("default/j") == pytest.approx(share)
    assert plugin.job_share("default/idle") == 0.0
    assert plugin.job_share("default/unknown") == 0.0


def test_lowest_share_goes_first():
    # "busy" is older and would win the creation-time fallback, but already holds resources
    objects = [
        queue("default"),
        node("n1", cpu=2),
        podgroup("busy"),
        pod("busy-w-0", "busy", node_name="n1"),
        pod("busy-w-1", "busy"),
        podgroup("fresh"),
        pod("fresh-w-0", "fresh"),
    ]
    assert run(objects, DRF).binds == {"default/fresh-w-0": "n1"}
    ssn = session(objects, DRF)
    busy, fresh = ssn.jobs["default/busy"], ssn.jobs["default/fresh"]
    assert ssn.plugins["drf"].job_order(ssn, fresh, busy) == -1
    assert ssn.plugins["drf"].job_order(ssn, busy, fresh) == 1
    assert ssn.plugins["drf"].job_order(ssn, busy, busy) == 0


@pytest.mark.parametrize(
    ("tiers", "split"),
    [
        # shares are updated after every placement, so two equal jobs take turns
        pytest.param([["drf"]], {"a": 2, "b": 2}, id="drf-interleaves"),
        pytest.param([["priority"]], {"a": 4}, id="without-drf-first-job-takes-all"),
    ],
)
def test_shares_update_during_allocate(tiers, split):
    objects = [queue("default"), node("n1", cpu=4, memory="16Gi")]
    for name in ("a", "b"):
        objects += [podgroup(name, min_member=1), *(pod(f"{name}-w-{i}", name) for i in range(4))]
    binds = run(objects, conf("allocate", *tiers)).binds
    assert Counter(key.split("/")[1].split("-")[0] for key in binds) == split


def test_events_update_shares_incrementally():
    objects = [
        queue("default"),
        node("n1", cpu=10, memory="100Gi"),
        podgroup("j"),
        pod("j-w-0", "j", node_name="n1", cpu=2),
        pod("j-w-1", "j", cpu=3),
    ]
    ssn = session(objects, DRF)
    plugin = ssn.plugins["drf"]
    job = ssn.jobs["default/j"]
    assert plugin.job_share(job.uid) == pytest.approx(0.2)
    stmt = ssn.statement()
    stmt.allocate(job.tasks["default-j-w-1"], 0)
    assert plugin.job_share(job.uid) == pytest.approx(0.5)
    stmt.evict(job.tasks["default-j-w-0"], "test")
    assert plugin.job_share(job.uid) == pytest.approx(0.3)
    stmt.discard()
    assert plugin.job_share(job.uid) == pytest.approx(0.2)


PREEMPT_CASES = [
    # running cpus of the preemptor's job, of victim job r (3 tasks of 1 cpu), of victim job s (1 task),
    # offered candidates -> victims. Preemptor asks 1 cpu of 10.
    pytest.param(0, ["r0", "r1", "r2"], ["r0", "r1"], id="cumulative-stops-below-preemptor"),
    pytest.param(2, ["r0", "r1", "r2"], [], id="preemptor-would-exceed-victim"),
    pytest.param(1, ["r0", "r1"], ["r0"], id="equal-share-is-victim"),
    pytest.param(0, ["s0", "r0", "r1"], ["r0", "r1"], id="per-job-accounting"),
]


@pytest.mark.parametrize(("mine", "candidates", "victims"), PREEMPT_CASES)
def test_preemptable(mine, candidates, victims):
    objects = [
        queue("default"),
        node("n1", cpu=10, memory="1000Gi"),
        podgroup("me"),
        pod("me-p", "me"),
        podgroup("r"),
        podgroup("s"),
        pod("s0", "s", node_name="n1"),
    ]
    objects += [pod(f"r{i}", "r", node_name="n1") for i in range(3)]
    objects += [pod(f"me-{i}", "me", node_name="n1") for i in range(mine)]
    ssn = session(objects, DRF)
    by_name = {t.name: t for t in ssn.all_tasks()}
    preemptor = by_name["me-p"]
    offered = [by_name[n] for n in candidates]
    assert [t.name for t in ssn.plugins["drf"].preemptable(ssn, preemptor, offered)] == victims
    assert [t.name for t in ssn.preemptable_fn(preemptor, offered)] == victims


def weighted_queue(name: str, hierarchy: str, weights: str):
    notes = {"volcano.sh/hierarchy": hierarchy, "volcano.sh/hierarchy-weights": weights}
    return queue(name, annotations=notes)


@pytest.mark.parametrize(
    ("plugin_conf", "split"),
    [
        pytest.param({"name": "drf", "enableHierarchy": True}, {"a": 2, "b": 6}, id="plugin-option"),
        pytest.param(
            {"name": "drf", "arguments": {"enableHierarchy": "true"}}, {"a": 2, "b": 6}, id="argument"
        ),
        pytest.param({"name": "drf", "arguments": {"enableHierarchy": "false"}}, {"a": 8}, id="argument-off"),
        pytest.param({"name": "drf"}, {"a": 8}, id="off-by-default"),
    ],
)
def test_hierarchy_switch(plugin_conf, split):
    # queues weighted 1:3 under root want 8 cpus each of 8: with the hierarchy on, b gets three pods for each
    # of a's; off, drf orders jobs only and the job of the older queue takes the whole node
    objects = [
        node("n1", cpu=8, memory="64Gi"),
        weighted_queue("qa", "root/a", "1/1"),
        weighted_queue("qb", "root/b", "1/3"),
    ]
    for name in ("a", "b"):
        objects += [
            podgroup(name, queue=f"q{name}", min_member=1),
            *(pod(f"{name}-w-{i}", name) for i in range(8)),
        ]
    binds = run(objects, conf("allocate", [plugin_conf])).binds
    assert Counter(key.split("/")[1].split("-")[0] for key in binds) == split


def test_without_hierarchy_queue_order_and_reclaim_abstain():
    objects = [
        queue("qa"),
        queue("qb"),
        node("n1"),
        podgroup("a", queue="qa"),
        pod("a-w-0", "a", node_name="n1"),
        podgroup("b", queue="qb"),
        pod("b-w-0", "b"),
    ]
    ssn = session(objects, DRF)
    plugin = ssn.plugins["drf"]
    assert plugin.queue_order(ssn, ssn.queues["qb"], ssn.queues["qa"]) == 0
    reclaimer = ssn.jobs["default/b"].tasks["default-b-w-0"]
    victim = ssn.jobs["default/a"].tasks["default-a-w-0"]
    assert plugin.reclaimable(ssn, reclaimer, [victim]) is None
    assert ssn.reclaimable_fn(reclaimer, [victim]) == []
