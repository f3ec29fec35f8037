"""The HyperNode tree resolved against the session's nodes.

Tier 1 is the closest domain (e.g. a rack's switch); higher tiers are wider. A virtual top HyperNode with
tier max+1 contains every node, so "anywhere in the cluster" is just another domain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from contracts.label_selector import requirement_matches
from contracts.objects import HyperNode, HyperNodeMember, LabelSelector
from services.scheduler.core.model.nodes import NodeTable

CLUSTER_TOP = "<cluster>"


def label_selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    return all(requirement_matches(r, labels) for r in selector.match_expressions)


class HyperNodeTopology:
    __slots__ = ("children", "max_tier", "members", "min_tier", "names", "parent", "tier", "tier_by_name")

    def __init__(self) -> None:
        self.members: dict[str, np.ndarray] = {}  # name -> bool mask over nodes (transitive)
        self.tier: dict[str, int] = {}
        self.parent: dict[str, str] = {}
        self.children: dict[str, list[str]] = {}
        self.tier_by_name: dict[str, int] = {}
        self.names: list[str] = []
        self.min_tier = 1
        self.max_tier = 1

    @classmethod
    def build(cls, hypernodes: Sequence[HyperNode], nodes: NodeTable) -> HyperNodeTopology:
        topo = cls()
        count = len(nodes)
        by_name = {h.meta.name: h for h in hypernodes}
        direct_nodes: dict[str, np.ndarray] = {}
        for hn in hypernodes:
            topo.tier[hn.meta.name] = hn.tier
            if hn.tier_name:
                topo.tier_by_name[hn.tier_name] = hn.tier
            mask = np.zeros(count, dtype=bool)
            kids: list[str] = []
            for member in hn.members:
                if member.type == "Node":
                    mask |= _match_nodes(member, nodes)
                else:
                    kids.extend(_match_hypernodes(member, by_name))
            direct_nodes[hn.meta.name] = mask
            topo.children[hn.meta.name] = kids
            for kid in kids:
                topo.parent.setdefault(kid, hn.meta.name)

        def resolve(name: str, seen: frozenset[str]) -> np.ndarray:
            if name in topo.members:
                return topo.members[name]
            mask = direct_nodes.get(name, np.zeros(count, dtype=bool)).copy()
            for kid in topo.children.get(name, []):
                if kid not in seen:  # a cycle in user input must not hang the scheduler
                    mask |= resolve(kid, seen | {name})
            topo.members[name] = mask
            return mask

        for name in by_name:
            resolve(name, frozenset())
        tiers = sorted(topo.tier.values()) or [0]
        topo.min_tier, topo.max_tier = tiers[0], tiers[-1]
        top_tier = topo.max_tier + 1
        topo.tier[CLUSTER_TOP] = top_tier
        topo.members[CLUSTER_TOP] = np.ones(count, dtype=bool)
        topo.children[CLUSTER_TOP] = [n for n in by_name if n not in topo.parent]
        for root in topo.children[CLUSTER_TOP]:
            topo.parent[root] = CLUSTER_TOP
        topo.names = sorted(by_name, key=lambda n: (topo.tier[n], n))
        return topo

    @property
    def empty(self) -> bool:
        return not self.names

    def ancestors(self, name: str) -> list[str]:
        """`name` and every HyperNode above it, narrowest first, ending with the cluster top."""
        chain = [name]
        while chain[-1] in self.parent and self.parent[chain[-1]] not in chain:
            chain.append(self.parent[chain[-1]])
        if chain[-1] != CLUSTER_TOP:
            chain.append(CLUSTER_TOP)
        return chain

    def lca(self, left: str, right: str) -> str:
        if not left:
            return right
        if not right:
            return left
        above = set(self.ancestors(left))
        for name in self.ancestors(right):
            if name in above:
                return name
        return CLUSTER_TOP

    def leaf_of_node(self, node_index: int) -> str:
        """The lowest-tier HyperNode containing the node."""
        for name in self.names:
            if self.members[name][node_index]:
                return name
        return CLUSTER_TOP

    def resolve_tier(self, highest_tier_allowed: int | None, highest_tier_name: str) -> int:
        if highest_tier_name:
            return self.tier_by_name.get(highest_tier_name, self.max_tier + 1)
        if highest_tier_allowed is None:
            return self.max_tier + 1
        return highest_tier_allowed


def _match_nodes(member: HyperNodeMember, nodes: NodeTable) -> np.ndarray:
    count = len(nodes)
    if member.exact_name:
        mask = np.zeros(count, dtype=bool)
        index = nodes.index.get(member.exact_name)
        if index is not None:
            mask[index] = True
        return mask
    if member.regex_pattern:
        pattern = re.compile(member.regex_pattern)
        return np.array([bool(pattern.search(n)) for n in nodes.names], dtype=bool)
    if member.label_selector is not None:
        selector = member.label_selector
        return np.array([label_selector_matches(selector, labels) for labels in nodes.labels], dtype=bool)
    return np.zeros(count, dtype=bool)


def _match_hypernodes(member: HyperNodeMember, by_name: Mapping[str, HyperNode]) -> list[str]:
    if member.exact_name:
        return [member.exact_name] if member.exact_name in by_name else []
    if member.regex_pattern:
        pattern = re.compile(member.regex_pattern)
        return [n for n in by_name if pattern.search(n)]
    return []
