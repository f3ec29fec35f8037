"""The Pod a PodCreated carries, decoded for the view with its spec and status shared between pods that
carry the same ones (pure).

Every replica decodes every pod of the cluster once, and the generic codec builds a pod's spec (its
containers, requests, tolerations, affinity) as a tree of dataclasses: about half of what folding a
PodCreated cost. The pods of one task, and of jobs made from one template, carry byte-for-byte the same
spec, and every new pod the same status: their bytes name the decoded value, which is frozen, so one
decoded value serves them all. The meta (name, uid, labels) differs per pod and is decoded as before.

Anything unusual (a payload read from a checkpoint or upcast from an older schema, a pod without its
three parts) takes the generic path, which also names what is wrong with a bad payload.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from contracts.codec import decode
from contracts.events import EVENT_TYPES
from contracts.objects import ObjectMeta, Pod, PodSpec, PodStatus
from contracts.typed_events import RawPayload
from services.scheduler.view_events import event_object

if TYPE_CHECKING:
    from shared.runner_types import Event

# distinct specs (and statuses) kept: more than a burst's templates; when full the memo starts again
MEMO_LIMIT = 4096
_VERSION = EVENT_TYPES["PodCreated"].version


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


class PodDecoder:
    """Decodes PodCreated's pods; `decoded` counts the specs and statuses it built (a memo miss each)."""

    __slots__ = ("_specs", "_statuses", "decoded")

    def __init__(self) -> None:
        self._specs: dict[bytes, PodSpec] = {}
        self._statuses: dict[bytes, PodStatus] = {}
        self.decoded = 0

    def pod(self, event: Event) -> Pod:
        payload = event.payload
        if type(payload) is not RawPayload or event.version not in (0, _VERSION):
            return event_object(event, Pod)
        try:
            parts = _SPLIT.decode(payload.raw).object
        except msgspec.DecodeError:
            return event_object(event, Pod)
        if parts.kind != Pod.kind:
            return event_object(event, Pod)  # raises, naming the kind
        # the typed payload holds the same object as plain data (decoded once, when the event was made)
        plain: dict[str, Any] = event.data.object["object"]  # type: ignore[attr-defined]
        if not all(type(plain.get(name)) is dict for name in ("meta", "spec", "status")):
            return event_object(event, Pod)  # the codec's own reading of it
        spec = self._part(self._specs, bytes(parts.object.spec), PodSpec, plain["spec"])
        status = self._part(self._statuses, bytes(parts.object.status), PodStatus, plain["status"])
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
