"""Kubernetes node selection semantics (nodeSelector, node affinity terms, taints and tolerations) as boolean
masks over a session's NodeTable. Shared by the predicates and nodeorder plugins.

Labels and taints never change inside a session, so every lookup is built once: a label key becomes an
integer column (one code per distinct value, -1 where the label is absent) and the nodes are grouped by
their exact taint list, so matching a requirement or a toleration set costs a few numpy operations over
codes instead of a Python loop over nodes.

Invalid requirements follow Kubernetes: a term holding one (In without values, Gt with a non-integer,
an unsupported field selector...) matches no node; the other terms of the selector still count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

from contracts.node_fit import HARD_EFFECTS, tolerated
from contracts.objects import NodeSelectorTerm, SelectorRequirement, Taint, Toleration
from services.scheduler.core.model.nodes import NodeTable

PREFER_NO_SCHEDULE = "PreferNoSchedule"
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

_INT64 = re.compile(r"^[+-]?\d+$")  # strconv.ParseInt: no spaces, no underscores
_NODE_NAME_FIELD = "metadata.name"


def _parse_int(text: str) -> int | None:
    return int(text) if _INT64.match(text) else None


class NodeIndex:
    """Static per-session lookups over the nodes' labels and taints, built lazily."""

    __slots__ = ("_labels", "_taint_codes", "_taint_groups", "nodes")

    def __init__(self, nodes: NodeTable) -> None:
        self.nodes = nodes
        self._labels: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self._taint_codes: np.ndarray | None = None
        self._taint_groups: list[tuple[Taint, ...]] = []

    # --- labels -------------------------------------------------------------------------------------
    def label_column(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Per node the code of its value for label `key` (-1: no such label), and value -> code."""
        column = self._labels.get(key)
        if column is None:
            vocabulary: dict[str, int] = {}
            codes = np.fromiter(
                (
                    vocabulary.setdefault(labels[key], len(vocabulary)) if key in labels else -1
                    for labels in self.nodes.labels
                ),
                dtype=np.int64,
                count=len(self.nodes),
            )
            column = (codes, vocabulary)
            self._labels[key] = column
        return column

    def node_selector_mask(self, selector: Iterable[tuple[str, str]]) -> np.ndarray:
        """Nodes whose labels hold every key=value pair of a pod's nodeSelector."""
        mask = np.ones(len(self.nodes), dtype=bool)
        for key, value in selector:
            codes, vocabulary = self.label_column(key)
            mask &= codes == vocabulary.get(value, -2)
        return mask

    def requirement_mask(self, req: SelectorRequirement) -> np.ndarray | None:
        """Nodes matching a label requirement; None if the requirement is invalid."""
        op, values = req.operator, req.values
        codes, vocabulary = self.label_column(req.key)
        if op in ("In", "NotIn"):
            if not values:
                return None
            wanted = [vocabulary[v] for v in values if v in vocabulary]
            hit = np.isin(codes, wanted) if wanted else np.zeros(len(codes), dtype=bool)
            return hit if op == "In" else ~hit
        if op in ("Exists", "DoesNotExist"):
            if values:
                return None
            return codes >= 0 if op == "Exists" else codes < 0
        if op in ("Gt", "Lt"):
            bound = _parse_int(values[0]) if len(values) == 1 else None
            if bound is None:
                return None
            # one comparison per distinct value; a value that is not an integer matches nothing
            by_code = np.zeros(len(vocabulary) + 1, dtype=bool)  # last slot: label absent (code -1)
            for value, code in vocabulary.items():
                number = _parse_int(value)
                by_code[code] = number is not None and (number > bound if op == "Gt" else number < bound)
            matched: np.ndarray = by_code[codes]
            return matched
        return None

    def field_mask(self, req: SelectorRequirement) -> np.ndarray | None:
        """matchFields: only metadata.name with In/NotIn and exactly one value is valid (as Kubernetes)."""
        if req.key != _NODE_NAME_FIELD or req.operator not in ("In", "NotIn") or len(req.values) != 1:
            return None
        hit = np.zeros(len(self.nodes), dtype=bool)
        index = self.nodes.index.get(req.values[0])
        if index is not None:
            hit[index] = True
        return hit if req.operator == "In" else ~hit

    def term_mask(self, term: NodeSelectorTerm) -> np.ndarray:
        """Nodes matching every requirement of a term; an empty or invalid term matches nothing."""
        mask = np.zeros(len(self.nodes), dtype=bool)
        if not term.match_expressions and not term.match_fields:
            return mask
        mask[:] = True
        for req in term.match_expressions:
            hit = self.requirement_mask(req)
            if hit is None:
                return np.zeros(len(self.nodes), dtype=bool)
            mask &= hit
        for req in term.match_fields:
            hit = self.field_mask(req)
            if hit is None:
                return np.zeros(len(self.nodes), dtype=bool)
            mask &= hit
        return mask

    def terms_mask(self, terms: Sequence[NodeSelectorTerm]) -> np.ndarray:
        """Required node affinity: the terms are ORed (no terms: no node)."""
        mask = np.zeros(len(self.nodes), dtype=bool)
        for term in terms:
            mask |= self.term_mask(term)
        return mask

    # --- taints -------------------------------------------------------------------------------------
    def taint_groups(self) -> tuple[np.ndarray, list[tuple[Taint, ...]]]:
        """Per node the index of its taint list among the distinct taint lists of the cluster."""
        if self._taint_codes is None:
            groups: dict[tuple[Taint, ...], int] = {}
            self._taint_codes = np.fromiter(
                (groups.setdefault(taints, len(groups)) for taints in self.nodes.taints),
                dtype=np.int64,
                count=len(self.nodes),
            )
            self._taint_groups = list(groups)
        return self._taint_codes, self._taint_groups

    def untolerated(self, tolerations: Sequence[Toleration]) -> tuple[np.ndarray, set[tuple[str, str]]]:
        """Nodes with a NoSchedule/NoExecute taint the tolerations do not tolerate, and the (key, value)
        of the first such taint of each of them (what Kubernetes names in its reason)."""
        codes, groups = self.taint_groups()
        failing = np.zeros(len(groups), dtype=bool)
        named: set[tuple[str, str]] = set()
        for g, taints in enumerate(groups):
            for taint in taints:
                if taint.effect in HARD_EFFECTS and not tolerated(tolerations, taint):
                    failing[g] = True
                    named.add((taint.key, taint.value))
                    break
        return failing[codes], named

    def intolerable_preferred(self, tolerations: Sequence[Toleration]) -> np.ndarray:
        """Per node, how many PreferNoSchedule taints the tolerations (with effect PreferNoSchedule or
        none) leave untolerated (Kubernetes' TaintToleration score before normalisation)."""
        codes, groups = self.taint_groups()
        soft = [t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
        counts = np.array(
            [
                sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not tolerated(soft, t))
                for taints in groups
            ],
            dtype=np.int64,
        )
        per_node: np.ndarray = counts[codes]
        return per_node
