"""Measured usage, as LoadAware reads it: per node the cpu and memory in use (averaged over the policy's
`duration`), how old the newest sample behind it is, and per pod what it uses where that is known.

The shell fills it from a usage source before a run (services/descheduler/usage_sources.py): a real
Prometheus (Volcano's queries) or the node agents' own samples. The core only reads numbers, so tests
give plain ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contracts.objects import FROZEN_EMPTY
from contracts.resources import CPU, MEMORY, Resources

MEASURED = (CPU, MEMORY)


@dataclass(frozen=True, slots=True)
class NodeLoad:
    used: Resources  # cpu and memory in use, milli-units (as every Resources)
    age_s: float = 0.0  # how old the newest sample behind `used` is
    pods: Mapping[str, Resources] = FROZEN_EMPTY  # pod key (ns/name) -> its use, where measured


def fresh(load: NodeLoad | None, stale_after_s: float) -> bool:
    """Whether a load is there and recent enough to judge its node by."""
    return load is not None and load.age_s <= stale_after_s
