"""Where a node agent's usage samples come from, one source per runtime.

- sim: a running pod uses what its `lahar.dev/sim-usage` annotation says, else its requests (per
  dimension, contracts/usage.py); a hollow node uses the sum of its pods (nothing else runs there).
- process: process_usage.py (each pod's process tree, the machine's own cpu and memory).

A source's `sample()` returns, for each of the agent's nodes, the cpu (milli-cores) and memory (bytes) it
uses now and the same for every pod running on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from contracts.objects import Pod
from contracts.usage import simulated_usage


@dataclass(frozen=True, slots=True)
class NodeSample:
    cpu_milli: int
    memory_bytes: int
    pods: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # pod key -> (cpu, memory)


class UsageSource(Protocol):
    def sample(self) -> dict[str, NodeSample]: ...


# (node, pod) of every pod whose containers run on one of the agent's nodes
RunningPods = Callable[[], Iterable[tuple[str, Pod]]]


class SimUsageSource:
    def __init__(self, nodes: Sequence[str], running: RunningPods) -> None:
        self.nodes = tuple(nodes)
        self.running = running

    def sample(self) -> dict[str, NodeSample]:
        pods: dict[str, dict[str, tuple[int, int]]] = {node: {} for node in self.nodes}
        for node, pod in self.running():
            on_node = pods.get(node)
            if on_node is not None:
                on_node[pod.meta.key] = pod_sim_usage(pod)
        return {
            node: NodeSample(
                sum(cpu for cpu, _ in used.values()), sum(memory for _, memory in used.values()), used
            )
            for node, used in pods.items()
        }


def pod_sim_usage(pod: Pod) -> tuple[int, int]:
    """A simulated pod's (cpu milli-cores, memory bytes); a malformed annotation counts as absent (the
    sim runtime refuses to start such a pod, so only a pod started before the check could have one)."""
    try:
        return simulated_usage(pod.meta.annotations, pod.spec.effective_requests())
    except ValueError:
        return simulated_usage({}, pod.spec.effective_requests())
