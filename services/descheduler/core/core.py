"""The descheduler as a Core for the event loop (pure): it folds the log into its view and writes no
events of its own (its evictions are plans to the binder, sent by the shell on its timer), so touched,
due and reconcile have nothing to say. The view is checkpointed like any service's state."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, TypeVar

import msgpack

from contracts.codec import decode_object, encode_object
from contracts.events import DESCHEDULER
from contracts.objects import Node, Pod, PodGroup, PriorityClass
from services.descheduler.core.view import VIEW_EVENTS, ClusterView, PodRecord, fold
from shared.runner_types import Event, Output

T = TypeVar("T")


class DeschedulerCore:
    name = DESCHEDULER
    reads = VIEW_EVENTS

    def __init__(self, cooldown_s: float) -> None:
        self.cooldown_s = cooldown_s

    def initial(self) -> ClusterView:
        return ClusterView()

    def apply(self, state: ClusterView, event: Event) -> ClusterView:
        return fold(state, event, self.cooldown_s)

    def touched(self, state: ClusterView, event: Event) -> Iterable[str]:
        return ()

    def due(self, state: ClusterView, now: float) -> Iterable[str]:
        return ()

    def reconcile(self, state: ClusterView, now: float, keys: Collection[Any] | None = None) -> list[Output]:
        return []

    def dump(self, state: ClusterView) -> bytes:
        data = {
            "seq": state.seq,
            "nodes": [encode_object(n) for n in state.nodes.values()],
            "pods": [[encode_object(r.pod), r.phase, r.stopping] for r in state.pods.values()],
            "podgroups": [encode_object(pg) for pg in state.podgroups.values()],
            "priority_classes": [encode_object(pc) for pc in state.priority_classes.values()],
            "claim_jobs": sorted(state.claim_jobs),
            "descheduled_at": state.descheduled_at,
        }
        packed: bytes = msgpack.packb(data, use_bin_type=True)
        return packed

    def load(self, data: bytes) -> ClusterView:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False)
        view = ClusterView(seq=raw["seq"], claim_jobs=set(raw["claim_jobs"]))
        view.descheduled_at = dict(raw["descheduled_at"])
        for encoded in raw["nodes"]:
            node = _as(decode_object(encoded), Node)
            view.nodes[node.meta.name] = node
        for encoded, phase, stopping in raw["pods"]:
            pod = _as(decode_object(encoded), Pod)
            view.pods[pod.meta.key] = PodRecord(pod, phase, stopping)
        for encoded in raw["podgroups"]:
            pg = _as(decode_object(encoded), PodGroup)
            view.podgroups[pg.meta.key] = pg
        for encoded in raw["priority_classes"]:
            pc = _as(decode_object(encoded), PriorityClass)
            view.priority_classes[pc.meta.name] = pc
        return view


def _as(obj: object, cls: type[T]) -> T:
    if not isinstance(obj, cls):
        raise ValueError(f"checkpoint: expected a {cls.__name__}, got {type(obj).__name__}")
    return obj
