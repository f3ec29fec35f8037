"""network-topology-aware: keep a job's pods inside the narrowest network domain (Volcano's plugin).

- Gradients (hard mode): breadth-first from the search root — the cluster top, or, once the job holds a
  HyperNode, the widest ancestor of it within the allowed tier — keeping HyperNodes of tier <=
  highestTierAllowed and, while nothing is allocated, whose members' idle or future-idle sum covers the
  job's minResources; grouped by tier, narrowest first. A soft-mode job is treated as hard with the
  cluster top's tier (it tries every domain, narrowest first, the whole cluster last); highestTierName
  is resolved through the HyperNodes' tierName. A hard job giving no tier searches the cluster only.
- HyperNode score: binpack of the job's pending requests over the HyperNode's members,
  sum_r w_r * (held_r + request_r) / allocatable_r / sum_r w_r (0 if any resource overflows); candidates
  tied at the top get + (job tasks already inside) / (job tasks); x 100 x weight.
- Node score, topology job: (maxTier - tier(LCA(node's lowest-tier HyperNode, job's HyperNode))) /
  (maxTier - minTier), 1 in the job's own HyperNode, 0 before the job holds one; ties at the top get the
  task-count bonus of the node's HyperNode; x 100 x weight. maxTier is the cluster top's tier, as in
  Volcano, whose tier list includes the virtual top. The job's HyperNode is the LCA of its recorded one
  and of the lowest-tier HyperNodes of its placed tasks, kept live during the session as Volcano's
  allocate keeps it per statement.
- Node score, other pods (hypernode.binpack.normal-pod.enable): sum over tiers min..top of
  fading^(tier-1) x (binpack score of the node's HyperNode of that tier, 1 if it has none), divided by
  the sum of those weights; x 100 x weight.

Deviations: the HyperNode score sums the job's pending requests (Volcano sums all of a sub-job's tasks,
counting running ones twice, once more in `used`); held resources come from the live NodeTable
(used + pipelined), so an eviction in the session does not free them until the pod is gone; with fading 0
only tier 1 weighs (Volcano's 0^-1 for a tier-0 HyperNode is infinite). lahar has no eviction-purpose
gradients (gang-preempt/gang-reclaim), so hypernode.gradient.evict.max-hypernodes is accepted and unused.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from contracts.resources import PODS
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.plugin import Event, Plugin
from services.scheduler.core.model.topology import CLUSTER_TOP
from services.scheduler.core.plugins.binpack import resource_weights
from services.scheduler.core.plugins.hypernode_index import HyperNodeIndex, JobDomains

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.task import TaskInfo

MAX_SCORE = 100


class NetworkTopologyAwarePlugin(Plugin):
    name = "network-topology-aware"
    arguments_spec: ClassVar[Mapping[str, type]] = {
        "weight": int,
        "hypernode.binpack.cpu": int,
        "hypernode.binpack.memory": int,
        "hypernode.binpack.resources": str,
        "hypernode.binpack.resources.*": int,
        "hypernode.binpack.normal-pod.enable": bool,
        "hypernode.binpack.normal-pod.fading": float,
        "hypernode.gradient.evict.max-hypernodes": int,
    }

    def on_session_open(self, ssn: Session) -> None:
        weight = argument(self.arguments, "weight", 1)
        self._scale = MAX_SCORE * (weight if weight >= 0 else 1)
        self._normal_pods = argument(self.arguments, "hypernode.binpack.normal-pod.enable", True)
        fading = argument(self.arguments, "hypernode.binpack.normal-pod.fading", 0.8)
        fading = fading if fading >= 0 else 0.8
        self._column_weight = np.full(ssn.resources.width, -1, dtype=np.int64)
        for name, value in resource_weights(self.arguments, "hypernode.binpack").items():
            col = ssn.resources.column.get(name)
            if col is not None:
                self._column_weight[col] = value
        topology = ssn.topology
        # only jobs this session places ask for gradients and domains
        topology_jobs = [job for job in ssn.owned_jobs.values() if job.network_topology is not None]
        # effective highestTierAllowed per topology job (None: no tier limit given, the cluster only)
        self._allowed = {job.uid: self._allowed_tier(ssn, job) for job in topology_jobs}
        self._node_of: dict[str, int] = {}  # where an in-session placement went (undo sees node -1)
        self._index = None if topology.empty else HyperNodeIndex(topology, ssn.nodes)
        self._jobs = None if self._index is None else JobDomains(self._index, topology_jobs)
        # per tier min..top: (weight, node -> its HyperNode row of that tier or None if the tier has no
        # HyperNode, whether every node has one there)
        top = topology.tier[CLUSTER_TOP]
        self._tiers: list[tuple[float, np.ndarray | None, bool]] = []
        for tier in range(self._index.min_tier if self._index is not None else top, top + 1):
            owner = self._index.at_tier.get(tier) if self._index is not None else None
            covered = owner is not None and bool((owner >= 0).all())
            self._tiers.append((fading ** (tier - 1) if fading else float(tier == 1), owner, covered))
        self._tier_weight_sum = sum(weight for weight, _, _ in self._tiers)

    @staticmethod
    def _allowed_tier(ssn: Session, job: JobInfo) -> int | None:
        spec = job.network_topology
        assert spec is not None
        if spec.mode == "soft":
            return ssn.topology.tier[CLUSTER_TOP]
        if spec.highest_tier_allowed is not None:
            return spec.highest_tier_allowed
        if spec.highest_tier_name in ssn.topology.tier_by_name:
            return ssn.topology.resolve_tier(None, spec.highest_tier_name)
        return None

    # --- gradients ---------------------------------------------------------------------------------
    def hypernode_gradients(self, ssn: Session, job: JobInfo) -> list[list[str]] | None:
        if job.network_topology is None:
            return None
        allowed = self._allowed.get(job.uid)
        index = self._index
        if allowed is None or index is None:
            return [[CLUSTER_TOP]]
        allocated = job.allocated_hypernode if job.allocated_hypernode in index.row else ""
        root = CLUSTER_TOP
        if allocated:
            root = ""
            for ancestor in ssn.topology.ancestors(allocated):
                if ssn.topology.tier[ancestor] > allowed:
                    break
                root = ancestor
            if not root:
                return []
        eligible = index.tier <= allowed
        if not allocated:  # once the job holds a HyperNode, Volcano skips the resource pre-filter
            eligible = eligible & self._covers_min_resources(ssn, job)
        by_tier: dict[int, list[str]] = {}
        queue, seen = deque([root]), {root}
        while queue:
            name = queue.popleft()
            row = index.row[name]
            if eligible[row]:
                by_tier.setdefault(int(index.tier[row]), []).append(name)
            for child in index.children[name]:
                if child not in seen and child in index.row:
                    seen.add(child)
                    queue.append(child)
        return [by_tier[tier] for tier in sorted(by_tier)]

    def _covers_min_resources(self, ssn: Session, job: JobInfo) -> np.ndarray | bool:
        """Per HyperNode: minResources <= idle or <= future idle of its members (Volcano's LessEqual)."""
        assert self._index is not None
        wanted = {dim: value for dim, value in (job.min_resources or {}).items() if value > 0 and dim != PODS}
        if not wanted:
            return True
        if any(dim not in ssn.resources.column for dim in wanted):
            return False
        cols = [ssn.resources.column[dim] for dim in wanted]
        return self._index.covers(cols, np.array(list(wanted.values()), dtype=np.int64))

    # --- scores ----------------------------------------------------------------------------------------
    def hypernode_order(self, ssn: Session, job: JobInfo, hypernodes: Sequence[str]) -> dict[str, float]:
        index = self._index
        if index is None:
            return dict.fromkeys(hypernodes, 0.0)
        request = sum((t.vector for t in job.pending_tasks()), np.zeros(index.width, dtype=np.int64))
        rows = np.array([index.row[name] for name in hypernodes], dtype=np.int64)
        scores = index.binpack(rows, request, self._column_weight)
        tied = np.flatnonzero(scores == scores.max()) if len(scores) else ()
        if len(tied) > 1:
            placed = [t.node_index for t in job.tasks.values() if t.node_index >= 0]
            for i in tied:
                scores[i] += index.members[rows[i], placed].sum() / len(job.tasks)
        return {name: float(score) * self._scale for name, score in zip(hypernodes, scores, strict=True)}

    def node_order(self, ssn: Session, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
        index = self._index
        if index is None:
            return np.zeros(len(candidates))
        job = ssn.jobs[task.job]
        if job.network_topology is not None:
            return self._topology_scores(job, candidates) * self._scale
        if not self._normal_pods:
            return np.zeros(len(candidates))
        per_hypernode = index.binpack(slice(None), task.vector, self._column_weight)
        total = np.zeros(len(candidates))
        for weight, owner, covered in self._tiers:
            if owner is None:  # no HyperNode of this tier: every node scores 1 there
                total += weight
            elif covered:
                total += weight * per_hypernode.take(owner.take(candidates))
            else:
                rows = owner.take(candidates)
                total += weight * np.where(rows >= 0, per_hypernode.take(rows), 1.0)
        return total / self._tier_weight_sum * self._scale

    def _topology_scores(self, job: JobInfo, candidates: np.ndarray) -> np.ndarray:
        assert self._index is not None and self._jobs is not None
        domain = self._jobs.domain(job)
        if not domain:
            return np.zeros(len(candidates))
        scores: np.ndarray = self._index.lca_tier_scores(domain)[candidates]
        tied = scores == scores.max()
        if tied.sum() > 1:  # the nodes whose HyperNode already holds more of the job's tasks
            leaves = self._index.leaf[candidates[tied]]
            counts = self._jobs.counts(job)
            scores[tied] += np.where(leaves >= 0, counts[leaves], 0) / len(job.tasks)
        return scores

    # --- live accounting ---------------------------------------------------------------------------------
    def on_allocate(self, ssn: Session, event: Event) -> None:
        if self._index is None or self._jobs is None:
            return
        node = event.task.node_index
        self._node_of[event.task.uid] = node
        self._index.sync(ssn.nodes, node)
        self._jobs.placed(event.task, node)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        if self._index is None or self._jobs is None:
            return
        node = event.task.node_index
        if node >= 0:  # evicted: the pod stays on its node as Releasing
            self._index.sync(ssn.nodes, node)
            return
        self._index.sync(ssn.nodes, self._node_of.pop(event.task.uid))
        self._jobs.removed(event.task)
