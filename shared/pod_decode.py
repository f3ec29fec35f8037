"""The Pod a PodCreated carries, decoded with its spec and status shared between pods that carry the same
ones (pure): the scheduler's view decodes every pod of the cluster, a node agent every pod bound to its
nodes.

The generic codec builds a pod's spec (its containers, requests, tolerations, affinity) as a tree of
dataclasses: about half of what folding a PodCreated cost. The pods of one task, and of jobs made from
one template, carry byte-for-byte the same spec, and every new pod the same status: their bytes name the
decoded value, which is frozen, so one decoded value serves them all. The meta (name, uid, labels)
differs per pod and is decoded each time.

A reader that decodes the pod later than it reads the event (a node agent, when the pod is bound to one
of its nodes) keeps the event's `PodBytes` with the plain object and calls `from_plain` then. Anything
unusual (a payload read from a checkpoint or upcast from an older schema, a pod without its three parts)
takes the generic path, which also names what is wrong with a bad payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from contracts.codec import decode
from contracts.events import EVENT_TYPES
from contracts.objects import ObjectMeta, Pod, PodSpec, PodStatus
from contracts.payloads import ObjectPayload
from contracts.typed_events import RawPayload
from shared.evolve import evolve

if TYPE_CHECKING:
    from shared.runner_types import Event

# distinct specs (and statuses) kept: more than a burst's templates; when full the memo starts again
MEMO_LIMIT = 4096
_VERSION = EVENT_TYPES["PodCreated"].version
_PARTS = ("meta", "spec", "status")


class _PodParts(msgspec.Struct):
    meta: msgspec.Raw
    spec: msgspec.Raw
    status: msgspec.Raw


class _Encoded(msgspec.Struct):
    kind: str
    object: _PodParts


class _Payload(msgspec.Struct):
    object: _Encoded


_SPLIT = msgspec.msgpack.Decoder(_Payload)


@dataclass(frozen=True, slots=True)
class PodBytes:
    """A PodCreated's pod spec and status as their MessagePack bytes: what names their decoded values."""

    spec: bytes
    status: bytes


def decoded_pod(event: Event) -> Pod:
    """The Pod a PodCreated carries, by the generic codec; ValueError names another kind of object."""
    obj = event.payload_as(ObjectPayload).decoded()
    if not isinstance(obj, Pod):
        raise ValueError(
            f"{event.type} {event.namespace}/{event.name}: payload holds a {obj.kind}, not a Pod"
        )
    return obj


class PodDecoder:
    """Decodes PodCreated's pods; `decoded` counts the specs and statuses it built (a memo miss each)."""

    __slots__ = ("_specs", "_statuses", "decoded")

    def __init__(self) -> None:
        self._specs: dict[bytes, PodSpec] = {}
        self._statuses: dict[bytes, PodStatus] = {}
        self.decoded = 0

    def pod(self, event: Event) -> Pod:
        """The event's Pod, now."""
        parts = self.pod_bytes(event)
        if parts is None:
            return decoded_pod(event)
        # the typed payload holds the same object as plain data (decoded once, when the event was made)
        pod = self.from_plain(event.data.object, parts)  # type: ignore[attr-defined]
        return decoded_pod(event) if pod is None else pod

    def pod_bytes(self, event: Event) -> PodBytes | None:
        """The bytes of the spec and status of the Pod a PodCreated carries; None when the payload is not
        the usual one (the generic path then reads it)."""
        payload = event.payload
        if type(payload) is not RawPayload or event.version not in (0, _VERSION):
            return None
        try:
            encoded = _SPLIT.decode(payload.raw).object
        except msgspec.DecodeError:
            return None
        if encoded.kind != Pod.kind:
            return None
        return PodBytes(bytes(encoded.object.spec), bytes(encoded.object.status))

    def from_plain(
        self, encoded: Mapping[str, Any], parts: PodBytes, *, node_name: str | None = None
    ) -> Pod | None:
        """The Pod of a PodCreated's plain object (`{"kind": "Pod", "object": ...}`) whose spec and status
        are `parts`, bound to `node_name` when given; None when the object has not its three parts as
        maps (the caller decodes it the generic way, which names what is wrong)."""
        plain = encoded.get("object")
        if not isinstance(plain, Mapping) or not all(type(plain.get(name)) is dict for name in _PARTS):
            return None
        spec = self._part(self._specs, parts.spec, PodSpec, plain["spec"])
        if node_name is not None and spec.node_name != node_name:
            spec = evolve(spec, node_name=node_name)
        status = self._part(self._statuses, parts.status, PodStatus, plain["status"])
        return Pod(meta=decode(ObjectMeta, plain["meta"]), spec=spec, status=status)

    def _part(self, memo: dict[bytes, Any], raw: bytes, cls: type, plain: Any) -> Any:
        value = memo.get(raw)
        if value is None:
            value = decode(cls, plain)
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[raw] = value
            self.decoded += 1
        return value
