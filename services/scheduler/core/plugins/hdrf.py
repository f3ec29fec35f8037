"""Hierarchical DRF (Volcano's hdrf, the `enableHierarchy` mode of the drf plugin).

Queues place themselves in a tree with the annotations `volcano.sh/hierarchy` ("root/eng/prod") and
`volcano.sh/hierarchy-weights` ("1/2/8"; weights below 1 count as 1); jobs are the leaves. A leaf's share
is its job's dominant share. An inner node scales every non-saturated child down to the smallest
non-saturated child share (so a big child does not count more than its fair part) and sums them; its share
is the dominant share of that sum. A leaf is saturated when its job got all it asked for on some
resource, or asks for a resource that is fully used; an inner node when all its children are.

Queues compare level by level along their paths: a saturated node goes after a demanding one, then the
lower share/weight goes first. The tree is a pure function of the jobs' allocations, so it is recomputed
lazily (when an order is asked after allocations changed), not on every placement as Volcano does.
Deviation: when two queues give different weights for a shared inner node, the first queue (in session
order) wins; Volcano takes whichever job its map iteration meets first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.queue import QueueInfo


def dominant_shares(allocated: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """Per row, max over resources of allocated / cluster total (resources the cluster has none of are
    ignored: `inverse` is 0 there)."""
    shares: np.ndarray = (allocated * inverse).max(axis=-1, initial=0.0)
    return shares


def _weight(weights: list[str], i: int) -> float:
    try:
        value = float(weights[i])
    except (IndexError, ValueError):
        value = 0.0
    return max(value, 1.0)


class _Group:
    __slots__ = ("allocated", "children", "leaves", "rows", "saturated", "share", "weight")

    def __init__(self, weight: float) -> None:
        self.weight = weight
        self.children: dict[str, _Group] = {}
        self.rows: list[int] = []  # leaf jobs directly under this node (rows of the drf matrix)
        self.leaves = np.empty(0, dtype=np.intp)  # the same, as an index array once the tree is built
        self.allocated: np.ndarray | None = None
        self.share = 0.0
        self.saturated = False


class HierarchicalDrf:
    def __init__(
        self, ssn: Session, rows: dict[str, int], request: np.ndarray, total: np.ndarray, inverse: np.ndarray
    ) -> None:
        """`rows`: job uid -> row of the allocation matrix; `request`: each job's total request by row
        (the leaf's demand); `total`/`inverse`: cluster totals and their inverses (0 where total is 0)."""
        self.request = request
        self.inverse = inverse
        self.available = total > 0
        self.root = _Group(1.0)
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            node = self.root
            paths = queue.hierarchy.split("/")
            weights = queue.hierarchy_weights.split("/")
            for i in range(1, len(paths)):
                child = node.children.get(paths[i])
                if child is None:
                    child = node.children[paths[i]] = _Group(_weight(weights, i))
                node = child
            node.rows.append(rows[job.uid])
        self._finalize(self.root)
        self.total = total
        self.dirty = True

    def _finalize(self, group: _Group) -> None:
        group.leaves = np.array(group.rows, dtype=np.intp)
        for child in group.children.values():
            self._finalize(child)

    # --- evaluation ------------------------------------------------------------------------------
    def evaluate(self, allocated: np.ndarray) -> None:
        """Recompute every node's share and saturation for the given per-job allocations."""
        shares = dominant_shares(allocated, self.inverse)
        demanding = self.available & (allocated.sum(axis=0) < self.total)
        request = self.request
        # a leaf is saturated on a resource it holds and asks for: it has all it asked, or none is left
        holds_and_asks = (allocated > 0) & (request != 0)
        saturated = (holds_and_asks & ((allocated >= request) | ~demanding)).any(axis=1)
        self._evaluate(self.root, allocated, shares, saturated)

    def _evaluate(
        self, group: _Group, allocated: np.ndarray, shares: np.ndarray, saturated: np.ndarray
    ) -> None:
        children = list(group.children.values())
        for child in children:
            self._evaluate(child, allocated, shares, saturated)
        rows = group.leaves
        parts = [allocated[rows].astype(np.float64)]
        child_shares = [shares[rows]]
        child_saturated = [saturated[rows]]
        if children:
            parts.append(np.array([c.allocated for c in children]))
            child_shares.append(np.array([c.share for c in children]))
            child_saturated.append(np.array([c.saturated for c in children]))
        alloc = np.concatenate(parts)
        share = np.concatenate(child_shares)
        sat = np.concatenate(child_saturated)
        nonempty = share != 0
        demanding = nonempty & ~sat
        mdr = min(1.0, float(share[demanding].min())) if demanding.any() else 1.0
        scale = np.where(sat, 1.0, mdr / np.where(nonempty, share, 1.0))
        group.allocated = (alloc[nonempty] * scale[nonempty, None]).sum(axis=0)
        group.share = float(dominant_shares(group.allocated, self.inverse))
        group.saturated = bool(sat.all())

    def refresh(self, allocated: np.ndarray) -> None:
        if self.dirty:
            self.evaluate(allocated)
            self.dirty = False

    # --- comparison --------------------------------------------------------------------------------
    def compare(self, left: QueueInfo, right: QueueInfo) -> float:
        """<0 if `left` should go first: demanding before saturated, then lower weighted share, level by
        level along both queues' paths."""
        lpaths, rpaths = left.hierarchy.split("/"), right.hierarchy.split("/")
        lnode: _Group | None = self.root
        rnode: _Group | None = self.root
        depth = min(len(lpaths), len(rpaths))
        for i in range(depth):
            if lnode is None or rnode is None:
                return 0.0
            if lnode.saturated != rnode.saturated:
                return 1.0 if lnode.saturated else -1.0
            lshare, rshare = lnode.share / lnode.weight, rnode.share / rnode.weight
            if lshare != rshare:
                return lshare - rshare
            if i < depth - 1:
                lnode = lnode.children.get(lpaths[i + 1])
                rnode = rnode.children.get(rpaths[i + 1])
        return 0.0
