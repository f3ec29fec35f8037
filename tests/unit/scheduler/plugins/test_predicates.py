"""predicates plugin: which nodes each Kubernetes filter rejects, with which reason and node count."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from support.builders import conf, gang, node, pod, podgroup, queue, run, session

from contracts.objects import NodeAffinity, NodeSelectorTerm, SelectorRequirement, Taint, Toleration

PREDICATES = conf("allocate", ["gang"], ["predicates"])
AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def _required(*expressions: tuple[str, str, tuple[str, ...]], fields=()) -> NodeAffinity:
    return NodeAffinity(
        required=(
            NodeSelectorTerm(
                match_expressions=tuple(SelectorRequirement(k, op, v) for k, op, v in expressions),
                match_fields=tuple(SelectorRequirement(k, op, v) for k, op, v in fields),
            ),
        )
    )


def _message(result, key: str = "default/p") -> str:
    condition = next(c for c in result.podgroups[key].conditions if c.type == "Unschedulable")
    return condition.message.split(" unschedulable: ", 1)[1]


LABELLED = [
    node("n1", labels={"zone": "a", "cores": "8"}),
    node("n2", labels={"zone": "b", "cores": "16", "ssd": "yes"}),
    node("n3", labels={"zone": "c", "cores": "x"}),
]

# pod spec keyword arguments -> the only node(s) the pod may land on (empty: it stays pending)
SELECTION_CASES = [
    pytest.param({"node_selector": {"zone": "b"}}, {"n2"}, id="node-selector"),
    pytest.param({"node_selector": {"zone": "b", "ssd": "no"}}, set(), id="node-selector-all-pairs"),
    pytest.param({"node_affinity": _required(("zone", "In", ("a", "c")))}, {"n1", "n3"}, id="in"),
    pytest.param({"node_affinity": _required(("zone", "NotIn", ("a", "c")))}, {"n2"}, id="not-in"),
    pytest.param({"node_affinity": _required(("ssd", "Exists", ()))}, {"n2"}, id="exists"),
    pytest.param(
        {"node_affinity": _required(("ssd", "DoesNotExist", ()))}, {"n1", "n3"}, id="does-not-exist"
    ),
    # "x" is not an integer: never greater, never less
    pytest.param({"node_affinity": _required(("cores", "Gt", ("8",)))}, {"n2"}, id="gt"),
    pytest.param({"node_affinity": _required(("cores", "Lt", ("16",)))}, {"n1"}, id="lt"),
    pytest.param({"node_affinity": _required(("cores", "Gt", ("x",)))}, set(), id="gt-invalid-value"),
    pytest.param({"node_affinity": _required(("zone", "In", ()))}, set(), id="in-without-values-invalid"),
    pytest.param({"node_affinity": _required(fields=[("metadata.name", "In", ("n3",))])}, {"n3"}, id="field"),
    pytest.param(
        {"node_affinity": _required(fields=[("metadata.name", "NotIn", ("n3",))])},
        {"n1", "n2"},
        id="field-not-in",
    ),
    pytest.param(
        {"node_affinity": _required(fields=[("metadata.uid", "In", ("n3",))])}, set(), id="unsupported-field"
    ),
    pytest.param(
        {"node_affinity": _required(("zone", "In", ("a", "b")), fields=[("metadata.name", "In", ("n2",))])},
        {"n2"},
        id="term-ands-expressions-and-fields",
    ),
    pytest.param(
        {
            "node_affinity": NodeAffinity(
                required=(
                    NodeSelectorTerm(match_expressions=(SelectorRequirement("zone", "In", ("a",)),)),
                    NodeSelectorTerm(match_expressions=(SelectorRequirement("ssd", "Exists"),)),
                )
            )
        },
        {"n1", "n2"},
        id="terms-are-ored",
    ),
    pytest.param({"node_affinity": NodeAffinity(required=(NodeSelectorTerm(),))}, set(), id="empty-term"),
    pytest.param({"node_affinity": NodeAffinity(required=())}, set(), id="no-terms"),
    pytest.param(
        {"node_selector": {"zone": "a"}, "node_affinity": _required(("ssd", "Exists", ()))},
        set(),
        id="selector-and-affinity-both-apply",
    ),
]


@pytest.mark.parametrize(("spec", "allowed"), SELECTION_CASES)
def test_node_selection(spec, allowed):
    # two pods of one spec; with a fixed seed each lands somewhere the filter allows, or stays pending
    objects = [
        queue("default"),
        *LABELLED,
        podgroup("p", min_member=1),
        pod("p-0", "p", **spec),
        pod("p-1", "p", **spec),
    ]
    for seed in range(3):
        result = run(objects, PREDICATES, seed=seed)
        if allowed:
            assert set(result.binds.values()) <= allowed
            assert len(result.binds) == 2
        else:
            assert result.binds == {}
            assert _message(result) == f"3 nodes: {AFFINITY}"


TAINTED = [
    node("clean"),
    node("gpu", taints=[Taint("dedicated", "gpu", "NoSchedule")]),
    node("drain", taints=[Taint("maintenance", "", "NoExecute")]),
    node("soft", taints=[Taint("spot", "true", "PreferNoSchedule")]),
]

# tolerations -> nodes the pod may use
TOLERATION_CASES = [
    pytest.param((), {"clean", "soft"}, id="prefer-no-schedule-does-not-filter"),
    pytest.param(
        (Toleration("dedicated", "Equal", "gpu", "NoSchedule"),), {"clean", "gpu", "soft"}, id="equal"
    ),
    pytest.param((Toleration("dedicated", "Equal", "cpu"),), {"clean", "soft"}, id="equal-other-value"),
    pytest.param(
        (Toleration("dedicated", "Exists"),), {"clean", "gpu", "soft"}, id="exists-any-value-effect"
    ),
    pytest.param(
        (Toleration("dedicated", "Exists", effect="NoExecute"),), {"clean", "soft"}, id="effect-must-match"
    ),
    pytest.param(
        (Toleration("maintenance", "Exists", effect="NoExecute"),),
        {"clean", "drain", "soft"},
        id="no-execute-tolerated",
    ),
    pytest.param(
        (Toleration("", "Exists"),), {"clean", "gpu", "drain", "soft"}, id="empty-key-exists-tolerates-all"
    ),
    pytest.param(
        (Toleration("", "Exists", effect="NoSchedule"),), {"clean", "gpu", "soft"}, id="empty-key-one-effect"
    ),
]


@pytest.mark.parametrize(("tolerations", "allowed"), TOLERATION_CASES)
def test_taints_and_tolerations(tolerations, allowed):
    ssn = session([queue("default"), *TAINTED, pod("p", tolerations=tolerations)], PREDICATES)
    task = next(iter(ssn.jobs["default/podgroup-default-p"].tasks.values()))
    rejected = np.zeros(len(ssn.nodes), dtype=bool)
    for failure in ssn.plugins["predicates"].predicate(ssn, task):
        rejected |= failure.nodes
    assert {n for i, n in enumerate(ssn.nodes.names) if not rejected[i]} == allowed


REASON_CASES = [
    pytest.param(
        [node("n1", taints=[Taint("dedicated", "gpu")]), node("n2", taints=[Taint("dedicated", "gpu")])],
        {},
        "2 nodes: node(s) had untolerated taint {dedicated: gpu}",
        id="shared-taint-named",
    ),
    pytest.param(
        # n2's first untolerated taint is dedicated=gpu too: the PreferNoSchedule one before it does not count
        [
            node("n1", taints=[Taint("dedicated", "gpu")]),
            node(
                "n2",
                taints=[Taint("spot", "", "PreferNoSchedule"), Taint("dedicated", "gpu"), Taint("x", "y")],
            ),
        ],
        {},
        "2 nodes: node(s) had untolerated taint {dedicated: gpu}",
        id="first-untolerated-taint-named",
    ),
    pytest.param(
        [
            node("n1", taints=[Taint("dedicated", "gpu")]),
            node("n2", taints=[Taint("maintenance", "", "NoExecute")]),
        ],
        {},
        "2 nodes: node(s) had untolerated taint(s)",
        id="different-taints-not-named",
    ),
    pytest.param(
        [node("n1", unschedulable=True), node("n2", unschedulable=True)],
        {},
        "2 nodes: node(s) were unschedulable",
        id="cordoned",
    ),
    pytest.param(
        [replace(node("n1"), ready=False), node("n2", labels={"zone": "b"})],
        {"node_selector": {"zone": "a"}},
        "1 node: node(s) didn't match Pod's node affinity/selector; 1 node: node(s) were not ready",
        id="not-ready-and-selector",
    ),
    pytest.param(
        # a node failing several filters counts once, under the first (not ready, unschedulable, affinity,
        # taints, pods)
        [
            replace(node("n1", unschedulable=True, taints=[Taint("a", "b")]), ready=False),
            node("n2", unschedulable=True, taints=[Taint("a", "b")]),
            node("n3", taints=[Taint("a", "b")]),
        ],
        {},
        "1 node: node(s) had untolerated taint {a: b}; 1 node: node(s) were not ready; "
        "1 node: node(s) were unschedulable",
        id="first-reason-wins",
    ),
    pytest.param(
        [node("n1", pods=1), pod("other", node_name="n1"), node("n2", cpu=0)],
        {},
        "1 node: insufficient cpu; 1 node: too many pods; cluster lacks cpu 1, pods 1",
        id="too-many-pods",
    ),
]


@pytest.mark.parametrize(("objects", "spec", "message"), REASON_CASES)
def test_failure_reasons(objects, spec, message):
    result = run(
        [queue("default"), *objects, podgroup("p", min_member=1), pod("p-0", "p", **spec)], PREDICATES
    )
    assert "default/p-0" not in result.binds
    assert _message(result) == message


def test_cordoned_node_accepts_pods_tolerating_unschedulable():
    toleration = Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")
    objects = [
        queue("default"),
        node("n1", unschedulable=True),
        pod("p", tolerations=(toleration,)),
        pod("q"),
    ]
    result = run(objects, PREDICATES)
    assert result.binds == {"default/p": "n1"}


def test_pod_count_fills_up_during_the_session():
    # room for 3 cpus but only 2 pods: the third finds the node full, and the reason is resolvable
    objects = [queue("default"), node("n1", cpu=8, pods=2), *gang("g", 3, cpu=1)]
    result = run(objects, PREDICATES)
    assert result.binds == {}
    assert _message(result, "default/g") == (
        "1 node: too many pods; can never fit: its 3 pods exceed the 2 pod slots of the cluster"
    )
    elastic = [queue("default"), node("n1", cpu=8, pods=2), *gang("g", 3, min_member=2, cpu=1)]
    assert len(run(elastic, PREDICATES).binds) == 2

    ssn = session(objects, PREDICATES)
    job = ssn.jobs["default/g"]
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)
    plugin = ssn.plugins["predicates"]
    assert list(plugin.predicate(ssn, tasks[0])) == []
    stmt = ssn.statement()
    stmt.allocate(tasks[0], 0)
    stmt.allocate(tasks[1], 0)
    [failure] = plugin.predicate(ssn, tasks[2])
    assert (failure.reason, failure.resolvable, failure.nodes.tolist()) == ("too many pods", True, [True])
    stmt.discard()
    assert list(plugin.predicate(ssn, tasks[2])) == []


@pytest.mark.parametrize(
    ("arguments", "binds"),
    [
        pytest.param({}, {}, id="all-enabled"),
        pytest.param({"predicate.NodeAffinityEnable": False}, {"default/p": "n2"}, id="affinity-off"),
        pytest.param({"predicate.TaintTolerationEnable": "false"}, {"default/p": "n1"}, id="taints-off"),
        pytest.param(
            {"predicate.NodePortsEnable": False, "predicate.CacheEnable": True}, {}, id="inert-options"
        ),
    ],
)
def test_filters_can_be_switched_off(arguments, binds):
    # n1 matches the selector but is tainted, n2 is clean but does not match
    objects = [
        queue("default"),
        node("n1", labels={"zone": "b"}, taints=[Taint("k", "v")]),
        node("n2", labels={"zone": "a"}),
        pod("p", node_selector={"zone": "b"}),
    ]
    plugins = [{"name": "predicates", "arguments": arguments}]
    assert run(objects, conf("allocate", ["gang"], plugins)).binds == binds


def test_static_failures_are_cached_per_signature():
    objects = [
        queue("default"),
        node("n1", labels={"zone": "a"}),
        node("n2", labels={"zone": "b"}),
        *gang("g", 2, node_selector={"zone": "a"}),
        pod("other", node_selector={"zone": "b"}),
    ]
    ssn = session(objects, PREDICATES)
    plugin = ssn.plugins["predicates"]
    first, second = ssn.jobs["default/g"].tasks.values()
    other = next(iter(ssn.jobs["default/podgroup-default-other"].tasks.values()))
    assert plugin.predicate(ssn, first) is plugin.predicate(ssn, second)
    [failure] = plugin.predicate(ssn, other)
    assert failure.nodes.tolist() == [True, False]
    with pytest.raises(ValueError):
        failure.nodes[0] = False  # shared between tasks: read-only
