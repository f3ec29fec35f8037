"""Whether a pod may run on a node, one node at a time: Kubernetes' nodeSelector, required node affinity
and taint rules, and a fit of the pod's requests into what the node has left (pure).

The scheduler evaluates the same rules as numpy masks over every node of a session
(services/scheduler/core/plugins/node_selectors.py, predicates.py); a service that asks about a few
nodes (the descheduler's nodeFit) reads them here. Both follow Kubernetes: an invalid requirement (In
without values, Gt with a non-integer, a matchFields key other than metadata.name) makes its term match
no node, and an empty term matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from contracts.objects import (
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    PodSpec,
    SelectorRequirement,
    Taint,
    Toleration,
)
from contracts.resources import PODS, Resources

HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
DEFAULT_MAX_PODS = 110  # a node that reports no `pods` allocatable holds Kubernetes' default
_INT64 = re.compile(r"^[+-]?\d+$")  # strconv.ParseInt: no spaces, no underscores
NODE_NAME_FIELD = "metadata.name"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' Toleration.ToleratesTaint: an empty effect matches every effect, an empty key matches
    every key (with Exists), Equal compares values."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def untolerated_taint(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> Taint | None:
    """The first NoSchedule or NoExecute taint the tolerations leave untolerated (None: all tolerated)."""
    held = tuple(tolerations)
    return next((t for t in taints if t.effect in HARD_EFFECTS and not tolerated(held, t)), None)


def requirement_matches(req: SelectorRequirement, labels: Mapping[str, str]) -> bool | None:
    """A label requirement against a node's labels; None when the requirement is invalid."""
    op, values = req.operator, req.values
    value = labels.get(req.key)
    if op in ("In", "NotIn"):
        if not values:
            return None
        hit = value is not None and value in values
        return hit if op == "In" else not hit
    if op in ("Exists", "DoesNotExist"):
        if values:
            return None
        return (value is not None) == (op == "Exists")
    if op in ("Gt", "Lt"):
        if len(values) != 1 or not _INT64.match(values[0]):
            return None
        if value is None or not _INT64.match(value):
            return False
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
    return None


def field_matches(req: SelectorRequirement, node_name: str) -> bool | None:
    """matchFields: only metadata.name with In/NotIn and exactly one value is valid (as Kubernetes)."""
    if req.key != NODE_NAME_FIELD or req.operator not in ("In", "NotIn") or len(req.values) != 1:
        return None
    hit = node_name == req.values[0]
    return hit if req.operator == "In" else not hit


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    """Every requirement of the term holds; an empty or invalid term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    for req in term.match_expressions:
        if requirement_matches(req, node.meta.labels) is not True:
            return False
    return all(field_matches(req, node.meta.name) is True for req in term.match_fields)


def affinity_matches(affinity: NodeAffinity | None, node: Node) -> bool:
    """Required node affinity: its terms are ORed; none required: every node."""
    if affinity is None or affinity.required is None:
        return True
    return any(term_matches(term, node) for term in affinity.required)


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A pod's nodeSelector: every key=value pair is among the node's labels."""
    return all(labels.get(key) == value for key, value in selector.items())


def placement_problems(spec: PodSpec, node: Node) -> list[str]:
    """Why the pod's placement constraints refuse the node (empty: they allow it): its nodeSelector and
    required affinity, the node's NoSchedule/NoExecute taints, and the node being cordoned."""
    problems = []
    if not selector_matches(spec.node_selector, node.meta.labels) or not affinity_matches(
        spec.node_affinity, node
    ):
        problems.append("node(s) didn't match Pod's node affinity/selector")
    taint = untolerated_taint(spec.tolerations, node.taints)
    if taint is not None:
        problems.append(f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")
    if node.unschedulable:
        problems.append("node(s) were unschedulable")
    return problems


def request_problems(requests: Resources, node: Node, requested: Mapping[str, int], pods: int) -> list[str]:
    """Why the node has no room for `requests` beside what its pods already request (`requested`, milli-
    units) and their count: every requested resource within what is left, and one pod slot free."""
    problems = []
    for name, value in sorted(requests.items()):
        if name == PODS or value <= 0:
            continue
        left = node.allocatable.get(name, 0) - requested.get(name, 0)
        if value > left:
            problems.append(f"insufficient {name}")
    if pods >= max_pods(node):
        problems.append("too many pods")
    return problems


def max_pods(node: Node) -> int:
    """The pods the node may hold (its `pods` allocatable, a count)."""
    return node.allocatable.get(PODS, DEFAULT_MAX_PODS * 1000) // 1000
