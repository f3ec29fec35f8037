"""Node liveness from heartbeats (pure): heartbeats are not events, so only the binder that receives
them knows them; what it concludes is written as events (`NodeNotReady`, `PodLost`, `NodeReady`).

A node is stale when its latest sign of life (a heartbeat, its registration, or the moment this binder
started watching) is older than the timeout. Starting to watch counts as a sign of life because
heartbeats are not in the log: a binder that just took over has heard nothing yet, and must give every
node a full timeout before declaring it lost.

A node is judged only on time during which the binder could hear it. Silence heard while the binder
itself was cut off (its NATS connection down, heartbeats dropped on their way to it) says nothing about
the node: while the binder is `deaf` no node is stale, and once it can hear again (`heard_all`) every
node's silence counts from that moment, as after a take-over. A node that really stopped is then
declared lost one timeout after the binder could hear again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from contracts import payloads
from services.binder.core.ledger import Ledger, NodeEntry, split_key
from shared.runner_types import Output, deterministic_id

BINDER = "binder"
DEFAULT_NODE_TIMEOUT_S = 10.0
NODE_LOST = "NodeLost"


@dataclass(slots=True)
class Liveness:
    heartbeats: dict[str, float] = field(default_factory=dict)  # node -> time of its latest heartbeat
    # since when every node's silence counts: this binder started watching or could hear again
    watching_since: float = 0.0
    # since when this binder cannot hear heartbeats (None: it can); this process's own fact, never
    # checkpointed: a process that starts has just connected
    deaf_since: float | None = None


def heartbeat(liveness: Liveness, node: str, now: float) -> None:
    liveness.heartbeats[node] = max(now, liveness.heartbeats.get(node, now))


def watch_from(liveness: Liveness, now: float) -> None:
    """Call when this process starts tracking heartbeats (start-up, or taking over as leader)."""
    liveness.watching_since = now


def deaf(liveness: Liveness, now: float) -> None:
    """Call when this binder stops being able to hear heartbeats (its connection dropped)."""
    if liveness.deaf_since is None:
        liveness.deaf_since = now


def heard_all(liveness: Liveness, now: float) -> None:
    """Call when this binder can hear again after it could not (reconnected, or heartbeats were dropped
    on their way to it): every node's last sign of life becomes at least `now`, so each gets a fresh
    timeout, judged on time the binder could hear it."""
    liveness.deaf_since = None
    liveness.watching_since = max(liveness.watching_since, now)


def last_sign_of_life(liveness: Liveness, name: str, node: NodeEntry) -> float:
    return max(liveness.heartbeats.get(name, 0.0), node.registered_at, liveness.watching_since)


def is_stale(liveness: Liveness, name: str, node: NodeEntry, now: float, timeout_s: float) -> bool:
    if liveness.deaf_since is not None:
        return False  # a binder that cannot hear judges nobody
    return now - last_sign_of_life(liveness, name, node) > timeout_s


def heard_from(liveness: Liveness, name: str, now: float, timeout_s: float) -> bool:
    """A heartbeat within the timeout: only a heartbeat, not a restart of this binder, revives a node."""
    beat = liveness.heartbeats.get(name)
    return beat is not None and now - beat <= timeout_s


def stale_nodes(ledger: Ledger, liveness: Liveness, now: float, timeout_s: float) -> list[str]:
    """The Ready nodes silent for longer than the timeout: one pass of float comparisons per node (no ids
    are derived here; reconcile derives them for these few)."""
    cutoff = now - timeout_s
    if liveness.deaf_since is not None or liveness.watching_since >= cutoff:
        return []  # this binder cannot hear, or has not heard for a whole timeout: nobody is stale yet
    beats = liveness.heartbeats
    return [
        name
        for name, node in ledger.nodes.items()
        if node.ready and node.registered_at < cutoff and beats.get(name, 0.0) < cutoff
    ]


def reconcile(
    ledger: Ledger, liveness: Liveness, now: float, timeout_s: float, names: Iterable[str] | None = None
) -> list[Output]:
    """What the log should say about the readiness of `names` (default: every node) and is not saying
    yet: a stale Ready node becomes NotReady and every pod still on it is lost; a NotReady node heard
    from again becomes Ready."""
    outputs: list[Output] = []
    nodes = ledger.nodes
    selected = nodes.items() if names is None else ((n, nodes[n]) for n in names if n in nodes)
    for name, node in selected:
        # named by the Ready period that ended, so the ids are the same before and after it lands
        not_ready_id = deterministic_id(BINDER, "NodeNotReady", name, node.ready_seq)
        if node.ready:
            if not is_stale(liveness, name, node, now, timeout_s):
                continue
            outputs.append(
                Output(
                    type="NodeNotReady",
                    kind="node",
                    namespace=None,
                    name=name,
                    id=not_ready_id,
                    correlation_id=name,
                    payload=payloads.NodeNotReady(last_heartbeat=last_sign_of_life(liveness, name, node)),
                )
            )
        elif heard_from(liveness, name, now, timeout_s):
            outputs.append(
                Output(
                    type="NodeReady",
                    kind="node",
                    namespace=None,
                    name=name,
                    id=deterministic_id(BINDER, "NodeReady", name, node.not_ready_seq),
                    correlation_id=name,
                )
            )
            continue
        outputs.extend(_lost_pods(ledger, name, node, not_ready_id))
    return outputs


def _lost_pods(ledger: Ledger, name: str, node: NodeEntry, cause: str) -> list[Output]:
    outputs = []
    for key in sorted(node.pods):
        pod = ledger.pods[key]
        namespace, pod_name = split_key(key)
        outputs.append(
            Output(
                type="PodLost",
                kind="pod",
                namespace=namespace,
                name=pod_name,
                id=deterministic_id(BINDER, "PodLost", key, name, node.ready_seq),
                correlation_id=pod.podgroup or key,
                payload=payloads.PodLost(node=name, reason=NODE_LOST),
                causation_id=cause,
            )
        )
    return outputs
