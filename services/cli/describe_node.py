"""`lahar describe node` as kubectl describes a node: its labels, taints, conditions, capacity and
allocatable, the pods on it that have not finished with what they request and limit (each as a share of
the allocatable), the totals allocated, and its events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from contracts.objects import Node, Pod
from contracts.resources import EMPTY, PODS, Resources, format_quantity
from services.cli import output
from services.cli.describe_layout import NONE, fields, section, table, when
from services.cli.describe_text import identity
from services.cli.event_rows import events_section
from shared.client_reads import HistoryEntry

FINISHED = frozenset({"Succeeded", "Failed"})


def pod_limits(pod: Pod) -> Resources:
    """What a pod's containers may use at most: the sum of their limits (and the pod's overhead), as
    kubectl adds them up for a node."""
    total = EMPTY
    for container in pod.spec.containers:
        total = total + container.limits
    return total + pod.spec.overhead if total else total


def running_on(node: Node, pods: Sequence[Pod]) -> list[Pod]:
    """kubectl's "Non-terminated Pods": bound to the node and not finished."""
    found = [p for p in pods if p.spec.node_name == node.meta.name and p.status.phase not in FINISHED]
    return sorted(found, key=lambda p: (p.meta.namespace, p.meta.name))


def share(name: str, milli: int, allocatable: Mapping[str, int]) -> str:
    """ "500m (12%)": a quantity and its share of the node's allocatable (whole percent, rounded down)."""
    total = allocatable.get(name, 0)
    percent = milli * 100 // total if total > 0 else 0
    return f"{format_quantity(name, milli)} ({percent}%)"


def describe_node(node: Node, pods: Sequence[Pod], events: Sequence[HistoryEntry], now: float) -> str:
    taints = "\n".join(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in node.taints)
    pairs = identity(node.meta, "Node", namespaced=False)
    pairs += [
        ("CreationTimestamp", when(node.meta.creation_timestamp, now)),
        ("Taints", taints or NONE),
        ("Unschedulable", str(node.unschedulable).lower()),
    ]
    lines = fields(pairs)
    ready = "True" if node.ready else "False"
    reason = "heartbeats arrive" if node.ready else "heartbeats stopped"
    lines += section("Conditions", table(("Type", "Status", "Reason"), [("Ready", ready, reason)]))
    lines += section(
        "Capacity", fields((name, format_quantity(name, v)) for name, v in sorted(node.capacity.items()))
    )
    allocatable = node.allocatable
    lines += section(
        "Allocatable", fields((name, format_quantity(name, v)) for name, v in sorted(allocatable.items()))
    )
    on_node = running_on(node, pods)
    rows = []
    requested, limited = EMPTY, EMPTY
    for pod in on_node:
        requests, limits = pod.spec.effective_requests(), pod_limits(pod)
        requested, limited = requested + requests, limited + limits
        rows.append(
            (
                pod.meta.namespace,
                pod.meta.name,
                share("cpu", requests.get("cpu"), allocatable),
                share("cpu", limits.get("cpu"), allocatable),
                share("memory", requests.get("memory"), allocatable),
                share("memory", limits.get("memory"), allocatable),
                output.age(pod.meta.creation_timestamp, now),
            )
        )
    headers = ("Namespace", "Name", "CPU Requests", "CPU Limits", "Memory Requests", "Memory Limits", "Age")
    lines.append(f"Non-terminated Pods:  ({len(on_node)} in total)")
    lines += ["  " + line for line in table(headers, rows)] if rows else []
    dimensions = sorted({"cpu", "memory"} | {n for n in (*allocatable, *requested, *limited) if n != PODS})
    totals = [
        (n, share(n, requested.get(n), allocatable), share(n, limited.get(n), allocatable))
        for n in dimensions
    ]
    lines.append("Allocated resources:")
    lines.append("  (Total limits may be over 100 percent, i.e., overcommitted.)")
    lines += ["  " + line for line in table(("Resource", "Requests", "Limits"), totals)]
    lines.append(events_section(events, now, about=f"node/{node.meta.name}"))
    return "\n".join(lines)
