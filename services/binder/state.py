"""The binder service's state: the core's (ledger, liveness, plans in flight) plus what only the shell
needs, folded from the same log and checkpointed with it (pure).

- nodes: every node's object, for the read model (the ledger keeps only what verification needs);
- answered: ids of the plans answered (committed or rejected), most recent last, so a plan delivered
  again after its events landed (its ack was lost) is acknowledged without being checked again:
  checking would reject it (its pods are bound now) and tell its replica a false story. The log answers
  them (a pod event or a PlanRejected naming the plan), except the plans of status changes only, whose
  PodGroupStatusChanged events the binder does not read back: the leader that stored their events
  remembers them (`remember_answered`), and a redelivery to another binder commits the same events
  again, which the stream's duplicate window drops;
- changed: nodes whose object changed since the read model was last written (not checkpointed: after a
  load every node counts as changed, and writing a value the read model has is a no-op).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from contracts import payloads
from contracts.events import BINDER, event_types_written_by
from services.binder.core.core import BinderCore, BinderState
from services.binder.core.ledger import LEDGER_EVENTS
from services.binder.read_model import NODE_EVENTS, NodeRecord, fold_node, nodes_from_plain, nodes_to_plain
from shared.runner_types import Event, Output

# Redeliveries come within the consumer's ack wait times its max deliveries: far fewer plans than this.
ANSWERED_KEPT = 10_000
# the events that answer a plan, each naming it
_ANSWER_PAYLOADS = (payloads.PodBound, payloads.PodEvicting, payloads.PodNominated, payloads.PlanRejected)
_ANSWERS = frozenset(cls.__name__ for cls in _ANSWER_PAYLOADS)
# Not read back: a plan's status changes are stored in the atomic batch of its pod events, which answer
# it; they change nothing in the ledger; and a plan of status changes only is answered by its publish.
# They were 40 % of the messages the binder read (a PodGroup's status changes about four times).
UNREAD_OWN_EVENTS = frozenset({"PodGroupStatusChanged"})


@dataclass(slots=True)
class BinderShellState:
    core: BinderState
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    answered: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    changed: set[str] = field(default_factory=set)


def remember_answered(state: BinderShellState, plans: Iterable[str]) -> BinderShellState:
    """Remember the plans as answered (the ANSWERED_KEPT most recent)."""
    for plan in plans:
        state.answered.setdefault(plan, None)
    while len(state.answered) > ANSWERED_KEPT:
        del state.answered[next(iter(state.answered))]
    return state


@dataclass(frozen=True, slots=True)
class BinderShellCore:
    core: BinderCore
    # the ledger's facts, the nodes' read model, the plans' answers and the binder's own events
    reads: frozenset[str] = (
        LEDGER_EVENTS | NODE_EVENTS | _ANSWERS | frozenset(event_types_written_by(BINDER))
    ) - UNREAD_OWN_EVENTS

    @property
    def name(self) -> str:
        return self.core.name

    def initial(self) -> BinderShellState:
        return BinderShellState(self.core.initial())

    def apply(self, state: BinderShellState, event: Event) -> BinderShellState:
        state.core = self.core.apply(state.core, event)
        if fold_node(state.nodes, event):
            state.changed.add(event.name)
        data = event.data
        plan = data.plan if isinstance(data, _ANSWER_PAYLOADS) else ""
        if plan:
            remember_answered(state, (plan,))
        return state

    def touched(self, state: BinderShellState, event: Event) -> list[str]:
        return self.core.touched(state.core, event)

    def due(self, state: BinderShellState, now: float) -> list[str]:
        return self.core.due(state.core, now)

    def reconcile(
        self, state: BinderShellState, now: float, keys: Collection[str] | None = None
    ) -> list[Output]:
        return self.core.reconcile(state.core, now, keys)

    def dump(self, state: BinderShellState) -> bytes:
        data = {
            "core": self.core.dump(state.core),
            "nodes": nodes_to_plain(state.nodes),
            "answered": list(state.answered),
        }
        return msgpack.packb(data, use_bin_type=True)

    def load(self, data: bytes) -> BinderShellState:
        raw: Mapping[str, Any] = msgpack.unpackb(data, raw=False, strict_map_key=False)
        nodes = nodes_from_plain(raw["nodes"])
        return BinderShellState(
            core=self.core.load(raw["core"]),
            nodes=nodes,
            answered=dict.fromkeys(raw["answered"]),
            changed=set(nodes),
        )
