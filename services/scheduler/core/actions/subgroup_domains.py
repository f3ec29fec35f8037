"""Where one sub-group (a partition) may go inside its job's HyperNode: the candidate HyperNodes grouped
by tier, narrowest first, and their scores (Volcano's sub-job gradients and HyperNode order).

- Allowed tier: a hard sub-group's highestTierAllowed (or its highestTierName resolved through the
  HyperNodes' tierName); a soft one is searched as hard with the cluster top's tier (narrowest first,
  the job's whole domain last); one without networkTopology, or hard without a tier, is not confined
  below its job's domain.
- Search root: the job's domain; once the sub-group has placed pods, the widest ancestor of their LCA
  within the allowed tier, intersected with the job's domain (none: the sub-group cannot grow there).
- Candidates: the root's subtree of tier <= allowed; while nothing of the sub-group is placed, only
  HyperNodes whose members' idle or future-idle sum covers the requests of its waiting pods (for
  preempt and reclaim, `evicting`: whose members' allocatable sum covers them, since victims free the
  rest).
- Score: binpack of its waiting pods' cpu and memory over a candidate's members,
  mean_r (held_r + request_r) / allocatable_r, 0 if a resource overflows; candidates tied at the top
  get + (its pods already inside) / (its pods); x 100.

Mixed-depth trees (leaves at different tiers) need nothing special: tiers are read per HyperNode and a
node's lowest HyperNode is whichever holds it with the lowest tier.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from contracts.resources import PODS
from services.scheduler.core.model.topology import CLUSTER_TOP

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.subgroups import SubGroup

MAX_SCORE = 100
_BINPACK_DIMS = ("cpu", "memory")


def allowed_tier(ssn: Session, group: SubGroup) -> int | None:
    """The widest tier the sub-group may span; None: not confined below its job's domain."""
    spec = group.network_topology
    top = ssn.topology.tier[CLUSTER_TOP]
    if spec is None:
        return None
    if spec.mode == "soft":
        return top
    if spec.highest_tier_allowed is not None:
        return spec.highest_tier_allowed
    if spec.highest_tier_name:
        # a tier name no HyperNode carries confines it to nothing: it cannot be placed
        return ssn.topology.tier_by_name.get(spec.highest_tier_name, -1)
    return None


def placed_domain(ssn: Session, group: SubGroup) -> str:
    """The LCA of the lowest HyperNodes holding the sub-group's placed pods ("" when none is placed)."""
    domain = ""
    for node in group.nodes():
        domain = ssn.topology.lca(domain, ssn.topology.leaf_of_node(node))
    return domain


def _search_root(ssn: Session, within: str, allowed: int, placed: str) -> str | None:
    if not placed:
        return within
    topology = ssn.topology
    widest = ""
    for ancestor in topology.ancestors(placed):
        if topology.tier[ancestor] > allowed:
            break
        widest = ancestor
    if not widest:
        return None
    meet = topology.lca(within, widest)
    if meet == widest:  # the sub-group's reach lies inside the job's domain: the job's domain bounds it
        return within
    if meet == within:
        return widest
    return None


def gradients(ssn: Session, group: SubGroup, within: str, *, evicting: bool = False) -> list[list[str]]:
    """Candidate HyperNodes for the sub-group inside `within` (the job's domain), by tier, narrowest
    first. [[within]] when it is not confined."""
    allowed = allowed_tier(ssn, group)
    if allowed is None or ssn.topology.empty:
        return [[within]]
    placed = placed_domain(ssn, group)
    root = _search_root(ssn, within, allowed, placed)
    if root is None:
        return []
    need = None if placed else _request(ssn, group)
    topology = ssn.topology
    by_tier: dict[int, list[str]] = {}
    queue, seen = deque([root]), {root}
    while queue:
        name = queue.popleft()
        tier = topology.tier[name]
        if tier <= allowed and (need is None or _covers(ssn, name, need, evicting=evicting)):
            by_tier.setdefault(tier, []).append(name)
        for child in sorted(topology.children.get(name, ())):
            if child not in seen and child in topology.tier:
                seen.add(child)
                queue.append(child)
    return [by_tier[tier] for tier in sorted(by_tier)]


def _request(ssn: Session, group: SubGroup) -> np.ndarray:
    total = np.zeros(ssn.resources.width, dtype=np.int64)
    for task in group.waiting():
        total += task.vector
    return total


def _covers(ssn: Session, name: str, need: np.ndarray, *, evicting: bool) -> bool:
    cols = [c for c in np.flatnonzero(need > 0) if ssn.resources.names[c] != PODS]
    if not cols:
        return True
    members = ssn.topology.members[name]
    nodes = ssn.nodes
    if evicting:
        return bool((nodes.allocatable[members][:, cols].sum(axis=0) >= need[cols]).all())
    idle = nodes.idle[members][:, cols].sum(axis=0)
    future = nodes.future_idle()[members][:, cols].sum(axis=0)
    return bool((idle >= need[cols]).all() or (future >= need[cols]).all())


def scores(ssn: Session, group: SubGroup, names: list[str]) -> dict[str, float]:
    """Binpack of the sub-group's waiting pods over each candidate; ties at the top broken by how many
    of its pods a candidate already holds."""
    request = _request(ssn, group)
    cols = [
        ssn.resources.column[dim]
        for dim in _BINPACK_DIMS
        if dim in ssn.resources.column and request[ssn.resources.column[dim]] > 0
    ]
    nodes = ssn.nodes
    out: dict[str, float] = {}
    for name in names:
        if not cols:
            out[name] = 0.0
            continue
        members = ssn.topology.members[name]
        allocatable = nodes.allocatable[members][:, cols].sum(axis=0)
        held = (nodes.used[members] + nodes.pipelined[members])[:, cols].sum(axis=0) + request[cols]
        overflow = bool((held > allocatable).any())
        out[name] = 0.0 if overflow else float((held / np.maximum(allocatable, 1)).mean())
    if len(out) > 1:
        top = max(out.values())
        placed = group.nodes()
        for name, score in out.items():
            if score == top and placed:
                inside = int(ssn.topology.members[name][placed].sum())
                out[name] = score + inside / len(group.tasks)
    return {name: score * MAX_SCORE for name, score in out.items()}
