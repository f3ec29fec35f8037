"""What the table-driven tests of eviction on racks share (tests/unit/scheduler/actions/
test_domain_eviction.py, test_partition_eviction.py): priority classes, racks of 2-cpu nodes under one
spine, the tiers that evict by topology, a running one-pod job, a case, and the condition a job got."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.objects import NetworkTopologySpec
from services.scheduler.core.framework.plan import SessionResult
from support.builders import hypernode, node, pod, podgroup, priority_class

CLASSES = [priority_class("low", 10), priority_class("mid", 50), priority_class("high", 100)]
TIERS = (
    ["priority", {"name": "gang", "enablePreemptable": False}, "conformance"],
    ["predicates", "proportion", "network-topology-aware"],
)
HARD_1 = NetworkTopologySpec(mode="hard", highest_tier_allowed=1)


def racks(members: Mapping[str, Sequence[str]]) -> list[Any]:
    """2-cpu nodes in tier-1 racks under one tier-2 spine."""
    return [
        *(node(n, cpu=2) for names in members.values() for n in names),
        *(hypernode(rack, 1, nodes=list(names)) for rack, names in members.items()),
        hypernode("spine", 2, hypernodes=list(members)),
    ]


def running(name: str, pc: str, node_name: str, queue_name: str = "default") -> list[Any]:
    """A running one-pod job of priority class `pc` taking a whole 2-cpu node."""
    return [
        podgroup(name, priority_class=pc, queue=queue_name, phase="Running"),
        pod(f"{name}-0", name, cpu=2, node_name=node_name, priority_class=pc),
    ]


@dataclass
class Case:
    name: str
    objects: list[Any]
    evictions: set[str] = field(default_factory=set)
    pipelined: dict[str, str] = field(default_factory=dict)
    action: str = "preempt"
    condition: str = ""  # a fragment of the job's Preempting / Reclaiming condition


def condition(result: SessionResult, podgroup_key: str, kind: str) -> str:
    """The message of the PodGroup's condition of `kind`, or ""."""
    found = [c.message for c in result.podgroups[podgroup_key].conditions if c.type == kind]
    return found[0] if found else ""
