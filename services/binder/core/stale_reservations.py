"""Room that can no longer come is not held (pure): the binder's half of the scheduler's rule.

A preemption reserves room on a node for a pending pod (PodNominated) while its victims stop. The
scheduler gives a job's reservations up when one of them cannot come any more: nothing on its node is
being released and the pod still would not fit there (the node shrank, was cordoned). The binder, which
holds the same room against every other pod, applies the same rule to its ledger, so that the room the
scheduler now offers to other pods is not refused to them forever: on such a node, once nothing is being
released, every reservation of a PodGroup holding room that cannot come is voided, wherever its other
pods hold room (the scheduler gives up a job's reservations together). Voiding is a fold, so replay and
every binder instance void the same reservations at the same point of the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.binder.core.ledger import Ledger, NodeEntry


def room_cannot_come(node: NodeEntry) -> bool:
    """Its reservations hold room that will not be there: nothing on it is being released, and it is
    cordoned or holds more than it has (a resource, or a pod slot)."""
    if node.terminating or not node.reservations:
        return False
    if node.unschedulable or node.future_pods() > node.max_pods:
        return True
    return any(node.future_room(dim) < 0 for dim in node.reserved)


def stale_reservations(ledger: Ledger, name: str) -> list[str]:
    """The pods whose reservations are void because of node `name`: those on it when its room cannot
    come, and every other reserving pod of their PodGroups (sorted)."""
    node = ledger.nodes.get(name)
    if node is None or not room_cannot_come(node):
        return []
    here = set(node.reservations)
    groups = {ledger.pods[key].podgroup for key in here if key in ledger.pods} - {""}
    return sorted(
        key for key, pod in ledger.pods.items() if pod.reserving and (key in here or pod.podgroup in groups)
    )
