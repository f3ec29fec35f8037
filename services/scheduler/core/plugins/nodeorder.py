"""nodeorder: Kubernetes' node scorers, each normalised to [0, 100] and weighted (Volcano's nodeorder).

Integer arithmetic follows kube-scheduler so ties (broken at random by the allocate action) appear where
they appear in Kubernetes:
- LeastAllocated (cpu, memory, equal weights): per resource ((allocatable - requested) * 100) //
  allocatable, 0 when over; averaged with floor. `requested` = what the node holds + the pod.
- MostAllocated (cpu, memory, weights 1): requested * 100 // allocatable (requested capped), averaged.
- BalancedAllocation (cpu, memory, and nvidia.com/gpu when the pod requests it): fractions capped at 1,
  score trunc((1 - std) * 100); two fractions use |a - b| / 2; skipped for best-effort pods.
- NodeAffinity: sum of the weights of the matching preferred terms, scaled to 100 by the best candidate.
- TaintToleration: number of PreferNoSchedule taints the pod does not tolerate, reverse-scaled (fewest
  wins 100).
Resources of a node: allocatable columns; what it holds = used + pipelined, since Volcano's scorers read
the Kubernetes NodeInfo, which receives every pod placed in the session, reservations included. A
node's resource scores for a request are kept through the session once computed, and computed again
only after the node changed (kept_scores.py, node_scores.py): the same numbers, at a fraction of the
calls.

Deviations:
- Kubernetes counts a container without a cpu/memory request as 100m / 200Mi ("non-zero requested")
  for LeastAllocated and MostAllocated; lahar's NodeTable holds real requests only, so such pods count 0.
- podaffinity.weight, podtopologyspread.weight and imagelocality.weight are accepted but score nothing:
  lahar pods carry no inter-pod affinity or spread constraints (and no Service/ReplicaSet selects them for
  Kubernetes' default spreading), and lahar nodes report no cached images.
- An invalid preferred term (In without values, ...) matches nothing instead of failing the pod's scoring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, cast

import numpy as np

from contracts.objects import PreferredSchedulingTerm, Toleration
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.plugin import Event, Plugin
from services.scheduler.core.plugins.kept_scores import KeptScores
from services.scheduler.core.plugins.node_scores import (
    MAX_SCORE,
    balanced_allocation_one,
    least_allocated_one,
    most_allocated_one,
)
from services.scheduler.core.plugins.node_selectors import NodeIndex

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.task import TaskInfo

GPU = "nvidia.com/gpu"
_WEIGHTS = {
    "leastrequested.weight": 1,
    "mostrequested.weight": 0,
    "nodeaffinity.weight": 2,
    "podaffinity.weight": 2,
    "balancedresource.weight": 1,
    "tainttoleration.weight": 3,
    "imagelocality.weight": 1,
    "podtopologyspread.weight": 2,
}


def _mean(per_resource: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Kubernetes' equal-weight average over cpu and memory (columns), floored; a resource the node has
    none of is left out (`valid` None: every candidate has both)."""
    mean: np.ndarray
    if valid is None:
        mean = (per_resource[:, 0] + per_resource[:, 1]) // 2
        return mean
    counted = np.where(valid, per_resource, 0)
    mean = (counted[:, 0] + counted[:, 1]) // np.maximum(valid[:, 0].astype(np.int64) + valid[:, 1], 1)
    return mean


def least_allocated(held: np.ndarray, allocatable: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    divisor = allocatable if valid is None else np.maximum(allocatable, 1)
    return _mean(np.maximum(allocatable - held, 0) * MAX_SCORE // divisor, valid)


def most_allocated(held: np.ndarray, allocatable: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    divisor = allocatable if valid is None else np.maximum(allocatable, 1)
    return _mean(np.minimum(held, allocatable) * MAX_SCORE // divisor, valid)


def balanced_allocation(fractions: list[np.ndarray], valid: list[np.ndarray] | None) -> np.ndarray:
    """trunc((1 - std of the usage fractions) * 100), in Kubernetes' order of operations so that
    truncation ties come out the same; a resource the node has none of is left out."""
    if valid is None:
        if len(fractions) == 2:
            std = np.abs(fractions[0] - fractions[1]) / 2
        else:
            mean = sum(fractions) / len(fractions)
            std = np.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
        score: np.ndarray = np.trunc((1 - std) * MAX_SCORE)
        return score
    pairs = list(zip(fractions, valid, strict=True))
    # an array: `valid` is never empty (one entry per scored resource)
    count = cast(np.ndarray, sum(v.astype(np.int64) for v in valid))
    high = np.maximum.reduce([np.where(v, f, -np.inf) for f, v in pairs])
    low = np.minimum.reduce([np.where(v, f, np.inf) for f, v in pairs])
    std = np.where(count == 2, (high - low) / 2, 0.0)
    if (count > 2).any():
        n = np.maximum(count, 1)
        mean = sum(np.where(v, f, 0.0) for f, v in pairs) / n
        spread = sum(np.where(v, (f - mean) * (f - mean), 0.0) for f, v in pairs) / n
        std = np.where(count > 2, np.sqrt(spread), std)
    score = np.trunc((1 - std) * MAX_SCORE)
    return score


def normalise(raw: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Kubernetes' DefaultNormalizeScore over the candidates (integer scaling to the best one)."""
    top = raw.max() if len(raw) else 0
    if top == 0:
        return np.full(len(raw), MAX_SCORE if reverse else 0, dtype=np.int64)
    scaled = MAX_SCORE * raw // top
    return MAX_SCORE - scaled if reverse else scaled


class NodeOrderPlugin(Plugin):
    name = "nodeorder"
    arguments_spec: ClassVar[Mapping[str, type]] = dict.fromkeys(_WEIGHTS, int)

    def on_session_open(self, ssn: Session) -> None:
        weights = {key: argument(self.arguments, key, default) for key, default in _WEIGHTS.items()}
        self._least = weights["leastrequested.weight"]
        self._most = weights["mostrequested.weight"]
        self._balanced = weights["balancedresource.weight"]
        self._affinity_weight = weights["nodeaffinity.weight"]
        self._taint_weight = weights["tainttoleration.weight"]
        self._index = NodeIndex(ssn.nodes)
        # static per-node raw scores, per preferred-term tuple and per toleration tuple
        self._preferred: dict[tuple[PreferredSchedulingTerm, ...], np.ndarray] = {}
        self._intolerable: dict[tuple[Toleration, ...], np.ndarray] = {}
        # Contiguous copies of the scored columns (cpu and memory; gpus apart), the held ones kept live by
        # the allocate/deallocate events: gathering rows of a small contiguous matrix is several times
        # cheaper than fancy-indexing columns of the NodeTable on every call.
        nodes = ssn.nodes
        self._gpu = ssn.resources.column.get(GPU)
        self._node_of: dict[str, int] = {}  # where an in-session placement went (undo sees node -1)
        self._allocatable = np.ascontiguousarray(nodes.allocatable[:, :2])
        self._held = np.ascontiguousarray(nodes.used[:, :2] + nodes.pipelined[:, :2])
        self._everywhere = bool((self._allocatable > 0).all())
        if self._gpu is not None:
            self._allocatable_gpu = nodes.allocatable[:, self._gpu].copy()
            self._held_gpu = nodes.used[:, self._gpu] + nodes.pipelined[:, self._gpu]
            self._everywhere_gpu = bool((self._allocatable_gpu > 0).all())
        self._kept = KeptScores(len(nodes))

    def node_order(self, ssn: Session, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
        vector = task.vector
        if self._least or self._most or self._balanced:
            # the resource scores depend on the request and on what each node holds: kept per request
            gpu = int(vector[self._gpu]) if self._gpu is not None else 0
            key = (int(vector[0]), int(vector[1]), gpu)
            scores = self._kept.take(
                key,
                candidates,
                lambda rows: self._resource_scores(vector, rows),
                lambda row: self._resource_score_at(vector, row),
            )
        else:
            scores = np.zeros(len(candidates), dtype=np.float64)
        spec = task.pod.spec
        if self._affinity_weight and spec.node_affinity is not None and spec.node_affinity.preferred:
            raw = self._preferred_scores(spec.node_affinity.preferred)
            scores += self._affinity_weight * normalise(raw.take(candidates))
        if self._taint_weight:
            intolerable = self._intolerable.get(spec.tolerations)
            if intolerable is None:
                intolerable = self._index.intolerable_preferred(spec.tolerations)
                # empty: no node has a PreferNoSchedule taint this pod minds, every node scores the maximum
                intolerable = intolerable if intolerable.any() else intolerable[:0]
                self._intolerable[spec.tolerations] = intolerable
            if len(intolerable):
                scores += self._taint_weight * normalise(intolerable.take(candidates), reverse=True)
            else:
                scores += self._taint_weight * MAX_SCORE
        return scores

    def scores_every_resource_of_every_node(self) -> bool:
        """Whether every node has cpu, memory and (when the cluster has any) gpus: the scorers then skip
        their check of which resources a node has."""
        return self._everywhere and (self._gpu is None or self._everywhere_gpu)

    def _resource_scores(self, vector: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The weighted resource scores of the node `rows` for a pod asking `vector`."""
        scores = np.zeros(len(rows), dtype=np.float64)
        allocatable = self._allocatable.take(rows, axis=0)
        held = self._held.take(rows, axis=0)
        held += vector[:2]
        valid = None if self._everywhere else allocatable > 0
        if self._least:
            scores += self._least * least_allocated(held, allocatable, valid)
        if self._most:
            scores += self._most * most_allocated(held, allocatable, valid)
        gpu = self._gpu is not None and vector[self._gpu] > 0
        # Kubernetes skips balance for best-effort pods (kubernetes#129138)
        if self._balanced and (gpu or vector[0] or vector[1]):
            scores += self._balanced * self._balance(held, allocatable, valid, rows, vector if gpu else None)
        return scores

    def _resource_score_at(self, vector: np.ndarray, row: int) -> float:
        """`_resource_scores` of one row, step for step in plain Python (node_scores.py)."""
        allocatable = self._allocatable[row].tolist()
        own = self._held[row].tolist()
        held = [own[0] + int(vector[0]), own[1] + int(vector[1])]
        valid = None if self._everywhere else [allocatable[0] > 0, allocatable[1] > 0]
        score = 0.0
        if self._least:
            score += self._least * least_allocated_one(held, allocatable, valid)
        if self._most:
            score += self._most * most_allocated_one(held, allocatable, valid)
        gpu = self._gpu is not None and vector[self._gpu] > 0
        if self._balanced and (gpu or vector[0] or vector[1]):
            divisors = allocatable if valid is None else [max(a, 1) for a in allocatable]
            fractions = [min(h / d, 1.0) for h, d in zip(held, divisors, strict=True)]
            checks = None if valid is None else list(valid)
            if gpu:
                capacity = int(self._allocatable_gpu[row])
                used = int(self._held_gpu[row]) + int(vector[self._gpu])
                fractions.append(min(used / max(capacity, 1), 1.0))
                if checks is not None or not self._everywhere_gpu:
                    checks = [*(checks or [True, True]), capacity > 0]
            score += self._balanced * balanced_allocation_one(fractions, checks)
        return score

    def _balance(
        self,
        held: np.ndarray,
        allocatable: np.ndarray,
        valid: np.ndarray | None,
        candidates: np.ndarray,
        gpu_request: np.ndarray | None,
    ) -> np.ndarray:
        """BalancedAllocation over cpu and memory, and over gpus when the pod requests some."""
        shares = np.minimum(held / (allocatable if valid is None else np.maximum(allocatable, 1)), 1.0)
        fractions = [shares[:, 0], shares[:, 1]]
        checks = None if valid is None else [valid[:, 0], valid[:, 1]]
        if gpu_request is not None:
            capacity = self._allocatable_gpu.take(candidates)
            used = self._held_gpu.take(candidates) + gpu_request[self._gpu]
            fractions.append(np.minimum(used / np.maximum(capacity, 1), 1.0))
            if checks is not None or not self._everywhere_gpu:
                everywhere = np.ones(len(candidates), dtype=bool)
                checks = [*(checks or [everywhere, everywhere]), capacity > 0]
        return balanced_allocation(fractions, checks)

    def _preferred_scores(self, terms: tuple[PreferredSchedulingTerm, ...]) -> np.ndarray:
        raw = self._preferred.get(terms)
        if raw is None:
            raw = np.zeros(len(self._index.nodes), dtype=np.int64)
            for term in terms:
                if term.weight:
                    raw += term.weight * self._index.term_mask(term.preference)
            self._preferred[terms] = raw
        return raw

    # --- live accounting ---------------------------------------------------------------------------------
    def on_allocate(self, ssn: Session, event: Event) -> None:
        node = event.task.node_index
        self._node_of[event.task.uid] = node
        self._sync(ssn, node)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        node = event.task.node_index
        self._sync(ssn, node if node >= 0 else self._node_of.pop(event.task.uid))

    def _sync(self, ssn: Session, node: int) -> None:
        nodes = ssn.nodes
        self._held[node] = nodes.used[node, :2] + nodes.pipelined[node, :2]
        if self._gpu is not None:
            self._held_gpu[node] = nodes.used[node, self._gpu] + nodes.pipelined[node, self._gpu]
        self._kept.changed(node)
