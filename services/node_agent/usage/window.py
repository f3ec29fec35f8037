"""Window averages of usage samples (pure: times are given).

A node agent keeps each node's and each pod's samples of the last `window_s` seconds (Volcano's and the
descheduler's `duration`, 2 minutes by default) and reports their mean beside the latest sample. Samples
come every period, so the plain mean is the time average. A pod's average counts only the samples that
saw it: a pod that started a moment ago averages what it used since, not zeros from before it ran.
`usage_entries` turns one round of samples into report entries (the node agent's and the simulator's).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from contracts.usage import MAX_PODS_PER_NODE, NodeUsage, PodUsage
from services.node_agent.usage.sources import NodeSample


@dataclass(slots=True)
class _Series:
    points: deque[tuple[float, int, int]] = field(default_factory=deque)  # (time, cpu, memory)
    cpu_sum: int = 0
    memory_sum: int = 0


class UsageWindow:
    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._series: dict[str, _Series] = {}

    def add(self, key: str, time: float, cpu: int, memory: int) -> tuple[int, int]:
        """Record a sample of `key` at `time` and return the key's averages (cpu, memory) over the
        window ending then. The sample itself is always in the window."""
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series()
        series.points.append((time, cpu, memory))
        series.cpu_sum += cpu
        series.memory_sum += memory
        oldest = time - self.window_s
        points = series.points
        while len(points) > 1 and points[0][0] <= oldest:
            _, old_cpu, old_memory = points.popleft()
            series.cpu_sum -= old_cpu
            series.memory_sum -= old_memory
        count = len(points)
        return round(series.cpu_sum / count), round(series.memory_sum / count)

    def keep(self, keys: Iterable[str]) -> None:
        """Forget every key but these (pods that ended: a pod that runs again starts a new series)."""
        kept = set(keys)
        self._series = {key: series for key, series in self._series.items() if key in kept}

    def __len__(self) -> int:
        return len(self._series)


def usage_entries(samples: Mapping[str, NodeSample], window: UsageWindow, now: float) -> list[NodeUsage]:
    """Each node's report entry for samples taken at `now` (pure but for the window it folds them into):
    the latest figures, the window's averages, its pods in key order (the MAX_PODS_PER_NODE busiest of a
    node running more)."""
    entries = []
    series = []
    for node, sample in samples.items():
        cpu_avg, memory_avg = window.add(node, now, sample.cpu_milli, sample.memory_bytes)
        series.append(node)
        pods = list(sample.pods.items())
        if len(pods) > MAX_PODS_PER_NODE:
            pods = sorted(pods, key=lambda item: (-item[1][0], -item[1][1], item[0]))[:MAX_PODS_PER_NODE]
        pod_entries = []
        for pod, (cpu, memory) in sorted(pods):
            key = f"{node}/{pod}"  # node names hold no '/': no pod of another node has the same key
            pod_cpu_avg, pod_memory_avg = window.add(key, now, cpu, memory)
            series.append(key)
            pod_entries.append(
                PodUsage(
                    pod=pod,
                    cpu_milli=cpu,
                    memory_bytes=memory,
                    cpu_avg_milli=pod_cpu_avg,
                    memory_avg_bytes=pod_memory_avg,
                )
            )
        entries.append(
            NodeUsage(
                node=node,
                time=now,
                cpu_milli=sample.cpu_milli,
                memory_bytes=sample.memory_bytes,
                cpu_avg_milli=cpu_avg,
                memory_avg_bytes=memory_avg,
                window_s=window.window_s,
                pods=tuple(pod_entries),
            )
        )
    window.keep(series)
    return entries
