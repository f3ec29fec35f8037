"""The binder as a Core: the ledger and liveness folded from the log, plans checked and committed (pure).

Plans do not come from the log but from the plans stream, through `submit_plan`. An accepted plan's
events are published as one atomic batch (a gang lands whole or not at all) and folded into the ledger at
once, so the next plan is checked against it before its events come back from the log; they then fold
again without effect (see ledger). Until the plan's events have come back, `reconcile` returns them
again: a crash between accepting a plan and publishing it only delays its events. One of them back is
all of them back (they were stored as one atomic batch), so the plan waits for its pod events, which
the ledger reads anyway; the binder does not read its PodGroupStatusChanged events back. A plan with
no pod event (status changes only) changes nothing in the ledger and is not kept in flight: if its
events were not stored, the plan itself comes back (it is acknowledged only once they are).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import msgpack

from contracts import payloads
from contracts.condition_payload import condition_payload
from contracts.plans import PlanMessage, PodGroupUpdate, plan_from_plain, plan_to_plain
from services.binder.core import liveness as live
from services.binder.core.ledger import (
    Ledger,
    apply_event,
    fold_fact,
    ledger_from_plain,
    ledger_to_plain,
    object_key,
    split_key,
)
from services.binder.core.verify import Verdict, verify
from shared.runner_types import Event, Output, deterministic_id

BINDER = live.BINDER


@dataclass(slots=True)
class BinderState:
    ledger: Ledger = field(default_factory=Ledger)
    liveness: live.Liveness = field(default_factory=live.Liveness)
    # accepted plans with pod events whose events have not come back from the log: plan id -> (plan,
    # the ids of its pod events)
    inflight: dict[str, tuple[PlanMessage, set[str]]] = field(default_factory=dict)
    awaited: dict[str, str] = field(default_factory=dict)  # index: output id -> plan id

    def await_plan(self, plan: PlanMessage, ids: set[str]) -> None:
        self.inflight[plan.plan_id] = (plan, ids)
        self.awaited.update((i, plan.plan_id) for i in ids)

    def arrived(self, event_id: str) -> None:
        """One of a plan's events is in the log: so are all of them (one atomic batch)."""
        pid = self.awaited.pop(event_id, None)
        if pid is None:
            return
        for other in self.inflight.pop(pid)[1]:
            self.awaited.pop(other, None)


def has_pod_events(plan: PlanMessage) -> bool:
    """The plan binds, evicts or reserves for a pod: its events change the ledger and come back to it."""
    return bool(plan.binds or plan.evictions or plan.reservations)


def plan_outputs(plan: PlanMessage, *, batch: str = "", traceparent: str | None = None) -> list[Output]:
    """An accepted plan's events, all in the atomic batch `batch` (default: the plan id), in the trace
    `traceparent` when the caller knows it: each event built once, as it is published."""
    pid = plan.plan_id
    event = _PlanEvents(pid, batch or pid, traceparent)
    return [
        *(
            event("PodBound", b.task, b.job, payloads.PodBound(node=b.node, plan=pid), b.node)
            for b in plan.binds
        ),
        *(
            event(
                "PodEvicting",
                e.task,
                e.job,
                payloads.PodEvicting(node=e.node, reason=e.reason, plan=pid),
                e.node,
            )
            for e in plan.evictions
        ),
        *(
            event(
                "PodNominated",
                r.task,
                r.job,
                payloads.PodNominated(node=r.node, reason=r.reason, plan=pid),
                r.node,
            )
            for r in plan.reservations
        ),
        *(
            event("PodGroupStatusChanged", key, key, podgroup_status(update, pid))
            for key, update in plan.podgroups.items()
        ),
    ]


@dataclass(frozen=True, slots=True)
class _PlanEvents:
    """Builds the events of one plan: every one is caused by the plan and committed in its batch."""

    plan_id: str
    batch: str
    traceparent: str | None

    def __call__(
        self, event_type: str, key: str, correlation_id: str, payload: payloads.Payload, *node: str
    ) -> Output:
        """The event about `key` (a pod, or a PodGroup for a status change); `node`: the node a pod's
        event names, part of the fact its id stands for."""
        namespace, name = split_key(key)
        return Output(
            event_type,
            "podgroup" if event_type == "PodGroupStatusChanged" else "pod",
            namespace,
            name,
            deterministic_id(BINDER, event_type, key, *node, self.plan_id),
            correlation_id,
            payload,
            causation_id=self.plan_id,
            batch=self.batch,
            traceparent=self.traceparent,
        )


def podgroup_status(update: PodGroupUpdate, plan: str) -> payloads.PodGroupStatusChanged:
    """The status a plan gives a PodGroup, as the event that commits it."""
    return payloads.PodGroupStatusChanged(
        phase=update.phase,
        conditions=tuple(condition_payload(c) for c in update.conditions),
        running=update.running,
        succeeded=update.succeeded,
        failed=update.failed,
        allocated_hypernode=update.allocated_hypernode,
        plan=plan,
    )


def committed_together(per_plan: Sequence[Sequence[Output]], most: int) -> list[Output]:
    """Several plans' outputs, in order, with the accepted plans' events merged into as few atomic
    batches of at most `most` events as possible: each plan still lands whole or not at all (a batch of
    several plans lands whole or not at all too), and a batch costs two round trips however many plans
    it holds."""
    merged: list[Output] = []
    batch, size = "", 0
    for outputs in per_plan:
        events = [o for o in outputs if o.batch is not None]
        if events and (not batch or size + len(events) > most):
            batch, size = events[0].batch or "", 0
        size += len(events)
        merged.extend(o if o.batch is None or o.batch == batch else _in_batch(o, batch) for o in outputs)
    return merged


def _in_batch(output: Output, batch: str) -> Output:
    """The output in another batch (built by position: `dataclasses.replace` costs twice as much, and
    every plan but the first of a merged batch moves all its events)."""
    o = output
    return Output(
        o.type,
        o.kind,
        o.namespace,
        o.name,
        o.id,
        o.correlation_id,
        o.payload,
        o.causation_id,
        o.expected_last_subject_seq,
        batch,
        o.traceparent,
    )


def rejection(plan: PlanMessage, verdict: Verdict) -> Output:
    """Addressed to the plan's PodGroup, so the replica that owns it (and sent the plan) sees it."""
    namespace, name = split_key(plan.subject)
    return Output(
        type="PlanRejected",
        kind="podgroup",
        namespace=namespace,
        name=name,
        id=deterministic_id(BINDER, "PlanRejected", plan.plan_id),
        correlation_id=plan.subject,
        payload=payloads.PlanRejected(
            reason=verdict.reason, checked_seq=verdict.checked_seq, plan=plan.plan_id, replica=plan.replica
        ),
        causation_id=plan.plan_id,
    )


@dataclass(frozen=True, slots=True)
class BinderCore:
    node_timeout_s: float = live.DEFAULT_NODE_TIMEOUT_S
    name: str = BINDER
    # the most events the stream commits as one atomic batch (the shell's bus says how many)
    max_plan_events: int = 1000

    def initial(self) -> BinderState:
        return BinderState()

    def apply(self, state: BinderState, event: Event) -> BinderState:
        apply_event(state.ledger, event)
        state.arrived(event.id)
        return state

    def touched(self, state: BinderState, event: Event) -> list[str]:
        """Node names: a node event changes its readiness facts; a pod event matters to liveness only on
        a NotReady node, whose remaining pods are lost."""
        if event.kind == "node":
            return [event.name]
        if event.kind == "pod":
            node = payloads.named_node(event.data)
            entry = state.ledger.nodes.get(node) if node else None
            if entry is not None and not entry.ready:
                return [node]
        return []

    def due(self, state: BinderState, now: float) -> list[str]:
        return live.stale_nodes(state.ledger, state.liveness, now, self.node_timeout_s)

    def reconcile(self, state: BinderState, now: float, keys: Collection[str] | None = None) -> list[Output]:
        """Liveness of the nodes named by keys; everything (keys None) also sends again the events of
        accepted plans that have not all come back from the log."""
        outputs = live.reconcile(state.ledger, state.liveness, now, self.node_timeout_s, keys)
        if keys is None:
            for plan, _ in state.inflight.values():
                outputs.extend(plan_outputs(plan))
        return outputs

    def submit_plan(
        self, state: BinderState, plan: PlanMessage, now: float, *, traceparent: str | None = None
    ) -> tuple[BinderState, list[Output]]:
        """Check a plan and commit it (its events, folded into the ledger now) or reject it; its outputs
        belong to the trace `traceparent` when given."""
        if plan.plan_id in state.inflight:  # redelivered while its events are on their way
            return state, []
        verdict = self._check(state, plan, now)
        if not verdict.accepted:
            return state, [replace(rejection(plan, verdict), traceparent=traceparent)]
        outputs = plan_outputs(plan, traceparent=traceparent)
        for output in outputs:
            assert isinstance(output.payload, payloads.Payload)  # plan_outputs writes typed payloads
            fold_fact(state.ledger, output.type, object_key(output.namespace, output.name), output.payload)
        if has_pod_events(plan):
            state.await_plan(plan, {o.id for o in outputs if o.kind == "pod"})
        return state, outputs

    def _check(self, state: BinderState, plan: PlanMessage, now: float) -> Verdict:
        """The ledger's verdict, and no binds to a node that went silent and is not yet marked NotReady;
        and a plan too large to commit atomically is refused rather than half committed."""
        events = len(plan.binds) + len(plan.evictions) + len(plan.reservations) + len(plan.podgroups)
        if events > self.max_plan_events:
            reason = f"plan of {events} events; at most {self.max_plan_events} commit atomically"
            return Verdict(False, reason, state.ledger.seq)
        for name in dict.fromkeys(bind.node for bind in plan.binds):  # a gang shares a few nodes
            node = state.ledger.nodes.get(name)
            if node is not None and live.is_stale(state.liveness, name, node, now, self.node_timeout_s):
                silent = now - live.last_sign_of_life(state.liveness, name, node)
                return Verdict(False, f"node {name} silent for {silent:.1f}s", state.ledger.seq)
        return verify(state.ledger, plan)

    def heartbeat(self, state: BinderState, nodes: Iterable[str], now: float) -> BinderState:
        for node in nodes:
            live.heartbeat(state.liveness, node, now)
        return state

    def watch_from(self, state: BinderState, now: float) -> BinderState:
        """Call on start-up and on taking over: heartbeats are not in the log, so the new leader has heard
        none yet and gives every node a full timeout."""
        live.watch_from(state.liveness, now)
        return state

    def deaf(self, state: BinderState, now: float) -> BinderState:
        """Call when this binder stops hearing heartbeats (its connection dropped): nobody is judged."""
        live.deaf(state.liveness, now)
        return state

    def heard_all(self, state: BinderState, now: float) -> BinderState:
        """Call when it can hear again (reconnected, or heartbeats were dropped on their way to it):
        every node's silence counts from `now`."""
        live.heard_all(state.liveness, now)
        return state

    def dump(self, state: BinderState) -> bytes:
        data = {
            "ledger": ledger_to_plain(state.ledger),
            "heartbeats": state.liveness.heartbeats,
            "watching_since": state.liveness.watching_since,
            "inflight": [[plan_to_plain(plan), sorted(ids)] for plan, ids in state.inflight.values()],
        }
        packed: bytes = msgpack.packb(data, use_bin_type=True)
        return packed

    def load(self, data: bytes) -> BinderState:
        raw: Mapping[str, Any] = msgpack.unpackb(data, raw=False, strict_map_key=False)
        state = BinderState(
            ledger=ledger_from_plain(raw["ledger"]),
            liveness=live.Liveness(dict(raw["heartbeats"]), raw["watching_since"]),
        )
        for plain, ids in raw["inflight"]:
            # A checkpoint written while every event was awaited apart may hold a plan with some back
            # (then all are) or a plan of status changes only (not kept in flight any more).
            plan = plan_from_plain(plain)
            plan_ids = {o.id for o in plan_outputs(plan) if o.kind == "pod"}
            if plan_ids and plan_ids <= set(ids):
                state.await_plan(plan, plan_ids)
        return state
