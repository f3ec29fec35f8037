"""usage plugin: Volcano's estimator and score, the threshold predicate, and the estimate corrected exactly
by the log (pods bound since the sample added, pods gone since subtracted, the session's own placements
tracked), table-driven."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from support.builders import conf, node, pod, queue

from contracts.usage import NodeUsage, PodUsage
from services.scheduler.core.conf import ConfError
from services.scheduler.core.framework.plugin import Event
from services.scheduler.core.framework.session import Session
from services.scheduler.core.plugins.usage import CPU_OVER, MEMORY_OVER, UsagePlugin, estimate
from services.scheduler.core.plugins.usage_args import UsageArguments
from services.scheduler.core.snapshot import ClusterSnapshot

GI = 1 << 30
MI = 1 << 20


def sample(name: str, cpu: int, memory: int = 0, pods: dict[str, tuple[int, int]] | None = None) -> NodeUsage:
    listed = tuple(
        PodUsage(pod=key, cpu_milli=c, memory_bytes=m, cpu_avg_milli=c, memory_avg_bytes=m)
        for key, (c, m) in (pods or {}).items()
    )
    return NodeUsage(
        node=name,
        time=0.0,
        cpu_milli=cpu,
        memory_bytes=memory,
        cpu_avg_milli=cpu,
        memory_avg_bytes=memory,
        window_s=120.0,
        pods=listed,
    )


def usage_session(
    objects: list[Any], usage: list[NodeUsage], arguments: dict[str, Any] | None = None, **flags: Any
) -> Session:
    plugin = {"name": "usage", "arguments": arguments or {}, **flags}
    snapshot = ClusterSnapshot.from_objects([queue("default"), *objects])
    snapshot = dataclasses.replace(snapshot, usage={s.node: s for s in usage})
    return Session(snapshot, conf("allocate", ["gang"], ["predicates", plugin]))


def plugin_of(ssn: Session) -> UsagePlugin:
    plugin = ssn.plugins["usage"]
    assert isinstance(plugin, UsagePlugin)
    return plugin


def load(ssn: Session, name: str) -> tuple[float, float]:
    return plugin_of(ssn).estimated(ssn.nodes.index[name])


# --- Volcano's estimator ----------------------------------------------------------------------------

ESTIMATES = [
    # request, limit, request_ratio, burst_ratio, risk -> estimate
    pytest.param(1000, 0, 0.7, 0.0, 1.0, 700, id="defaults"),
    pytest.param(1000, 2000, 0.7, 0.5, 1.0, 1200, id="burst-share-of-the-limit"),
    pytest.param(1000, 2000, 1.0, 1.0, 1.2, 2000, id="at-most-the-limit"),
    pytest.param(1000, 0, 1.0, 0.0, 1.2, 1000, id="no-limit-means-the-request"),
    pytest.param(1000, 500, 0.7, 1.0, 1.0, 700, id="limit-below-request-is-ignored"),
    pytest.param(1000, 0, 0.7, 0.0, 1.2, 840, id="risk"),
    pytest.param(0, 0, 0.7, 0.0, 1.0, 0, id="nothing-requested"),
]


@pytest.mark.parametrize(("request_", "limit", "ratio", "burst", "risk", "expected"), ESTIMATES)
def test_estimate(request_: float, limit: float, ratio: float, burst: float, risk: float, expected: float):
    assert estimate(request_, limit, ratio, burst, risk) == pytest.approx(expected)


# --- arguments ------------------------------------------------------------------------------------------


def test_arguments_default_as_volcano_and_out_of_range_values_fall_back() -> None:
    assert UsageArguments.parse({}) == UsageArguments()
    parsed = UsageArguments.parse(
        {
            "usage.weight": -1,
            "cpu.weight": "3",
            "thresholds": {"cpu": 150, "mem": 60},
            "estimator": {"request_ratio": 2, "risk_factor": 0.5, "be_cpu": "1", "be_mem": 100},
        }
    )
    assert (parsed.usage_weight, parsed.cpu_weight) == (5, 3)
    assert (parsed.cpu_threshold, parsed.memory_threshold) == (80.0, 60.0)
    assert (parsed.request_ratio, parsed.risk_factor) == (0.7, 1.2)
    assert (parsed.best_effort_cpu_milli, parsed.best_effort_memory_bytes) == (1000.0, 100.0 * MI)


def test_unknown_keys_and_values_that_are_no_numbers_are_conf_errors_naming_their_place() -> None:
    plugin = {
        "name": "usage",
        "arguments": {
            "cpu.weight": "heavy",
            "thresholds": {"gpu": 50, "mem": "high"},
            "estimator": {"be_mem": "lots", "request_ratio": 0.5},
            "period": "5m",
        },
    }
    with pytest.raises(ConfError) as raised:
        conf("allocate", [plugin])
    path = "tiers[0].plugins[0].arguments"
    assert set(raised.value.errors) == {
        f"{path}.period: unknown argument for plugin usage",
        f"{path}.cpu.weight: expected an integer, got 'heavy'",
        f"{path}.thresholds.gpu: unknown (expected one of cpu, mem)",
        f"{path}.thresholds.mem: expected a number, got 'high'",
        f"{path}.estimator.be_mem: expected a quantity such as 250m or 200Mi",
    }


# --- score and predicate ------------------------------------------------------------------------------

NODES = [node("n1", cpu=4, memory="8Gi"), node("n2", cpu=4, memory="8Gi"), node("n3", cpu=4, memory="8Gi")]

SCORES = [
    # samples, arguments -> score per node
    pytest.param(
        [sample("n1", 1000, 2 * GI), sample("n2", 0, 0)],
        {},
        {"n1": 375.0, "n2": 500.0, "n3": 0.0},
        id="defaults",
    ),
    pytest.param(
        [sample("n1", 2000, 0)], {"cpu.weight": 3, "usage.weight": 1}, {"n1": 62.5}, id="cpu-weighted"
    ),
    pytest.param([sample("n1", 8000, 16 * GI)], {}, {"n1": 0.0}, id="over-full-clamped"),
    pytest.param([sample("n1", 0, 0)], {"cpu.weight": 0, "memory.weight": 0}, {"n1": 0.0}, id="no-weights"),
]


@pytest.mark.parametrize(("usage", "arguments", "expected"), SCORES)
def test_scores(usage: list[NodeUsage], arguments: dict[str, Any], expected: dict[str, float]) -> None:
    ssn = usage_session([*NODES, pod("p")], usage, arguments)
    task = ssn.jobs["default/podgroup-default-p"].tasks["default-p"]
    candidates = np.array([ssn.nodes.index[name] for name in expected])
    scores = plugin_of(ssn).node_order(ssn, task, candidates)
    assert dict(zip(expected, scores.tolist(), strict=True)) == pytest.approx(expected)


PREDICATES = [
    # samples, arguments -> nodes filtered, per reason
    pytest.param(
        [sample("n1", 3500), sample("n2", 0, 7 * GI), sample("n3", 100)],
        {},
        {CPU_OVER: {"n1"}, MEMORY_OVER: {"n2"}},
        id="cpu-and-memory",
    ),
    pytest.param([sample("n1", 3500, 7 * GI)], {}, {CPU_OVER: {"n1"}}, id="both-reported-as-cpu"),
    pytest.param([sample("n1", 3500)], {"thresholds": {"cpu": 90}}, {}, id="own-threshold"),
    pytest.param([sample("n1", 3200)], {}, {}, id="at-the-threshold-is-not-above"),
    pytest.param([], {}, {}, id="unknown-nodes-pass"),
]


@pytest.mark.parametrize(("usage", "arguments", "filtered"), PREDICATES)
def test_predicate(usage: list[NodeUsage], arguments: dict[str, Any], filtered: dict[str, set[str]]) -> None:
    ssn = usage_session([*NODES, pod("p")], usage, arguments)
    task = ssn.jobs["default/podgroup-default-p"].tasks["default-p"]
    failures = plugin_of(ssn).predicate(ssn, task)
    found = {f.reason: {ssn.nodes.names[i] for i in np.flatnonzero(f.nodes)} for f in failures}
    assert found == filtered
    assert not any(f.resolvable for f in failures)


def test_a_pod_goes_to_the_idlest_node_and_never_to_one_above_the_threshold() -> None:
    usage = [sample("n1", 3500), sample("n2", 2000), sample("n3", 1000)]
    ssn = usage_session([*NODES, pod("p", cpu="100m", memory="64Mi")], usage)
    assert ssn.run().binds == {"default/p": "n3"}
    full = [sample("n1", 3500), sample("n2", 3500), sample("n3", 3500)]
    result = usage_session([*NODES, pod("p", cpu="100m")], full).run()
    assert result.binds == {}
    without_predicate = usage_session([*NODES, pod("p", cpu="100m")], full, enablePredicate=False).run()
    assert without_predicate.binds.keys() == {"default/p"}


# --- the estimate, corrected by the log -------------------------------------------------------------


def test_pods_bound_since_the_sample_are_estimated_and_pods_gone_since_are_subtracted() -> None:
    # a node large enough that the estimates stay below the risk threshold (the next test has it)
    objects = [
        node("n1", cpu=16, memory="32Gi"),
        *NODES[1:],
        pod("sampled", node_name="n1", cpu=1, memory="1Gi"),  # in the sample: measured there
        pod("bound", node_name="n1", cpu=1, memory="1Gi", phase="Pending"),  # bound after it
        pod("started", node_name="n1", cpu=2, memory="2Gi"),  # running, but not in the sample yet
        pod("besteffort", node_name="n1", cpu=None, memory=None),
        pod("finished", node_name="n1", phase="Succeeded"),  # ended since the sample
        pod("moved", node_name="n2", cpu=1, memory=None),  # measured on n1, now on n2 (evicted, bound)
    ]
    n1_pods = {
        "default/sampled": (900, GI),
        "default/finished": (300, 100 * MI),
        "default/deleted": (200, 50 * MI),  # not in the log at all any more
        "default/moved": (100, 10 * MI),
    }
    ssn = usage_session(objects, [sample("n1", 2000, 2 * GI, n1_pods), sample("n2", 0, 0)])
    cpu, memory = load(ssn, "n1")
    # 2000 - 300 - 200 - 100 + 0.7 * (1000 + 2000) + 250 (best effort)
    assert cpu == pytest.approx(2000 - 600 + 2100 + 250)
    assert memory == pytest.approx(2 * GI - 160 * MI + 0.7 * 3 * GI + 200 * MI)
    assert load(ssn, "n2") == pytest.approx((700.0, 0.0))  # the moved pod, not in n2's sample
    assert load(ssn, "n3") == (0.0, 0.0)  # unknown: nothing is estimated


def test_estimates_on_a_loaded_node_carry_the_risk_factor() -> None:
    objects = [
        node("n1", cpu=10, memory="10Gi"),
        pod("new", node_name="n1", cpu=1, memory=None, phase="Pending"),
    ]
    calm = usage_session(objects, [sample("n1", 5000, 5 * GI)])  # weighted load 0.5
    loaded = usage_session(objects, [sample("n1", 6000, 6 * GI)])  # 0.6: risk_threshold reached
    assert load(calm, "n1")[0] == pytest.approx(5000 + 700)
    assert load(loaded, "n1")[0] == pytest.approx(6000 + 840)


def test_the_sessions_own_placements_count_until_undone() -> None:
    ssn = usage_session([*NODES, pod("p", cpu=2, memory="1Gi")], [sample("n1", 0, 0), sample("n2", 0)])
    plugin = plugin_of(ssn)
    task = ssn.jobs["default/podgroup-default-p"].tasks["default-p"]
    statement = ssn.statement()
    statement.allocate(task, ssn.nodes.index["n1"])
    assert load(ssn, "n1") == pytest.approx((1400.0, 0.7 * GI))
    before = plugin.score(ssn.nodes.index["n1"])
    statement.discard()
    assert load(ssn, "n1") == (0.0, 0.0)
    assert plugin.score(ssn.nodes.index["n1"]) > before
    plugin.on_deallocate(ssn, Event(task))  # a second undo subtracts nothing
    assert load(ssn, "n1") == (0.0, 0.0)


def test_a_burst_in_one_session_spreads_by_its_own_estimates() -> None:
    usage = [sample("n1", 1000), sample("n2", 1000), sample("n3", 0)]
    pods = [pod(f"p{i}", cpu="500m", memory="64Mi") for i in range(9)]
    binds = usage_session([*NODES, *pods], usage).run().binds
    per_node = {name: sum(1 for n in binds.values() if n == name) for name in ("n1", "n2", "n3")}
    assert sum(per_node.values()) == 9 and per_node["n3"] < 9 and per_node["n1"] > 0
