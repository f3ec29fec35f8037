"""The binder's part of the read model: every node's current object (its registration with the readiness
the binder decided), written to etcd under /lahar/objects/node/_/<name> for `lahar get nodes`.

`fold_node` keeps the objects from the log (pure); `NodeWriter` writes the changed ones in batches,
fenced by the leader's term so a deposed binder cannot overwrite its successor's writes. Each value
carries the seq of the event it reflects, and the read model only moves a key forward, so writing the
same state twice, or from a standby that just took over, is harmless.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import structlog

from contracts import payloads
from contracts.codec import decode_object, encode_object
from contracts.events import BINDER
from contracts.objects import Node
from contracts.payloads import decode_as
from contracts.read_model_kinds import KINDS_BY_WRITER
from shared.runner_types import Event
from shared.store.election import Fence, FencedOut
from shared.store.etcd import Etcd, EtcdError
from shared.store.read_model import ReadModel, Stored, Write

log = structlog.get_logger(__name__)

(KIND,) = KINDS_BY_WRITER[BINDER]
NODE_EVENTS = frozenset({"NodeRegistered", "NodeReady", "NodeNotReady"})  # what fold_node reads


@dataclass(frozen=True, slots=True)
class NodeRecord:
    node: Node
    seq: int  # the event it reflects


def fold_node(nodes: dict[str, NodeRecord], event: Event) -> bool:
    """Fold a node event; True if the node's object changed."""
    if event.type == "NodeRegistered":
        node = decode_as(event.payload_as(payloads.NodeRegistered).object, Node)
        nodes[event.name] = NodeRecord(node, event.seq)
        return True
    if event.type in ("NodeReady", "NodeNotReady"):
        record = nodes.get(event.name)
        if record is None:
            return False
        nodes[event.name] = NodeRecord(replace(record.node, ready=event.type == "NodeReady"), event.seq)
        return True
    return False


def nodes_to_plain(nodes: Mapping[str, NodeRecord]) -> dict[str, list[object]]:
    return {name: [encode_object(r.node), r.seq] for name, r in nodes.items()}


def nodes_from_plain(raw: Mapping[str, list[Any]]) -> dict[str, NodeRecord]:
    """The nodes of a decoded checkpoint (untyped MessagePack: checked here)."""
    out = {}
    for name, (plain, seq) in raw.items():
        node = decode_object(plain)
        if not isinstance(node, Node):
            raise ValueError(f"checkpoint node {name}: holds a {node.kind}")
        out[name] = NodeRecord(node, int(seq))
    return out


def node_writes(nodes: Mapping[str, NodeRecord], names: Iterable[str]) -> list[Write]:
    return [
        Write(KIND, None, name, nodes[name].seq, encode_object(nodes[name].node))
        for name in sorted(names)
        if name in nodes
    ]


class NodeWriter:
    """Writes changed nodes; what could not be written stays pending for the next flush."""

    def __init__(self, etcd: Etcd) -> None:
        self.etcd = etcd
        self.pending: set[str] = set()
        self._stored: Stored | None = None  # the stored nodes as this writer knows them, in _term
        self._term: int | None = None

    async def flush(self, nodes: Mapping[str, NodeRecord], fence: Fence | None) -> None:
        """Write the pending nodes under fence; raises FencedOut when the term is over (the nodes stay
        pending for whoever leads next in this process) and EtcdError when etcd fails."""
        names, self.pending = self.pending, set()
        term = 0 if fence is None else fence.token
        try:
            model = ReadModel(self.etcd, fence=fence, stored=self._stored)
            if self._stored is None or term != self._term:
                # a new term: list the stored nodes once, then write knowing what is there
                model.stored = self._stored = Stored()
                await model.list(KIND)
                self._term = term
            await model.apply(node_writes(nodes, names))
        except (FencedOut, EtcdError):
            self.pending |= names
            raise
        log.debug("nodes written to the read model", count=len(names))

    def mark(self, names: Iterable[str]) -> None:
        self.pending.update(names)
