"""PodGroup, Pod, HyperNode, PriorityClass and Command rules, and the PodGroup a plain pod gets."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from admission_manifests import (
    assert_problems,
    command_doc,
    container,
    context,
    hypernode_doc,
    job_doc,
    parse,
    pod_doc,
    podgroup_doc,
    priority_class_doc,
    problems,
    queue_doc,
)

from contracts.errors import ManifestError
from contracts.objects import HyperNode, HyperNodeMember, Pod, PodGroup, PriorityClass
from contracts.resources import Resources
from services.admission.core.admit import admit
from services.admission.core.hypernode_rules import unbalanced
from services.admission.core.implicit_podgroup import podgroup_for_pod
from services.admission.core.pod_rules import jdb_problem

JDB_MIN = "volcano.sh/jdb-min-available"
JDB_MAX = "volcano.sh/jdb-max-unavailable"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
CLOSED = queue_doc("closed", status={"state": "Closed"})
BOTH_TIERS = {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}

# (id, manifest, other objects in the cluster, [(path, fragment)])
CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[tuple[str, str]]]] = [
    (
        "podgroup-queue-missing",
        podgroup_doc(queue="batch"),
        [],
        [("spec.queue", "unable to find queue 'batch'")],
    ),
    (
        "podgroup-queue-closed",
        podgroup_doc(queue="closed"),
        [CLOSED],
        [("spec.queue", "queue 'closed' is Closed")],
    ),
    (
        "podgroup-both-tiers",
        podgroup_doc(networkTopology=BOTH_TIERS),
        [],
        [
            ("spec.networkTopology.highestTierName", "simultaneously"),
            ("spec.networkTopology.highestTierAllowed", "also given: spec.networkTopology.highestTierName"),
        ],
    ),
    (
        "podgroup-subgroup-both-tiers",
        podgroup_doc(subGroupPolicy=[{"name": "a"}, {"name": "b", "networkTopology": BOTH_TIERS}]),
        [],
        [
            ("spec.subGroupPolicy[1].networkTopology.highestTierName", "simultaneously"),
            (
                "spec.subGroupPolicy[1].networkTopology.highestTierAllowed",
                "also given: spec.subGroupPolicy[1].networkTopology.highestTierName",
            ),
        ],
    ),
    (
        "pod-jdb-both",
        pod_doc(annotations={JDB_MIN: "1", JDB_MAX: "1"}),
        [],
        [(f"metadata.annotations[{JDB_MAX}]", "must not be given together")],
    ),
    (
        "pod-jdb-zero",
        pod_doc(annotations={JDB_MAX: "0"}),
        [],
        [(f"metadata.annotations[{JDB_MAX}]", "positive integer, got '0'")],
    ),
    (
        "pod-jdb-percent-out-of-range",
        pod_doc(annotations={JDB_MIN: "100%"}),
        [],
        [(f"metadata.annotations[{JDB_MIN}]", "from 1% to 99%, got '100%'")],
    ),
    (
        "pod-queue-closed",
        pod_doc(annotations={QUEUE_ANNOTATION: "closed"}),
        [CLOSED],
        [(f"metadata.annotations[{QUEUE_ANNOTATION}]", "queue 'closed' is Closed")],
    ),
    (
        "pod-priority-class-missing",
        pod_doc(priorityClassName="urgent"),
        [],
        [("spec.priorityClassName", "no PriorityClass with name 'urgent'")],
    ),
    ("pod-no-containers", pod_doc(containers=[]), [], [("spec.containers", "at least one container")]),
    (
        # Volcano leaves it to another scheduler (its pod rules do not apply); here nobody would place it
        "pod-other-scheduler",
        pod_doc(annotations={JDB_MIN: "0"}, schedulerName="default-scheduler"),
        [],
        [("spec.schedulerName", "no scheduler named 'default-scheduler' serves this cluster")],
    ),
    ("pod-node-name", pod_doc(nodeName="n1"), [], [("spec.nodeName", "through its scheduler")]),
    ("hypernode-no-members", hypernode_doc(members=None), [], [("spec.members", "at least one member")]),
    (
        "hypernode-exact-name-invalid",
        hypernode_doc(members=[{"type": "Node", "selector": {"exactMatch": {"name": "-node"}}}]),
        [],
        [("spec.members[0].selector.exactMatch.name", "not a qualified name")],
    ),
    (
        "hypernode-regex-unbalanced",
        hypernode_doc(members=[{"type": "Node", "selector": {"regexMatch": {"pattern": "node-{1,2"}}}]),
        [],
        [("spec.members[0].selector.regexMatch.pattern", "unmatched curly braces")],
    ),
    (
        "priority-class-too-high",
        priority_class_doc("top", 1_000_000_001),
        [],
        [("value", "no greater than 1000000000")],
    ),
    (
        "priority-class-reserved-prefix",
        priority_class_doc("system-mine", 10),
        [],
        [("metadata.name", "'system-' name prefix is reserved")],
    ),
    (
        "priority-class-second-global-default",
        priority_class_doc("b", 10, globalDefault=True),
        [priority_class_doc("a", 5, globalDefault=True)],
        [("globalDefault", "'a' is already the global default")],
    ),
    (
        "command-target-missing",
        command_doc("AbortJob", "Job", "missing"),
        [],
        [("target.name", "Job 'default/missing' not found")],
    ),
    (
        "command-action-for-other-kind",
        command_doc("AbortJob", "Queue", "default"),
        [],
        [("action", "OpenQueue, CloseQueue, got 'AbortJob'")],
    ),
    (
        "command-unknown-target-kind",
        command_doc("AbortJob", "Node", "n1"),
        [],
        [("target.kind", "Job or Queue")],
    ),
]


@pytest.mark.parametrize(("doc", "others", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(doc: dict[str, Any], others: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    assert_problems(problems(doc, context(*others)), expected)


def test_valid_objects_pass() -> None:
    ctx = context(job_doc(), priority_class_doc("low", 1))
    valid = [
        podgroup_doc(networkTopology={"mode": "soft", "highestTierName": "spine"}),
        pod_doc(annotations={JDB_MIN: "50%"}, priorityClassName="low"),
        hypernode_doc(members=[{"type": "Node", "selector": {"regexMatch": {"pattern": r"node-\[a-(b)\]"}}}]),
        hypernode_doc(members=[{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "1"}}}}]),
        priority_class_doc("high", 1_000_000_000, globalDefault=True),
        command_doc("ResumeJob", "Job", "train"),
        command_doc("CloseQueue", "Queue", "default"),
    ]
    for doc in valid:
        assert problems(doc, ctx) == [], doc


def test_mixed_depth_hypernode_trees_pass() -> None:
    """Volcano puts no rule on its members' tiers: a tier-3 root may hold a tier-2 spine, a tier-1 rack
    and a node directly (a tree whose leaves sit at different tiers); each HyperNode is valid alone."""
    member = {"type": "HyperNode", "selector": {"exactMatch": {"name": "spine"}}}
    rack = {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-9"}}}
    node = {"type": "Node", "selector": {"exactMatch": {"name": "n9"}}}
    tree = [
        hypernode_doc("rack-9", members=[node], tier=1),
        hypernode_doc(
            "spine", members=[{"type": "Node", "selector": {"regexMatch": {"pattern": "^s-"}}}], tier=2
        ),
        hypernode_doc("root", members=[member, rack, node], tier=3),
    ]
    for doc in tree:
        assert problems(doc, context()) == [], doc


def test_hypernode_member_rules_on_objects() -> None:
    hypernode = parse(hypernode_doc(members=[{"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}]))
    assert isinstance(hypernode, HyperNode)
    broken = replace(
        hypernode,
        tier=-1,
        members=(
            HyperNodeMember(type="Rack", exact_name="n1"),
            HyperNodeMember(type="Node"),
            HyperNodeMember(type="Node", exact_name="n1", regex_pattern="n.*"),
            HyperNodeMember(type="Node", regex_pattern="a)("),
        ),
    )
    found = problems(broken)
    assert [p for p, _ in found] == [
        "spec.tier",
        "spec.members[0].type",
        "spec.members[1].selector",
        "spec.members[2].selector",
        "spec.members[3].selector.regexMatch.pattern",
    ]
    assert "got none" in found[2][1] and "got exactMatch, regexMatch" in found[3][1]
    assert "invalid" in found[4][1]


@pytest.mark.parametrize(
    ("pattern", "kinds"),
    [
        ("a(b)c", []),
        ("a(b", ["parentheses"]),
        ("[ab", ["square brackets"]),
        (r"a\(", []),
        ("{(", ["parentheses", "curly braces"]),
    ],
)
def test_unbalanced_brackets(pattern: str, kinds: list[str]) -> None:
    assert unbalanced(pattern) == kinds


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("1", True),
        ("12", True),
        ("1%", True),
        ("99%", True),
        ("0", False),
        ("0%", False),
        ("-1", False),
        ("1.5", False),
        ("%5", False),
        ("abc", False),
    ],
)
def test_disruption_budget_values(value: str, ok: bool) -> None:
    assert (jdb_problem(value) is None) is ok


def test_priority_class_value_and_policy_are_immutable() -> None:
    old = parse(priority_class_doc("high", 100))
    found = problems(priority_class_doc("high", 200, preemptionPolicy="Never"), context(), old=old)
    assert_problems(found, [("value", "may not be changed"), ("preemptionPolicy", "may not be changed")])
    assert problems(priority_class_doc("high", 100, description="d"), context(), old=old) == []


def _pod(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None, **spec: Any) -> Pod:
    doc = pod_doc(annotations=annotations, **spec)
    doc["metadata"]["labels"] = labels or {}
    doc["metadata"]["uid"] = "u1"
    pod = parse(doc)
    assert isinstance(pod, Pod)
    return pod


def test_plain_pod_gets_its_own_podgroup() -> None:
    pod = _pod(
        annotations={
            QUEUE_ANNOTATION: "batch",
            "scheduling.volcano.sh/group-min-member": "3",
            "volcano.sh/preemptable": "true",
            JDB_MAX: "1",
            "volcano.sh/network-topology-mode": "SOFT",
            "volcano.sh/network-topology-highest-tier": "2",
            "unrelated": "x",
        },
        labels={"volcano.sh/cooldown-time": "60s"},
        priorityClassName="low",
        containers=[container(cpu="2")],
    )
    pg = podgroup_for_pod(pod)
    assert isinstance(pg, PodGroup)
    assert (pg.meta.name, pg.meta.namespace) == ("podgroup-u1", "default")
    assert pg.min_member == 3
    assert pg.min_resources == Resources({"cpu": 6000})
    assert pg.queue == "batch"
    assert pg.priority_class_name == "low"
    assert dict(pg.meta.annotations) == {
        "volcano.sh/preemptable": "true",
        JDB_MAX: "1",
        "owner.lahar.dev/podgroup": "Pod/p",  # stands for Volcano's owner reference
    }
    assert dict(pg.meta.labels) == {"volcano.sh/cooldown-time": "60s"}
    assert pg.network_topology is not None
    assert (pg.network_topology.mode, pg.network_topology.highest_tier_allowed) == ("soft", 2)


def test_podgroup_for_pod_defaults() -> None:
    pg = podgroup_for_pod(_pod(annotations={"scheduling.volcano.sh/group-min-member": "many"}))
    assert pg is not None
    assert (pg.min_member, pg.queue, pg.network_topology) == (1, "default", None)
    assert pg.min_resources == Resources({"cpu": 1000})


def test_podgroup_for_pod_only_for_volcano_pods_without_a_group() -> None:
    assert podgroup_for_pod(_pod(schedulerName="default-scheduler")) is None
    assert podgroup_for_pod(_pod(annotations={"scheduling.k8s.io/group-name": "train"})) is None
    assert podgroup_for_pod(_pod(schedulerName="other"), scheduler_names=("other",)) is not None


def test_admitted_pod_names_its_podgroup_in_the_namespace_queue() -> None:
    ctx = context(queue_doc("ml"), namespace_queues={"default": "ml"})
    admitted = admit(_pod(), ctx, "doc")
    assert admitted.errors == ()
    assert admitted.podgroup is not None and admitted.podgroup.queue == "ml"
    assert admitted.object.meta.annotations["scheduling.k8s.io/group-name"] == "podgroup-u1"


def test_priority_class_parser_requires_a_value() -> None:
    with pytest.raises(ManifestError) as caught:
        parse({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}})
    assert [e.path for e in caught.value.errors] == ["value"]
    assert isinstance(parse(priority_class_doc("p", 1)), PriorityClass)
