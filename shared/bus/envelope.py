"""The event envelope: metadata every event on the log carries, plus its payload, as MessagePack.

Pure: the shell supplies the time and, unless a deterministic id is derived, the random event id.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from typing import Any, Self

import msgpack
import msgspec

from contracts.events import EVENT_TYPES
from contracts.payloads import Payload, PayloadError
from contracts.typed_events import RawPayload, decode_payload, encode_payload
from shared.runner_types import derived_event_id

__all__ = ["Envelope", "EnvelopeError", "derived_event_id", "new_event_id", "usual_id_and_trace"]

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
# what str(uuid) gives: the usual id, checked without building a UUID (any form uuid.UUID reads is valid)
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")

_REQUIRED = ("type", "schema_version", "id", "time", "producer", "correlation_id", "payload")
_OPTIONAL = ("causation_id", "traceparent", "tracestate")
# msgspec's encoder writes the same bytes as msgpack.packb(..., use_bin_type=True) for the plain data an
# envelope holds, about 3x faster (scripts/bench_publish_encode.py)
_pack = msgspec.msgpack.Encoder().encode


class EnvelopeError(ValueError):
    """An envelope is malformed: invalid field values, or bytes that do not decode to an envelope."""


def new_event_id() -> str:
    """A fresh random event id (shell code only: it is randomness)."""
    return str(uuid.uuid4())


class Envelope(msgspec.Struct, frozen=True):
    """One event: what happened (type, payload), who said so, why, and how it is traced.

    time is epoch seconds given by the caller. correlation_id is the job key the event belongs to;
    causation_id is the event or request that caused it. payload must hold only MessagePack-able values
    and must not be mutated after construction.

    A frozen msgspec Struct rather than a dataclass: every service builds one per event it reads, and a
    Struct is built in C (a frozen dataclass's __init__ cost 1.3 µs more an event); __post_init__ checks
    the fields either way.
    """

    type: str
    id: str
    time: float
    producer: str
    correlation_id: str
    payload: Mapping[str, Any] = msgspec.field(default_factory=dict)
    schema_version: int = 1
    causation_id: str | None = None
    traceparent: str | None = None
    tracestate: str | None = None

    def __post_init__(self) -> None:
        problems = _validate(self)
        if problems:
            raise EnvelopeError("invalid envelope: " + "; ".join(problems))

    @classmethod
    def create(
        cls,
        type: str,
        *,
        time: float,
        producer: str,
        correlation_id: str,
        payload: Payload | Mapping[str, Any] | None = None,
        id: str | None = None,
        schema_version: int | None = None,
        causation_id: str | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> Self:
        """Build an envelope, drawing a random id when none is given. A catalogued event type is written
        at its current schema version, and its payload (typed, or plain) must be what the type promises:
        a writer's bug is refused here rather than appended for every consumer to trip over."""
        plain = encode_payload(payload) if payload is not None else {}
        catalogued = EVENT_TYPES.get(type)
        if catalogued is not None:
            schema_version = schema_version or catalogued.version
            try:
                decode_payload(type, schema_version, plain)
            except PayloadError as exc:
                raise EnvelopeError(str(exc)) from None
        return cls(
            type=type,
            id=id if id is not None else new_event_id(),
            time=float(time),
            producer=producer,
            correlation_id=correlation_id,
            payload=plain,
            schema_version=schema_version or 1,
            causation_id=causation_id,
            traceparent=traceparent,
            tracestate=tracestate,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "schema_version": self.schema_version,
            "id": self.id,
            "time": float(self.time),
            "producer": self.producer,
            "correlation_id": self.correlation_id,
            "payload": dict(self.payload),  # a RawPayload's plain form
        }
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    def encode(self) -> bytes:
        try:
            return _pack(self.to_dict())
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
            raise EnvelopeError(
                f"payload of {self.type} event {self.id} is not MessagePack-able: {exc}"
            ) from exc

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Parse bytes produced by encode(); raises EnvelopeError naming what is wrong. Every service
        decodes every event it reads here: the usual envelope is read by msgspec in one C-level pass
        that checks the fields' types (2.3 µs less an event than the reading below, which now runs only
        to name what is wrong with an envelope that pass refused). The payload is left as its bytes
        (RawPayload), checked only to be a map: the typed Event decodes them straight into the payload's
        class, and nothing builds its plain form unless it is read."""
        try:
            wire = _WIRE.decode(data)
        except msgspec.DecodeError:
            return cls._decode_checked(data)
        raw = wire.payload
        if not _MAP_HEADER[memoryview(raw)[0]]:
            return cls._decode_checked(data)  # names what the payload is instead of a map
        return cls(
            type=wire.type,
            id=wire.id,
            time=wire.time,
            producer=wire.producer,
            correlation_id=wire.correlation_id,
            payload=RawPayload(raw),
            schema_version=wire.schema_version,
            causation_id=wire.causation_id,
            traceparent=wire.traceparent,
            tracestate=wire.tracestate,
        )

    @classmethod
    def _decode_checked(cls, data: bytes) -> Self:
        try:
            raw = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception as exc:  # msgpack raises several unrelated types for malformed input
            raise EnvelopeError(f"not a MessagePack document ({type(exc).__name__}: {exc})") from exc
        if not isinstance(raw, dict):
            raise EnvelopeError(f"envelope must be a map, got {type(raw).__name__}")
        missing = [name for name in _REQUIRED if name not in raw]
        if missing:
            raise EnvelopeError("envelope is missing field(s): " + ", ".join(missing))
        # Unknown keys are ignored on purpose: a newer producer may add envelope metadata that older
        # consumers do not need to understand (tolerant reader).
        known = {name: raw[name] for name in (*_REQUIRED, *_OPTIONAL) if name in raw}
        # Producers in other languages may encode a whole-second time as an integer.
        if type(known["time"]) is int:
            known["time"] = float(known["time"])
        return cls(**known)


class _WireEnvelope(msgspec.Struct):
    """The envelope as the bus carries it: the required fields (_REQUIRED) have no default, unknown keys
    are ignored (tolerant reader), an integer time reads as a float."""

    type: str
    schema_version: int
    id: str
    time: float
    producer: str
    correlation_id: str
    payload: msgspec.Raw  # its bytes, a view of the message's (RawPayload)
    causation_id: str | None = None
    traceparent: str | None = None
    tracestate: str | None = None


_WIRE = msgspec.msgpack.Decoder(_WireEnvelope)
# The first byte of a MessagePack map: fixmap (0x80-0x8f), map 16 (0xde), map 32 (0xdf).
_MAP_HEADER = tuple(0x80 <= byte <= 0x8F or byte in (0xDE, 0xDF) for byte in range(256))


def usual_id_and_trace(event_id: str, traceparent: str | None) -> bool:
    """Whether an event id and trace parent are the usual ones an envelope accepts at once (a canonical
    UUID; no trace parent, or a W3C one). A reader that makes events without an Envelope (a bundle's,
    shared/bus/bundles.py) checks them here and builds the Envelope, which names the problem, only when
    this says no."""
    return _CANONICAL_UUID.match(event_id) is not None and (
        traceparent is None or _TRACEPARENT.match(traceparent) is not None
    )


def _validate(env: Envelope) -> list[str]:
    """Every problem of the envelope's fields. Every event of the log passes here in every service, so
    the usual envelope is recognised first with a few type checks and one pattern per string."""
    if _usual(env):
        return []
    return _problems(env)


def _usual(env: Envelope) -> bool:
    time = env.time
    traceparent = env.traceparent
    return (
        type(env.type) is str
        and type(env.producer) is str
        and type(env.correlation_id) is str
        and bool(env.type and env.producer and env.correlation_id)
        and type(env.id) is str
        and _CANONICAL_UUID.match(env.id) is not None
        and type(env.schema_version) is int
        and env.schema_version >= 1
        and type(time) is float
        and 0 <= time < math.inf
        and isinstance(env.payload, Mapping)
        and (env.causation_id is None or type(env.causation_id) is str)
        and (env.tracestate is None or type(env.tracestate) is str)
        and (
            traceparent is None or (type(traceparent) is str and _TRACEPARENT.match(traceparent) is not None)
        )
    )


def _problems(env: Envelope) -> list[str]:
    problems: list[str] = []
    for name in ("type", "producer", "correlation_id"):
        value = getattr(env, name)
        if not isinstance(value, str) or not value:
            problems.append(f"{name} must be a non-empty string, got {value!r}")
    if not isinstance(env.id, str):
        problems.append(f"id must be a UUID string, got {env.id!r}")
    else:
        try:
            uuid.UUID(env.id)
        except ValueError:
            problems.append(f"id must be a UUID string, got {env.id!r}")
    if (
        isinstance(env.schema_version, bool)
        or not isinstance(env.schema_version, int)
        or env.schema_version < 1
    ):
        problems.append(f"schema_version must be an integer >= 1, got {env.schema_version!r}")
    if (
        isinstance(env.time, bool)
        or not isinstance(env.time, int | float)
        or not math.isfinite(env.time)
        or env.time < 0
    ):
        problems.append(f"time must be finite epoch seconds, got {env.time!r}")
    if not isinstance(env.payload, Mapping):
        problems.append(f"payload must be a map, got {type(env.payload).__name__}")
    for name in _OPTIONAL:
        value = getattr(env, name)
        if value is not None and not isinstance(value, str):
            problems.append(f"{name} must be a string or absent, got {value!r}")
    if isinstance(env.traceparent, str) and not _TRACEPARENT.match(env.traceparent):
        problems.append(f"traceparent is not a W3C traceparent, got {env.traceparent!r}")
    return problems
