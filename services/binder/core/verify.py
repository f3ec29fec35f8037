"""Plan verification: does a scheduler's plan still hold against the ledger? (pure)

A plan is one committed Statement (a gang, or a preemption: its victims and the room they free), so it
is checked as a whole: the first problem rejects all of it. Binds are checked cumulatively (two pods of
the plan on one node must fit together; the plan's binds together must stay within their queues'
capabilities). Evictions do not free anything for the binds of the same plan: an evicted pod holds its
resources until it has stopped.

Reservations (room held for a pending pod on a node, Kubernetes' nominatedNodeName) are what a
preemption's evictions are for: each must fit its node once the node's terminating pods, this plan's
victims among them, have stopped, beside every other reservation there. A bind must fit the node now and
must not take room reserved for another pod; a pod bound where it was nominated uses its own room.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contracts.plans import PlanMessage
from services.binder.core.ledger import Ledger


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
        or _reservations(ledger, plan)
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
    # node -> the resources and pod slots the plan's earlier binds take there, and the reserved room and
    # slots the plan's binds so far give back by being bound where it was reserved for them
    adding: dict[str, dict[str, int]] = {}
    slots: dict[str, int] = {}
    released: dict[str, dict[str, int]] = {}
    released_slots: dict[str, int] = {}
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
        given_back = released.setdefault(bind.node, {})
        if pod.reserving and pod.nominated == bind.node:  # its own room: bound, no longer reserved
            _add_to(given_back, pod.requests)
            released_slots[bind.node] = released_slots.get(bind.node, 0) + 1
        taken = node.future_pods() - released_slots.get(bind.node, 0) + slots.get(bind.node, 0)
        if taken >= node.max_pods:
            return f"node {bind.node}: its free pod slots are reserved ({_reserved_for(node.reservations)})"
        for dim, value in pod.requests.items():
            if value <= 0:
                continue
            idle = node.allocatable.get(dim, 0) - node.used.get(dim, 0) - added.get(dim, 0)
            if value > idle:
                return f"pod {bind.task} does not fit node {bind.node}: {dim} requests {value}, {idle} idle"
            free = node.future_room(dim) + given_back.get(dim, 0) - added.get(dim, 0)
            if value > free:
                return (
                    f"pod {bind.task} does not fit node {bind.node}: {dim} requests {value}, {free} free"
                    f" beside the room reserved ({_reserved_for(node.reservations)})"
                )
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


def _reservations(ledger: Ledger, plan: PlanMessage) -> str:
    # node -> what this plan's victims there give back (pods not terminating yet), and its reservations
    freed: dict[str, dict[str, int]] = {}
    freed_slots: dict[str, int] = {}
    for eviction in plan.evictions:
        victim = ledger.pods[eviction.task]  # _evictions found every one
        _add_to(freed.setdefault(eviction.node, {}), victim.requests)
        freed_slots[eviction.node] = freed_slots.get(eviction.node, 0) + 1
    adding: dict[str, dict[str, int]] = {}
    slots: dict[str, int] = {}
    # a pod nominated again where it already holds room gives that room back before taking it again
    for reservation in plan.reservations:
        pod = ledger.pods.get(reservation.task)
        if pod is not None and pod.reserving and pod.nominated == reservation.node:
            _add_to(freed.setdefault(reservation.node, {}), pod.requests)
            freed_slots[reservation.node] = freed_slots.get(reservation.node, 0) + 1
    for reservation in plan.reservations:
        key, name = reservation.task, reservation.node
        pod = ledger.pods.get(key)
        if pod is None:
            return f"pod {key} not found"
        if pod.node or pod.phase != "Pending" or pod.terminating:
            where = (
                f"bound to node {pod.node}" if pod.node else ("terminating" if pod.terminating else pod.phase)
            )
            return f"pod {key} is {where}: no room can be reserved for it"
        node = ledger.nodes.get(name)
        if node is None:
            return f"node {name} not found"
        if not node.ready:
            return f"node {name} is NotReady"
        if node.unschedulable:
            return f"node {name} is unschedulable"
        taken = node.future_pods() - freed_slots.get(name, 0) + slots.get(name, 0)
        if taken >= node.max_pods:
            return f"no pod slot can be reserved for pod {key} on node {name} ({node.max_pods} pods)"
        added = adding.setdefault(name, {})
        for dim, value in pod.requests.items():
            if value <= 0:
                continue
            room = node.future_room(dim) + freed.get(name, {}).get(dim, 0) - added.get(dim, 0)
            if value > room:
                return (
                    f"no room can be reserved for pod {key} on node {name}: {dim} requests {value},"
                    f" {room} free once its terminating pods stopped"
                )
        _add_to(added, pod.requests)
        slots[name] = slots.get(name, 0) + 1
    return ""


def _add_to(total: dict[str, int], requests: Mapping[str, int]) -> None:
    for dim, value in requests.items():
        total[dim] = total.get(dim, 0) + value


def _reserved_for(keys: set[str]) -> str:
    shown = sorted(keys)
    more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
    return "for " + ", ".join(shown[:3]) + more if shown else "for nobody"


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
