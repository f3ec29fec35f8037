"""The binder's check for `lahar bench core` with several replicas: a gang's binds land only if every pod
still fits its node (resources and pod count) next to what earlier plans committed, all or nothing.
Sessions of different replicas work from the same snapshot, so two of them may give the same room away;
the second plan is refused, as the real binder refuses it (services/binder)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from contracts.objects import Pod
from contracts.resources import Resources
from services.scheduler.core.framework.plan import Plan
from services.scheduler.core.model.node_base import NodeBase


class BenchBinder:
    def __init__(self, base: NodeBase) -> None:
        self.base = base
        self.free = base.allocatable.copy()
        self.pods = base.max_pods.copy()  # pods each node may still take
        self._vectors: dict[Resources, np.ndarray] = {}

    def commit(self, plan: Plan, pods: Mapping[str, Pod]) -> bool:
        """Take the plan's binds if all fit (`pods`: the pods by key, for their requests)."""
        need: dict[int, tuple[np.ndarray, int]] = {}
        for bind in plan.binds:
            requests = pods[bind.task].spec.effective_requests()
            vector = self._vectors.get(requests)
            if vector is None:
                vector = self._vectors[requests] = self.base.resources.vector(requests)
            node = self.base.index[bind.node]
            total, count = need.get(node, (0, 0))
            need[node] = (vector + total, count + 1)
        if any((self.free[n] < v).any() or self.pods[n] < c for n, (v, c) in need.items()):
            return False
        for node, (vector, count) in need.items():
            self.free[node] -= vector
            self.pods[node] -= count
        return True
