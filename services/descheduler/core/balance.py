"""The balance plugins' shared machinery (pure), as the kubernetes-sigs descheduler's nodeutilization
package has it and Volcano's LoadAware copies it:

- thresholds per node: a percentage of the node's allocatable (useDeviationThresholds: around the
  cluster's average instead); a basic resource (cpu, memory, pods) the policy does not name gets 100 %
  (0 % with deviation thresholds, which then ignores it), so it never decides alone;
- a node is underutilized when every resource is at or below its threshold, overutilized when any is
  above its target;
- evicting walks the source nodes in order and, on each, its evictable pods in order, while the node is
  still above its targets (LowNodeUtilization, LoadAware) and the room left on the destination nodes
  (each one's target minus its usage, summed per resource) is positive for every resource; each eviction
  takes the pod's use off its node and off that room.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from contracts.node_fit import DEFAULT_MAX_PODS
from contracts.objects import Node
from contracts.resources import CPU, MEMORY, PODS
from services.descheduler.core.policy import BalanceArgs, Thresholds
from services.descheduler.core.view import PodRecord

BASIC = (CPU, MEMORY, PODS)
POD = 1000  # one pod, in the milli-units every resource is counted in

UNDER, OVER, NORMAL, UNKNOWN = "under", "over", "normal", "unknown"


def allocatable(node: Node, name: str) -> int:
    default = DEFAULT_MAX_PODS * POD if name == PODS else 0
    return node.allocatable.get(name, default)


@dataclass(slots=True)
class NodeInfo:
    node: Node
    usage: dict[str, int]  # milli-units, per resource the plugin judges by
    pods: list[PodRecord]
    low: dict[str, int] = field(default_factory=dict)  # thresholds, absolute
    high: dict[str, int] = field(default_factory=dict)  # targetThresholds, absolute
    over_resources: tuple[str, ...] = ()  # the resources above target when classified

    @property
    def name(self) -> str:
        return self.node.meta.name

    def percent(self, name: str, value: int | None = None) -> float:
        capacity = allocatable(self.node, name)
        amount = self.usage.get(name, 0) if value is None else value
        return 100.0 * amount / capacity if capacity else 0.0

    def is_low(self) -> bool:
        return all(self.usage.get(n, 0) <= self.low[n] for n in self.low)

    def above_target(self) -> list[str]:
        return [n for n in self.high if self.usage.get(n, 0) > self.high[n]]


def percentages(args: BalanceArgs, names: Iterable[str]) -> tuple[dict[str, float], dict[str, float]]:
    """thresholds and targets in percent, defaulted for the basic resources the policy leaves out."""
    t: Thresholds = args.thresholds
    low, high = dict(t.low), dict(t.high)
    if not high:  # HighNodeUtilization: targets are 100 % for everything
        high = {name: 100.0 for name in (*low, *BASIC)}
    default = 0.0 if t.use_deviation else 100.0
    for name in names:
        if name not in low:
            low[name] = default
            high[name] = default
    return low, high


def set_thresholds(
    infos: Sequence[NodeInfo], low: Mapping[str, float], high: Mapping[str, float], deviation: bool
) -> None:
    average: dict[str, float] = {}
    if deviation and infos:
        for name in low:
            average[name] = sum(i.percent(name) for i in infos) / len(infos)
    for info in infos:
        for name in low:
            capacity = allocatable(info.node, name)
            if deviation and low[name] == 0:
                info.low[name] = info.high[name] = capacity
            elif deviation:
                info.low[name] = int(_clamp(average[name] - low[name]) * 0.01 * capacity)
                info.high[name] = int(_clamp(average[name] + high[name]) * 0.01 * capacity)
            else:
                info.low[name] = int(low[name] * 0.01 * capacity)
                info.high[name] = int(high[name] * 0.01 * capacity)


def _clamp(percent: float) -> float:
    return min(100.0, max(0.0, percent))


def usage_rank(info: NodeInfo) -> int:
    """The descheduler's node order: memory in bytes + cpu in millicores + pods + extended resources."""
    total = 0
    for name, value in info.usage.items():
        total += value if name == CPU else value // 1000
    return total


def describe(info: NodeInfo, names: Iterable[str], bound: Mapping[str, int], relation: str) -> str:
    parts = [
        f"{name} {info.percent(name):.1f}% {relation} {info.percent(name, bound[name]):.0f}%"
        for name in names
    ]
    return ", ".join(parts)


@dataclass(slots=True)
class Room:
    """What the destination nodes can still take, summed per resource (milli-units)."""

    left: dict[str, int]

    @classmethod
    def of(cls, destinations: Iterable[NodeInfo], names: Iterable[str]) -> Room:
        left = {name: 0 for name in BASIC}
        wanted = tuple(names)
        for info in destinations:
            for name in wanted:
                left[name] = left.get(name, 0) + info.high[name] - info.usage.get(name, 0)
        return cls(left)

    def positive(self) -> bool:
        return all(value > 0 for value in self.left.values())
