"""The binder's ledger: the authoritative accounting of nodes, pods and queues, folded from the log.

Usage is derived from each pod's record: a pod on a node in an active phase uses that node's resources
and one of its pod slots; one that is also not terminating counts in its queue's allocation (as in the
scheduler, whose idle and queue figures leave Releasing pods out), and a terminating one counts in the
node's `releasing` too (what the node will have back once it stopped). A pending pod nominated to a node
(PodNominated: room a preemption freed for it) holds that room in the node's `reserved`, and a future pod
slot, until it is bound, or until that room cannot come any more (stale_reservations.py). Every change
removes the pod's old contribution and adds the new one, so folding the same fact twice (the binder's
optimistic application of its own outputs, then the same event from the log) changes nothing the second
time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from contracts import payloads
from contracts.job_shape import DEFAULT_QUEUE, GROUP_NAME, QUEUE_NAME_ANNOTATION
from contracts.objects import Node, Queue
from contracts.payloads import ObjectPayload, Payload, decode_as
from contracts.resources import CPU, MEMORY, PODS
from services.binder.core.object_facts import PodFacts, PodGroupFacts, facts
from services.binder.core.stale_reservations import stale_reservations
from shared.runner_types import Event

DEFAULT_MAX_PODS = 110
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
T = TypeVar("T")
Handler = Callable[["Ledger", str, Payload], None]


@dataclass(slots=True)
class NodeEntry:
    allocatable: dict[str, int]
    max_pods: int
    ready: bool = True
    unschedulable: bool = False
    used: dict[str, int] = field(default_factory=dict)
    pods: set[str] = field(default_factory=set)  # keys of the pods using it
    registered_at: float = 0.0
    # seqs of the events that last made it Ready and NotReady: they name liveness facts (output ids)
    ready_seq: int = 0
    not_ready_seq: int = 0
    releasing: dict[str, int] = field(default_factory=dict)  # requests of its terminating pods
    terminating: set[str] = field(default_factory=set)  # keys of its terminating pods
    reserved: dict[str, int] = field(default_factory=dict)  # requests of the pods nominated to it
    reservations: set[str] = field(default_factory=set)  # keys of the pods nominated to it

    def future_room(self, dim: str) -> int:
        """What is left of `dim` once its terminating pods stopped and its reservations are bound."""
        in_use = self.used.get(dim, 0) - self.releasing.get(dim, 0) + self.reserved.get(dim, 0)
        return self.allocatable.get(dim, 0) - in_use

    def future_pods(self) -> int:
        """Pod slots taken once its terminating pods stopped and its reservations are bound."""
        return len(self.pods) - len(self.terminating) + len(self.reservations)


@dataclass(slots=True)
class PodEntry:
    requests: dict[str, int]
    queue: str
    podgroup: str
    node: str = ""
    phase: str = "Pending"  # as created, until its run ended (the ledger does not read PodRunning)
    terminating: bool = False
    nominated: str = ""  # the node whose room is reserved for it (PodNominated), until it is bound

    @property
    def on_node(self) -> bool:
        return bool(self.node) and self.phase not in FINISHED_PHASES

    @property
    def reserving(self) -> bool:
        """It holds its nominated node's room: pending, unbound and not being deleted."""
        return bool(self.nominated) and not self.node and self.phase == "Pending" and not self.terminating

    @property
    def allocated(self) -> bool:
        return self.on_node and not self.terminating


@dataclass(slots=True)
class Ledger:
    seq: int = 0  # the last event folded: what a verdict was checked against
    nodes: dict[str, NodeEntry] = field(default_factory=dict)
    pods: dict[str, PodEntry] = field(default_factory=dict)
    podgroups: dict[str, str] = field(default_factory=dict)  # key -> queue
    # queue -> the dimensions its capability caps; queues without a cap are absent
    capabilities: dict[str, dict[str, int]] = field(default_factory=dict)
    queue_allocated: dict[str, dict[str, int]] = field(default_factory=dict)


def object_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str | None, str]:
    namespace, _, name = key.rpartition("/")
    return namespace or None, name


def capped_dimensions(queue: Queue) -> dict[str, int]:
    """Volcano reads cpu or memory <= 0 in a capability as unlimited; other named dimensions are caps."""
    return {d: v for d, v in (queue.capability or {}).items() if not (d in (CPU, MEMORY) and v <= 0)}


# --- folding -------------------------------------------------------------------------------------------


def apply_event(ledger: Ledger, event: Event) -> None:
    ledger.seq = max(ledger.seq, event.seq)
    node_handler = _NODE_EVENTS.get(event.type)
    if node_handler is not None:
        node_handler(ledger, event)
    elif event.type in _FACTS:  # (the binder reads its own PodGroupStatusChanged, which changes nothing)
        fold_fact(ledger, event.type, object_key(event.namespace, event.name), event.data)


def fold_fact(ledger: Ledger, event_type: str, key: str, data: Payload) -> None:
    """Fold an event that does not depend on its seq or time (the binder's own outputs are among them)."""
    handler = _FACTS.get(event_type)
    if handler is None:
        return
    if event_type not in _ENDS_A_RUN:
        handler(ledger, key, data)
        return
    pod = ledger.pods.get(key)
    handler(ledger, key, data)
    if pod is not None and pod.node:  # the node may have stopped releasing: is its reserved room gone?
        _void_stale(ledger, pod.node)


def _void_stale(ledger: Ledger, node: str) -> None:
    """Drop the reservations whose room cannot come any more (stale_reservations.py)."""
    for key in stale_reservations(ledger, node):
        pod = ledger.pods[key]
        _account(ledger, key, pod, -1)
        pod.nominated = ""
        _account(ledger, key, pod, +1)


def _account(ledger: Ledger, key: str, pod: PodEntry, sign: int) -> None:
    """Add (sign +1) or remove (-1) what the pod holds: on its node (on_node), in its queue (allocated),
    or on the node it is nominated to (reserving). Each property is read once here (a pod on a node is
    never reserving): every event about a pod accounts it twice."""
    requests, terminating = pod.requests, pod.terminating
    if pod.node:
        if pod.phase in FINISHED_PHASES:
            return
        node = ledger.nodes.get(pod.node)
        if node is not None:
            _add(node.used, requests, sign)
            _member(node.pods, key, sign)
            if terminating:
                _add(node.releasing, requests, sign)
                _member(node.terminating, key, sign)
        if not terminating:
            _add(ledger.queue_allocated.setdefault(pod.queue, {}), requests, sign)
    elif pod.nominated and pod.phase == "Pending" and not terminating:
        node = ledger.nodes.get(pod.nominated)
        if node is not None:
            _add(node.reserved, requests, sign)
            _member(node.reservations, key, sign)


def _member(keys: set[str], key: str, sign: int) -> None:
    if sign > 0:
        keys.add(key)
    else:
        keys.discard(key)


def _add(total: dict[str, int], requests: Mapping[str, int], sign: int) -> None:
    for dim, value in requests.items():
        total[dim] = total.get(dim, 0) + sign * value


def _set_pod(ledger: Ledger, key: str, pod: PodEntry | None) -> None:
    old = ledger.pods.pop(key, None)
    if old is not None:
        _account(ledger, key, old, -1)
    if pod is not None:
        ledger.pods[key] = pod
        _account(ledger, key, pod, +1)


def _change_pod(*, places: bool = False, **changes: Any) -> Handler:
    """A handler setting the given fields of a known pod; `places`: the event's node is where the pod is
    (a bind)."""

    def handle(ledger: Ledger, key: str, data: Payload) -> None:
        pod = ledger.pods.get(key)
        if pod is None:
            return
        _account(ledger, key, pod, -1)
        if places:
            assert isinstance(data, payloads.PodBound), f"a {type(data).__name__} does not place a pod"
            pod.node = data.node
            pod.nominated = ""  # bound: its reservation, wherever it was, is used or void
        for name, value in changes.items():
            setattr(pod, name, value)
        _account(ledger, key, pod, +1)

    return handle


def _report(**changes: Any) -> Handler:
    """A report about a pod's run (PodSucceeded, PodFailed, PodLost) changes the pod only
    when it is about its current run: it names the node the pod is bound to and the run has not ended.
    A late report about a run PodLost gave up, or about an earlier generation of the pod name (created
    again unbound), changes nothing: it would put a lost pod back on its node, or mark the new generation
    finished so that it could never be bound (docs/reliability.md, "A late report after PodLost")."""
    change = _change_pod(**changes)

    def handle(ledger: Ledger, key: str, data: Payload) -> None:
        pod = ledger.pods.get(key)
        if pod is not None and about_current_run(pod, payloads.named_node(data)):
            change(ledger, key, data)

    return handle


def about_current_run(pod: PodEntry, node: str) -> bool:
    return bool(node) and node == pod.node and pod.phase not in FINISHED_PHASES


def _pod_terminated(ledger: Ledger, key: str, data: Payload) -> None:
    """The run stopped: the pod is gone, unless the report names another node than the pod's (an earlier
    run's, after which the pod was created again)."""
    pod = ledger.pods.get(key)
    if pod is not None and pod.node == payloads.named_node(data):
        _set_pod(ledger, key, None)


def _pod_nominated(ledger: Ledger, key: str, data: Payload) -> None:
    """A new nomination replaces the pod's earlier one; a pod bound or gone meanwhile keeps none."""
    pod = ledger.pods.get(key)
    assert isinstance(data, payloads.PodNominated), f"a {type(data).__name__} nominates no node"
    if pod is None or pod.node:
        return
    _account(ledger, key, pod, -1)
    pod.nominated = data.node
    _account(ledger, key, pod, +1)


def _pod_created(ledger: Ledger, key: str, data: Payload) -> None:
    assert isinstance(data, payloads.PodCreated), f"a {type(data).__name__} creates no pod"
    pod = facts(data.object, PodFacts)  # what the ledger reads of the pod, not the whole Pod
    annotations = pod.meta.annotations
    group = annotations.get(GROUP_NAME, "")
    podgroup = f"{pod.meta.namespace}/{group}" if group else ""
    queue = ledger.podgroups.get(podgroup) or annotations.get(QUEUE_NAME_ANNOTATION, DEFAULT_QUEUE)
    entry = PodEntry(
        requests=pod.requests,
        queue=queue,
        podgroup=podgroup,
        node=pod.spec.node_name,
        phase=pod.status.phase,
        terminating=pod.meta.deletion_timestamp is not None,
    )
    _set_pod(ledger, key, entry)


def _podgroup_created(ledger: Ledger, key: str, data: Payload) -> None:
    assert isinstance(data, payloads.PodGroupCreated), f"a {type(data).__name__} creates no PodGroup"
    ledger.podgroups[key] = facts(data.object, PodGroupFacts).queue


def _queue_applied(ledger: Ledger, key: str, data: Payload) -> None:
    queue = _object(data, Queue)
    caps = capped_dimensions(queue)
    if caps:
        ledger.capabilities[key] = caps
    else:
        ledger.capabilities.pop(key, None)


def _forget(table: dict[str, Any], key: str) -> None:
    table.pop(key, None)


def _object(data: Payload, cls: type[T]) -> T:
    """The API object an object-carrying payload holds (its kind was checked when it was decoded)."""
    assert isinstance(data, ObjectPayload), f"a {type(data).__name__} holds no object"
    return decode_as(data.object, cls)


# the events after which a pod no longer stops on its node (it ended, or is gone)
_ENDS_A_RUN = frozenset({"PodSucceeded", "PodFailed", "PodLost", "PodTerminated"})

_FACTS: Mapping[str, Handler] = {
    "QueueApplied": _queue_applied,
    "QueueDeleted": lambda ledger, key, _: _forget(ledger.capabilities, key),
    "PodGroupCreated": _podgroup_created,
    "PodGroupDeleted": lambda ledger, key, _: _forget(ledger.podgroups, key),
    "PodCreated": _pod_created,
    "PodBound": _change_pod(places=True),
    # PodRunning is not read: a bound pod holds its node's room alike whether its containers started or
    # not, and nothing the binder decides tells Pending from Running once a pod is bound (a bind checks
    # the node first); reading it cost a decoded message per gang and a folded event per pod
    "PodSucceeded": _report(phase="Succeeded"),
    "PodFailed": _report(phase="Failed"),
    # the node's processes are gone with it (Kubernetes' pod GC marks such pods Failed, NodeLost)
    "PodLost": _report(phase="Failed"),
    "PodEvicting": _change_pod(terminating=True),
    "PodNominated": _pod_nominated,
    "PodDeletionRequested": _change_pod(terminating=True),
    "PodTerminated": _pod_terminated,
}


def _node_registered(ledger: Ledger, event: Event) -> None:
    node = _object(event.data, Node)
    allocatable = dict(node.allocatable or node.capacity)
    entry = ledger.nodes.get(event.name)
    if entry is None:  # a re-registration keeps the usage of the pods already there
        entry = ledger.nodes[event.name] = NodeEntry(allocatable, 0)
    entry.allocatable = allocatable
    entry.max_pods = allocatable.get(PODS, DEFAULT_MAX_PODS * 1000) // 1000
    entry.ready = node.ready
    entry.unschedulable = node.unschedulable
    entry.registered_at = event.time
    if node.ready:
        entry.ready_seq = event.seq
    _void_stale(ledger, event.name)  # it may have shrunk or been cordoned under its reservations


def _node_ready(ledger: Ledger, event: Event) -> None:
    entry = ledger.nodes.get(event.name)
    if entry is not None:
        entry.ready = True
        entry.ready_seq = event.seq


def _node_not_ready(ledger: Ledger, event: Event) -> None:
    entry = ledger.nodes.get(event.name)
    if entry is not None:
        entry.ready = False
        entry.not_ready_seq = event.seq


_NODE_EVENTS: Mapping[str, Callable[[Ledger, Event], None]] = {
    "NodeRegistered": _node_registered,
    "NodeReady": _node_ready,
    "NodeNotReady": _node_not_ready,
}

# every event type the ledger folds
LEDGER_EVENTS = frozenset(_FACTS) | frozenset(_NODE_EVENTS)


# --- checkpoint form -----------------------------------------------------------------------------------


def ledger_to_plain(ledger: Ledger) -> dict[str, Any]:
    return {
        "seq": ledger.seq,
        "nodes": {name: _row(entry) for name, entry in ledger.nodes.items()},
        "pods": {key: _row(entry) for key, entry in ledger.pods.items()},
        "podgroups": ledger.podgroups,
        "capabilities": ledger.capabilities,
        "queue_allocated": ledger.queue_allocated,
    }


def ledger_from_plain(data: Mapping[str, Any]) -> Ledger:
    ledger = Ledger(
        seq=data["seq"],
        nodes={name: _node_from_row(row) for name, row in data["nodes"].items()},
        pods={key: PodEntry(*row) for key, row in data["pods"].items()},
        podgroups=dict(data["podgroups"]),
        capabilities={q: dict(caps) for q, caps in data["capabilities"].items()},
        queue_allocated={q: dict(total) for q, total in data["queue_allocated"].items()},
    )
    _derive_future(ledger)
    return ledger


def _derive_future(ledger: Ledger) -> None:
    """Rebuild the nodes' releasing and reserved sums from the pods (a checkpoint written before they
    were kept has none)."""
    for node in ledger.nodes.values():
        node.releasing, node.terminating, node.reserved, node.reservations = {}, set(), {}, set()
    for key, pod in ledger.pods.items():
        stopping = ledger.nodes.get(pod.node) if pod.on_node and pod.terminating else None
        if stopping is not None:
            _add(stopping.releasing, pod.requests, 1)
            stopping.terminating.add(key)
        nominated = ledger.nodes.get(pod.nominated) if pod.reserving else None
        if nominated is not None:
            _add(nominated.reserved, pod.requests, 1)
            nominated.reservations.add(key)


def _row(entry: Any) -> list[Any]:
    return [sorted(v) if isinstance(v, set) else v for v in (getattr(entry, f.name) for f in fields(entry))]


def _node_from_row(row: list[Any]) -> NodeEntry:
    entry = NodeEntry(*row)
    entry.pods = set(entry.pods)
    entry.terminating = set(entry.terminating)
    entry.reservations = set(entry.reservations)
    return entry
