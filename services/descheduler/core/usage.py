"""Measured usage, as LoadAware reads it: per node the cpu and memory in use (averaged over the policy's
`duration`), how old the newest sample behind it is, and per pod what it uses where that is known.

The shell fills it from a usage source before a run (services/descheduler/usage_sources.py): a real
Prometheus (Volcano's queries) or the node agents' own samples (`sample_load` turns one into a NodeLoad,
for the service and for the simulator, whose samples have the agents' shape). The core only reads
numbers, so tests give plain ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contracts.objects import FROZEN_EMPTY
from contracts.resources import CPU, MEMORY, Resources
from contracts.usage import NodeUsage

MEASURED = (CPU, MEMORY)


@dataclass(frozen=True, slots=True)
class NodeLoad:
    used: Resources  # cpu and memory in use, milli-units (as every Resources)
    age_s: float = 0.0  # how old the newest sample behind `used` is
    pods: Mapping[str, Resources] = FROZEN_EMPTY  # pod key (ns/name) -> its use, where measured


def fresh(load: NodeLoad | None, stale_after_s: float) -> bool:
    """Whether a load is there and recent enough to judge its node by."""
    return load is not None and load.age_s <= stale_after_s


def sample_load(sample: NodeUsage, now: float, age_s: float | None = None) -> NodeLoad:
    """A node agent's usage sample (contracts/usage.py) as a NodeLoad: its window averages of cpu
    (millicores) and memory (bytes) and its pods' averages; its age as the reader measured it (from when
    the sample arrived, on the reader's clock), else from the sample's own time."""
    used = Resources({CPU: int(sample.cpu_avg_milli), MEMORY: int(sample.memory_avg_bytes) * 1000})
    pods = {
        p.pod: Resources({CPU: int(p.cpu_avg_milli), MEMORY: int(p.memory_avg_bytes) * 1000})
        for p in sample.pods
    }
    age = max(0.0, now - float(sample.time)) if age_s is None else age_s
    return NodeLoad(used, age_s=age, pods=pods)
