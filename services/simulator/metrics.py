"""Run-level figures of a simulation: makespan, utilisation and seed 000's two fairness figures.

- job scheduling latency CV: coefficient of variation (population std / mean) of submit → Running times;
  high means some jobs were served at once while others waited long.
- node allocation CV: coefficient of variation across nodes of each node's time-averaged allocated share
  (mean over the resource dimensions the node offers); high means load piled onto some nodes.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from contracts.resources import PODS

if TYPE_CHECKING:
    from services.simulator.world import World


def coefficient_of_variation(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    if mean == 0:
        return 0.0
    return statistics.pstdev(values) / mean


class UsageRecorder:
    """Integrates allocated resources over simulated time, per node and per dimension."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.last_time = 0.0
        self.current: dict[str, dict[str, int]] = {}
        self.integral: dict[str, dict[str, float]] = {}
        self.capacity: dict[str, dict[str, int]] = {}

    def _nodes(self) -> None:
        for obj in self.world.static:
            if getattr(obj, "kind", "") == "Node" and obj.meta.name not in self.capacity:
                alloc = obj.allocatable or obj.capacity
                self.capacity[obj.meta.name] = {d: v for d, v in alloc.items() if d != PODS and v > 0}

    def sample(self, now: float) -> None:
        self._nodes()
        self._integrate(now)
        current: dict[str, dict[str, int]] = {}
        for pod in self.world.pods.values():
            if pod.status.phase == "Running" and pod.spec.node_name:
                bucket = current.setdefault(pod.spec.node_name, {})
                for dim, value in pod.spec.effective_requests().items():
                    bucket[dim] = bucket.get(dim, 0) + value
        self.current = current

    def _integrate(self, now: float) -> None:
        span = now - self.last_time
        if span > 0:
            for node, dims in self.current.items():
                acc = self.integral.setdefault(node, {})
                for dim, value in dims.items():
                    acc[dim] = acc.get(dim, 0.0) + value * span
        self.last_time = now

    def finish(self, now: float) -> None:
        self._integrate(now)

    def mean_utilisation(self, makespan: float) -> dict[str, float]:
        if makespan <= 0:
            return {}
        totals: dict[str, int] = {}
        for dims in self.capacity.values():
            for dim, value in dims.items():
                totals[dim] = totals.get(dim, 0) + value
        used: dict[str, float] = {}
        for integrals in self.integral.values():
            for dim, integral in integrals.items():
                used[dim] = used.get(dim, 0.0) + integral
        return {
            dim: round(used.get(dim, 0.0) / (total * makespan), 4) for dim, total in sorted(totals.items())
        }

    def node_allocation_cv(self, makespan: float) -> float:
        if makespan <= 0 or not self.capacity:
            return 0.0
        shares = []
        for node, dims in self.capacity.items():
            acc = self.integral.get(node, {})
            fractions = [acc.get(dim, 0.0) / (cap * makespan) for dim, cap in dims.items()]
            shares.append(statistics.fmean(fractions) if fractions else 0.0)
        return coefficient_of_variation(shares)
