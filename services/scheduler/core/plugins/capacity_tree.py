"""The queue hierarchy of the capacity plugin (Volcano's hierarchical capacity queues); without
`enableHierarchy` a flat tree of the queues that have jobs.

Queues form a tree by spec.parent under `root`; a queue with no parent hangs under root. Volcano's
scheduler cache always creates a `root` queue; lahar adds a virtual one when the session has none, with no
guarantee, deserved or capability of its own. A root without capability is unlimited (users may submit
more than the cluster holds today; quotas are set on the queues below it), exactly as Volcano's.

Quotas flow top-down (Volcano's checkHierarchicalQueue): a child's deserved is raised to its guarantee; a
child without cpu or memory capability takes its parent's, and every other resource capped by the parent
is capped for the child at the parent's value unless the child names it; a child's real capability is
what its siblings' guarantees leave of the parent's real capability, plus its own guarantee, capped by its
capability. The root's guarantee and deserved are the sums of its children's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contracts.resources import CPU, EMPTY, MEMORY, PODS, Missing, Resources
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.plugins.fairness import QueueLedger, capability_limits, real_capability

ROOT = "root"
UNLIMITED = 1 << 62  # milli-units no sum of requests reaches


class InvalidHierarchy(ValueError):
    """A queue names a parent that does not exist, or parents form a cycle."""


@dataclass(slots=True)
class QueueTree:
    ledgers: dict[str, QueueLedger]  # every queue, root included
    ancestors: dict[str, tuple[str, ...]]  # root first, the queue itself excluded
    children: dict[str, list[str]]

    def is_leaf(self, name: str) -> bool:
        return not self.children[name]

    def chain(self, name: str) -> tuple[QueueLedger, ...]:
        """The queue's ledger, then its ancestors' from the parent up to root."""
        return (self.ledgers[name], *(self.ledgers[a] for a in reversed(self.ancestors[name])))

    def ancestor_at(self, name: str, depth: int) -> str | None:
        """The ancestor `depth` levels up (1: the parent), None above root."""
        ancestors = self.ancestors[name]
        return ancestors[-depth] if 0 < depth <= len(ancestors) else None

    def ancestors_within(self, name: str, levels: int) -> list[str]:
        """The queue's ancestors 1 to `levels` levels up, nearest first, root left out."""
        found = (self.ancestor_at(name, depth) for depth in range(1, levels + 1))
        return [a for a in found if a is not None and a != ROOT]

    def contested_ancestors(self, reclaimer: str, victim: str, levels: int) -> list[str]:
        """The victim queue's ancestors up to `levels` levels up (root left out) that are not the reclaimer
        queue's ancestor at the same level: where taking the victim moves resources between subtrees."""
        return [
            ancestor
            for depth in range(1, levels + 1)
            if (ancestor := self.ancestor_at(victim, depth)) not in (None, ROOT)
            and ancestor != self.ancestor_at(reclaimer, depth)
        ]

    def common_level(self, left: str, right: str) -> int:
        """Volcano's getQueueLevel: the index in the ancestor lists of the deepest shared ancestor."""
        level = 0
        for i, (a, b) in enumerate(zip(self.ancestors[left], self.ancestors[right], strict=False)):
            if a != b:
                break
            level = i
        return level


def _ancestry(name: str, parents: Mapping[str, str]) -> tuple[str, ...]:
    chain: list[str] = []
    current = parents[name]
    while current != ROOT:
        if current == name or current in chain:
            raise InvalidHierarchy(f"the parents of queue {name} form a cycle")
        chain.append(current)
        current = parents[current]
    return (ROOT, *reversed(chain))


def _inherit(capability: Resources, parent: Resources) -> Resources:
    own = dict(capability)
    for dim in (CPU, MEMORY):
        if own.get(dim, 0) <= 0:
            own[dim] = parent.get(dim, 0)
    for dim, value in parent.items():
        own.setdefault(dim, value)
    return Resources(own)


def flat_tree(queues: Iterable[QueueInfo], total: Resources, all_guarantees: Resources) -> QueueTree:
    """Without hierarchy: one ledger per queue, deserving its spec.deserved capped by its real capability
    and raised to its guarantee."""
    ledgers: dict[str, QueueLedger] = {}
    for queue in queues:
        ledger = ledgers[queue.name] = QueueLedger(queue.name, queue.guarantee, best_effort_share=1.0)
        ledger.real_capability = real_capability(
            total, all_guarantees, ledger.guarantee, capability_limits(queue.capability)
        )
        deserved = (queue.deserved or EMPTY).min_with(ledger.real_capability, Missing.INFINITY)
        ledger.set_deserved(deserved.max_with(ledger.guarantee))
    return QueueTree(ledgers, dict.fromkeys(ledgers, ()), {name: [] for name in ledgers})


def build_tree(queues: Mapping[str, QueueInfo], total: Resources) -> QueueTree:
    """Ledgers with real capability, deserved and guarantee for every queue; raises InvalidHierarchy."""
    parents: dict[str, str] = {}
    for name, queue in queues.items():
        if name != ROOT:
            parent = queue.parent or ROOT
            if parent != ROOT and parent not in queues:
                raise InvalidHierarchy(f"queue {name} has unknown parent queue {parent}")
            parents[name] = parent
    children: dict[str, list[str]] = {ROOT: [], **{name: [] for name in parents}}
    for name, parent in parents.items():
        children[parent].append(name)
    tree = QueueTree(
        ledgers={
            name: QueueLedger(name, queues[name].guarantee if name in queues else None, best_effort_share=1.0)
            for name in children
        },
        ancestors={ROOT: (), **{name: _ancestry(name, parents) for name in parents}},
        children=children,
    )
    root_queue = queues.get(ROOT)
    root_capability = root_queue.capability if root_queue is not None else None
    if not root_capability or all(v <= 0 for d, v in root_capability.items() if d != PODS):
        root_capability = Resources({CPU: UNLIMITED, MEMORY: UNLIMITED, **dict.fromkeys(total, UNLIMITED)})
    capabilities = {ROOT: root_capability}
    tree.ledgers[ROOT].real_capability = root_capability
    pending = [ROOT]
    while pending:
        name = pending.pop()
        ledger = tree.ledgers[name]
        kids = [tree.ledgers[kid] for kid in children[name]]
        guarantee, deserved = EMPTY, EMPTY
        for kid in kids:
            kid.set_deserved((queues[kid.name].deserved or EMPTY).max_with(kid.guarantee))
            capabilities[kid.name] = _inherit(queues[kid.name].capability or EMPTY, capabilities[name])
            guarantee = guarantee + kid.guarantee
            deserved = deserved + kid.deserved
        if name == ROOT:
            ledger.guarantee = guarantee
            ledger.set_deserved(deserved)
        for kid in kids:
            kid.real_capability = real_capability(
                ledger.real_capability, guarantee, kid.guarantee, capabilities[kid.name]
            )
        pending.extend(children[name])
    return tree
