"""Plan verification: does a scheduler's plan still hold against the ledger? (pure)

A plan is one committed Statement (a gang, or a set of victims), so it is checked as a whole: the first
problem rejects all of it. Binds are checked cumulatively (two pods of the plan on one node must fit
together; the plan's binds together must stay within their queues' capabilities). Evictions do not free
anything for the binds of the same plan: an evicted pod holds its resources until it has stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.binder.core.ledger import Ledger
from services.scheduler.plans import PlanMessage


@dataclass(frozen=True, slots=True)
class Verdict:
    accepted: bool
    reason: str  # empty when accepted
    checked_seq: int  # the ledger's seq: the log position the plan was checked against


def verify(ledger: Ledger, plan: PlanMessage) -> Verdict:
    reason = (
        _duplicates(plan)
        or _binds(ledger, plan)
        or _evictions(ledger, plan)
        or _podgroups(ledger, plan)
        or _queue_capabilities(ledger, plan)
    )
    return Verdict(not reason, reason, ledger.seq)


def _duplicates(plan: PlanMessage) -> str:
    seen: set[str] = set()
    for key in plan.pod_keys():
        if key in seen:
            return f"pod {key} appears more than once in the plan"
        seen.add(key)
    return ""


def _binds(ledger: Ledger, plan: PlanMessage) -> str:
    # node -> the resources and pod slots the plan's earlier binds take there
    adding: dict[str, dict[str, int]] = {}
    slots: dict[str, int] = {}
    for bind in plan.binds:
        pod = ledger.pods.get(bind.task)
        if pod is None:
            return f"pod {bind.task} not found"
        if pod.terminating:
            return f"pod {bind.task} is terminating"
        if pod.node:
            return f"pod {bind.task} is already bound to node {pod.node}"
        if pod.phase != "Pending":
            return f"pod {bind.task} is {pod.phase}, not Pending"
        node = ledger.nodes.get(bind.node)
        if node is None:
            return f"node {bind.node} not found"
        if not node.ready:
            return f"node {bind.node} is NotReady"
        if node.unschedulable:
            return f"node {bind.node} is unschedulable"
        added = adding.setdefault(bind.node, {})
        if len(node.pods) + slots.get(bind.node, 0) >= node.max_pods:
            return f"node {bind.node} is full ({node.max_pods} pods)"
        for dim, value in pod.requests.items():
            if value <= 0:
                continue
            idle = node.allocatable.get(dim, 0) - node.used.get(dim, 0) - added.get(dim, 0)
            if value > idle:
                return f"pod {bind.task} does not fit node {bind.node}: {dim} requests {value}, {idle} idle"
        for dim, value in pod.requests.items():
            added[dim] = added.get(dim, 0) + value
        slots[bind.node] = slots.get(bind.node, 0) + 1
    return ""


def _evictions(ledger: Ledger, plan: PlanMessage) -> str:
    for eviction in plan.evictions:
        pod = ledger.pods.get(eviction.task)
        if pod is None:
            return f"pod {eviction.task} not found"
        if not pod.on_node or pod.node != eviction.node:
            where = f"on node {pod.node}" if pod.on_node else f"{pod.phase} on no node"
            return f"pod {eviction.task} is {where}, not on node {eviction.node}"
        if pod.terminating:
            return f"pod {eviction.task} is already terminating"
    return ""


def _podgroups(ledger: Ledger, plan: PlanMessage) -> str:
    for key in plan.podgroups:
        if key not in ledger.podgroups:
            return f"podgroup {key} not found"
    return ""


def _queue_capabilities(ledger: Ledger, plan: PlanMessage) -> str:
    adding: dict[str, dict[str, int]] = {}
    for bind in plan.binds:
        pod = ledger.pods[bind.task]  # _binds found every one
        total = adding.setdefault(pod.queue, {})
        for dim, value in pod.requests.items():
            total[dim] = total.get(dim, 0) + value
    for queue, added in sorted(adding.items()):
        caps = ledger.capabilities.get(queue, {})
        allocated = ledger.queue_allocated.get(queue, {})
        for dim, value in sorted(added.items()):
            if value <= 0 or dim not in caps:
                continue
            if allocated.get(dim, 0) + value > caps[dim]:
                return (
                    f"queue {queue} capability exceeded on {dim}: allocated {allocated.get(dim, 0)}"
                    f" + plan {value} > capability {caps[dim]}"
                )
    return ""
