"""Reading and writing bundles (contracts/bundles.py): several events of one type about objects of one
namespace as one message, the pods' (pod bundles) or the Jobs' and PodGroups' (object bundles).

Readers call `unpack` on every record whose type is a bundle type and see its events exactly as if each
had been written alone: same type, id, cause, job, payload and object subject; they share the bundle's
position in the log, time, producer and trace state. Writers call `group_for_bundles` on the outputs of
one publish operation and `bundle_envelope` on each group of two or more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from contracts.bundles import (
    BUNDLE_FOR,
    BUNDLE_OF,
    BUNDLE_SUBJECT_KIND,
    MAX_BUNDLE_BYTES,
    MAX_BUNDLE_EVENTS,
    OBJECT_BUNDLE_OF,
    bundle_subject_name,
)
from contracts.events import EVENT_TYPES
from contracts.identity import OBJECT_EVENT_TYPES, identity_problem
from contracts.payloads import Payload, PayloadError
from contracts.typed_events import RawPayload, decode_payload, encode_payload
from shared.bus.bundle_groups import BundleGroups
from shared.bus.envelope import Envelope, usual_id_and_trace
from shared.bus.subjects import EventSubject
from shared.runner_types import Output, deterministic_id

__all__ = [
    "BUNDLE_OF",
    "BundleItem",
    "BundleRead",
    "bundle_envelope",
    "group_for_bundles",
    "is_bundle",
    "read_bundle",
    "unpack",
]


class BundleItem(msgspec.Struct):
    """One event of a bundle as readers decode it (contracts/bundles.py: BundledEvent): what it does not
    share with the bundle's envelope."""

    name: str
    id: str
    payload: msgspec.Raw  # the item's payload, left as its bytes (RawPayload)
    causation_id: str | None = None
    traceparent: str | None = None
    correlation_id: str | None = None


class _WireBundle(msgspec.Struct):
    events: list[BundleItem]
    item_version: int = 1


_pack = msgspec.msgpack.Encoder().encode
# The first byte of a MessagePack map: fixmap (0x80-0x8f), map 16 (0xde), map 32 (0xdf).
_MAP_HEADER = tuple(0x80 <= byte <= 0x8F or byte in (0xDE, 0xDF) for byte in range(256))
# pod events of a few fixed fields, whose size in a bundle is counted rather than measured
_FEW_FIELDS = frozenset({"PodBound", "PodRunning", "PodSucceeded"})
# the bundle type -> the subject kind of the objects its events are about
_ITEM_KIND = {bundle: EVENT_TYPES[item].subject_kind for bundle, item in BUNDLE_OF.items()}


def is_bundle(event_type: str) -> bool:
    return event_type in BUNDLE_OF


@dataclass(frozen=True, slots=True)
class BundleRead:
    """A bundle read off the bus: its own subject and envelope, and its events, every field of which
    has been checked as an event's envelope checks it. The service loop makes each event straight from
    these (shared/runner/events.py, `bundled_event`) without building an Envelope and a subject per
    event (about 2 µs an event, in every service); `subject` and `envelope` give them to the readers
    that want the usual pair (`unpack`)."""

    ref: EventSubject
    env: Envelope
    item_type: str
    item_kind: str
    version: int
    events: list[BundleItem]

    def subject(self, item: BundleItem) -> EventSubject:
        ref = self.ref
        return EventSubject(self.item_kind, ref.producer, self.item_type, ref.namespace, item.name)

    def envelope(self, item: BundleItem) -> Envelope:
        """The event's own envelope; raises EnvelopeError naming what is wrong with its fields."""
        env = self.env
        return Envelope(
            type=self.item_type,
            id=item.id,
            time=env.time,
            producer=env.producer,
            correlation_id=item.correlation_id or env.correlation_id,
            payload=RawPayload(item.payload),
            schema_version=self.version,
            causation_id=item.causation_id if item.causation_id is not None else env.causation_id,
            traceparent=item.traceparent if item.traceparent is not None else env.traceparent,
            tracestate=env.tracestate,
        )


_WIRE = msgspec.msgpack.Decoder(_WireBundle)


def read_bundle(ref: EventSubject, env: Envelope) -> BundleRead:
    """A bundle's events, checked. Raises PayloadError (a ValueError) for a bundle that is not one: not
    the bundle's shape, an event without an object or id, a payload that is not a map, or a subject that
    is not its type's bundle subject; EnvelopeError (also a ValueError) for an event whose id or trace
    parent an envelope would refuse. Either way the whole record is unreadable."""
    item_type = BUNDLE_OF[ref.type]
    kind = BUNDLE_SUBJECT_KIND[ref.type]
    if ref.kind != kind or ref.namespace is None:
        raise PayloadError(f"{ref.type}: a bundle's subject must be a namespaced {kind!r} subject")
    payload = env.payload
    raw = payload.raw if type(payload) is RawPayload else _pack(dict(payload))
    try:
        wire = _WIRE.decode(raw)
    except msgspec.DecodeError as exc:
        raise PayloadError(f"{ref.type} payload: {exc}") from None
    if not wire.events:
        raise PayloadError(f"{ref.type} payload: events: a bundle carries at least one event")
    if wire.item_version < 1:
        raise PayloadError(f"{ref.type} payload: item_version: must be 1 or more, got {wire.item_version}")
    bundle = BundleRead(ref, env, item_type, _ITEM_KIND[ref.type], wire.item_version, wire.events)
    # Every other field of an event's envelope is the bundle's (checked already) or typed by the decoder.
    for index, item in enumerate(wire.events):
        if not item.name or not _MAP_HEADER[memoryview(item.payload)[0]]:
            raise PayloadError(f"{ref.type} payload: events[{index}]: needs a name and a map payload")
        if not usual_id_and_trace(item.id, item.traceparent):
            bundle.envelope(item)  # raises EnvelopeError, unless the id is a UUID in another form
    return bundle


def unpack(ref: EventSubject, env: Envelope) -> list[tuple[EventSubject, Envelope]]:
    """The events a bundle carries, each with its object's subject, in the bundle's order (raises as
    `read_bundle` does)."""
    bundle = read_bundle(ref, env)
    return [(bundle.subject(item), bundle.envelope(item)) for item in bundle.events]


def group_for_bundles(
    outputs: Sequence[Output], pinned: Mapping[str, Sequence[Output]] | None = None
) -> list[list[Output]]:
    """The outputs of one publish operation as the messages that carry them, in order. The events of a
    bundle type about objects of one namespace form one group (cut at the bundle limits), placed where
    its first event was or, for an object bundle, where its last one is, whichever keeps every job's and
    every object's events in order (shared/bus/bundle_groups.py); any other output is a group of its own.

    pinned: output id -> the bundle it was last sent in, when that send may or may not have been stored
    (a lost acknowledgement). Such a bundle goes out again exactly as it was, where the first of its
    events is, so the stream's deduplication (by the bundle's id) drops it if it was stored: bundling
    the same events differently would store them twice."""
    # the messages in order; a group placed last moves to the latest slot (None: moved away)
    slots: list[list[Output] | None] = []
    groups = BundleGroups(MAX_BUNDLE_EVENTS, MAX_BUNDLE_BYTES)
    sent_again: set[str] = set()  # ids of the pinned bundles' events already placed
    for output in outputs:
        again = pinned.get(output.id) if pinned else None
        if again is not None:
            if output.id not in sent_again:
                slots.append(list(again))
                sent_again.update(o.id for o in again)
                for member in again:
                    groups.saw(member, len(slots) - 1)
            continue
        bundle = _bundle_type(output)
        if bundle is None:
            slots.append([output])
            groups.saw(output, len(slots) - 1)
        else:
            groups.place(
                slots,
                (bundle, output.namespace),
                output,
                _payload_size(output),
                may_move_last=bundle in OBJECT_BUNDLE_OF,
            )
    return [group for group in slots if group is not None]


def _bundle_type(output: Output) -> str | None:
    """The bundle type the output may travel in, None when it goes alone (a compare-and-set, an object
    of another kind than the bundle's, a cluster-scoped one)."""
    bundle = BUNDLE_FOR.get(output.type)
    if (
        bundle is None
        or output.expected_last_subject_seq is not None
        or output.kind != _ITEM_KIND[bundle]
        or output.namespace is None
    ):
        return None
    return bundle


def _payload_size(output: Output) -> int:
    if output.type in _FEW_FIELDS:
        return 256  # counted, not measured
    # a Pod, a PodGroup, a status with its conditions and counts: as large as what they describe
    payload = output.payload
    # a typed payload is encoded as it is, without its plain copy first (a Pod: 0.8 against 4.6 µs)
    return len(_pack(payload if isinstance(payload, Payload | dict) else dict(payload)))


def bundle_envelope(
    outputs: Sequence[Output], *, time: float, producer: str, traceparents: Sequence[str | None]
) -> tuple[Envelope, str, str]:
    """One group's bundle: its envelope, the bundle type and the name its subject carries. Each
    event's payload is checked as its own type (a writer's bug is refused here, as Envelope.create
    refuses one). The bundle's id is derived from its events' ids: the same events bundled again are the
    same message, which the stream's deduplication drops."""
    first = outputs[0]
    item_type = first.type
    bundle_type = BUNDLE_FOR[item_type]
    name = bundle_subject_name(first.namespace)
    assert name is not None, "only bundleable outputs are grouped"
    cause = first.causation_id if all(o.causation_id == first.causation_id for o in outputs) else None
    trace = traceparents[0]
    events: list[dict[str, Any]] = []
    for output, traceparent in zip(outputs, traceparents, strict=True):
        plain = encode_payload(output.payload)
        decode_payload(item_type, 0, plain)  # raises PayloadError for a payload its type does not allow
        if item_type in OBJECT_EVENT_TYPES:
            problem = identity_problem(item_type, plain, output.namespace, output.name)
            if problem is not None:
                raise PayloadError(problem)
        event: dict[str, Any] = {"name": output.name, "id": output.id, "payload": plain}
        if output.causation_id != cause:
            event["causation_id"] = output.causation_id
        if traceparent != trace:
            event["traceparent"] = traceparent
        if output.correlation_id != first.correlation_id:
            event["correlation_id"] = output.correlation_id
        events.append(event)
    envelope = Envelope(
        type=bundle_type,
        id=deterministic_id(producer, bundle_type, *(o.id for o in outputs)),
        time=float(time),
        producer=producer,
        correlation_id=first.correlation_id,
        payload={"events": events, "item_version": EVENT_TYPES[item_type].version},
        schema_version=EVENT_TYPES[bundle_type].version,
        causation_id=cause,
        traceparent=trace,
    )
    return envelope, bundle_type, name


def record_events(ref: EventSubject, env: Envelope) -> list[tuple[EventSubject, Envelope]]:
    """The events one record holds: itself, or its bundle's events."""
    return unpack(ref, env) if ref.type in BUNDLE_OF else [(ref, env)]
