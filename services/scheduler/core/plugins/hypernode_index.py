"""The HyperNode tree of a session as numpy rows, with live resource sums per HyperNode, and where each
topology job's tasks sit (for the network-topology-aware plugin).

Row order is the topology's (tier, name) order with the virtual cluster top last. Per HyperNode the index
keeps allocatable and three live sums over its member nodes: held (used + pipelined: what Volcano's
per-HyperNode cache counts after the session's allocate events), idle and future idle. A placement or an
eviction changes one node, so `sync(node)` adds that node's change to the few HyperNodes holding it:
O(depth x dims) per event instead of re-summing thousands of nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import numpy as np

from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.nodes import NodeTable
from services.scheduler.core.model.task import TaskInfo
from services.scheduler.core.model.topology import CLUSTER_TOP, HyperNodeTopology


class HyperNodeIndex:
    __slots__ = (
        "_lca_scores",
        "_rows_of_node",
        "_snapshot",
        "allocatable",
        "at_tier",
        "children",
        "leaf",
        "members",
        "min_tier",
        "names",
        "row",
        "state",
        "tier",
        "top_tier",
        "topology",
        "width",
    )

    def __init__(self, topology: HyperNodeTopology, nodes: NodeTable) -> None:
        self.topology = topology
        self.names: list[str] = [*topology.names, CLUSTER_TOP]
        self.row = {name: i for i, name in enumerate(self.names)}
        self.tier = np.array([topology.tier[name] for name in self.names], dtype=np.int64)
        self.top_tier = topology.tier[CLUSTER_TOP]
        self.min_tier = topology.min_tier if topology.names else self.top_tier
        self.children = {name: sorted(topology.children.get(name, ())) for name in self.names}
        self.members = np.array([topology.members[name] for name in self.names], dtype=bool).reshape(
            len(self.names), len(nodes)
        )
        # per tier: node -> row of the HyperNode of that tier holding it (-1: none); the first by name wins
        # when a node sits in two of one tier, which a well-formed tree never does
        self.at_tier: dict[int, np.ndarray] = {}
        for row in range(len(self.names) - 1, -1, -1):
            tier = int(self.tier[row])
            owner = self.at_tier.setdefault(tier, np.full(len(nodes), -1, dtype=np.int64))
            owner[self.members[row]] = row
        # a node's lowest HyperNode: the one of the lowest tier holding it. Volcano looks only at the
        # lowest tier that exists (FindHyperNodeForNode), which in a mixed-depth tree leaves the nodes of
        # a shallower branch in no HyperNode at all
        self.leaf = self.at_tier[self.min_tier].copy()
        for tier in sorted(t for t in self.at_tier if t < self.top_tier)[1:]:  # not the virtual top
            missing = self.leaf < 0
            if not missing.any():
                break
            self.leaf[missing] = self.at_tier[tier][missing]
        self.width = nodes.resources.width
        self.allocatable = np.array(
            [nodes.allocatable[mask].sum(axis=0) for mask in self.members], dtype=np.int64
        ).reshape(len(self.names), self.width)
        self._snapshot = np.concatenate((nodes.used + nodes.pipelined, nodes.idle, nodes.future), axis=1)
        self.state = np.array([self._snapshot[mask].sum(axis=0) for mask in self.members], dtype=np.int64)
        self.state = self.state.reshape(len(self.names), 3 * self.width)
        self._rows_of_node: dict[int, np.ndarray] = {}
        self._lca_scores: dict[str, np.ndarray] = {}

    @property
    def held(self) -> np.ndarray:
        return self.state[:, : self.width]

    @property
    def idle(self) -> np.ndarray:
        return self.state[:, self.width : 2 * self.width]

    @property
    def future(self) -> np.ndarray:
        return self.state[:, 2 * self.width :]

    def sync(self, nodes: NodeTable, node: int) -> None:
        """Fold the node's change since the last sync into every HyperNode holding it."""
        held = nodes.used[node] + nodes.pipelined[node]
        current = np.concatenate((held, nodes.idle[node], nodes.future[node]))
        delta = current - self._snapshot[node]
        self._snapshot[node] = current
        rows = self._rows_of_node.get(node)
        if rows is None:
            rows = np.flatnonzero(self.members[:, node])
            self._rows_of_node[node] = rows
        self.state[rows] += delta

    def covers(self, cols: list[int], need: np.ndarray) -> np.ndarray:
        """Per HyperNode: `need` (on `cols`) <= idle or <= future idle of its members."""
        # arrays, one flag per row: numpy's stubs do not know these are 2-D, so they allow a scalar as well
        by_idle = cast(np.ndarray, (self.idle[:, cols] >= need).all(axis=1))
        by_future = cast(np.ndarray, (self.future[:, cols] >= need).all(axis=1))
        covered: np.ndarray = by_idle | by_future
        return covered

    def binpack(self, rows: np.ndarray | slice, request: np.ndarray, column_weight: np.ndarray) -> np.ndarray:
        """Volcano's HyperNode binpack: sum_r w_r * (held_r + request_r) / allocatable_r / sum_r w_r over the
        requested resources with a weight (-1: none), 0 where one overflows."""
        cols = np.flatnonzero((request > 0) & (column_weight >= 0))
        weights = column_weight[cols]
        weight_sum = int(weights.sum())
        if not weight_sum:
            return np.zeros(len(self.names) if isinstance(rows, slice) else len(rows))
        allocatable = self.allocatable[rows][:, cols]
        after = self.held[rows][:, cols]
        after += request[cols]
        per_resource = after / np.maximum(allocatable, 1) * weights
        overflow = after > allocatable
        # column by column: cheaper than reductions along rows of two or three resources
        score: np.ndarray
        score, over = per_resource[:, 0], overflow[:, 0]
        for j in range(1, len(cols)):
            score, over = score + per_resource[:, j], over | overflow[:, j]
        score = score / weight_sum
        score[over] = 0.0
        return score

    def lca_tier_scores(self, domain: str) -> np.ndarray:
        """Per node: (top - tier(LCA(node's lowest-tier HyperNode, domain))) / (top - min tier), 1 when
        the tiers are all one, 0 for a node in no HyperNode. Cached per domain."""
        scores = self._lca_scores.get(domain)
        if scores is None:
            lca_tier = np.full(len(self.leaf), self.top_tier, dtype=np.int64)
            for ancestor in reversed(self.topology.ancestors(domain)):  # widest first; narrower overwrite
                lca_tier[self.topology.members[ancestor]] = self.topology.tier[ancestor]
            low, high = self.min_tier, self.top_tier
            if low == high:
                scores = np.ones(len(lca_tier))
            else:
                inside = (lca_tier >= low) & (lca_tier <= high)
                scores = np.where(inside, (high - lca_tier) / (high - low), 0.0)
            scores[self.leaf < 0] = 0.0
            self._lca_scores[domain] = scores
        return scores


class JobDomains:
    """Per topology job: how many of its tasks sit in each lowest-tier HyperNode, and its effective
    HyperNode (the LCA of the recorded one and of those holding its tasks), kept live across the
    session's placements and undos."""

    __slots__ = ("_counts", "_domains", "_leaf_of_task", "index")

    def __init__(self, index: HyperNodeIndex, jobs: Iterable[JobInfo]) -> None:
        self.index = index
        self._counts: dict[str, np.ndarray] = {}
        self._leaf_of_task: dict[str, int] = {}
        self._domains: dict[str, tuple[str, str]] = {}  # job -> (recorded HyperNode, effective one)
        for job in jobs:
            self._counts[job.uid] = np.zeros(len(index.names), dtype=np.int64)
            for task in job.tasks.values():
                if task.node_index >= 0:
                    self.placed(task, task.node_index)

    def counts(self, job: JobInfo) -> np.ndarray:
        return self._counts[job.uid]

    def placed(self, task: TaskInfo, node: int) -> None:
        counts = self._counts.get(task.job)
        if counts is None or task.uid in self._leaf_of_task:  # not a topology job, or a restored eviction
            return
        leaf = int(self.index.leaf[node])
        self._leaf_of_task[task.uid] = leaf
        if leaf >= 0:
            counts[leaf] += 1
            self._domains.pop(task.job, None)

    def removed(self, task: TaskInfo) -> None:
        leaf = self._leaf_of_task.pop(task.uid, -1)
        if leaf >= 0:
            self._counts[task.job][leaf] -= 1
            self._domains.pop(task.job, None)

    def domain(self, job: JobInfo) -> str:
        cached = self._domains.get(job.uid)
        if cached is not None and cached[0] == job.allocated_hypernode:
            return cached[1]
        index = self.index
        domain = job.allocated_hypernode if job.allocated_hypernode in index.row else ""
        for row in np.flatnonzero(self._counts[job.uid]):
            domain = index.topology.lca(domain, index.names[row])
        self._domains[job.uid] = (job.allocated_hypernode, domain)
        return domain
