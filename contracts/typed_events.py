"""Event payloads from plain data to their typed classes and back: the edge every event crosses.

`decode_payload` is what a consumer applies to each event it reads: unknown types, versions newer than
this code knows and payloads that are not what their type promises raise PayloadError naming every
offending field, so the event is set aside instead of reaching a core. `encode_payload` is what a
producer writes.

A payload read from the bus arrives as `RawPayload`, its MessagePack bytes: `decode_payload` reads them
straight into the typed class, one C-level pass that checks as it goes, and the plain form (nested dicts
and lists, which a whole Pod makes costly) is built only when something asks for it (docs/scaling.md,
"What a pod costs").
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import msgspec

from contracts.events import EVENT_TYPES
from contracts.payloads import Payload, PayloadError
from contracts.upcasters import upcast

__all__ = [
    "PayloadError",
    "RawPayload",
    "UncataloguedType",
    "decode_payload",
    "encode_payload",
    "payload_problems",
]


class UncataloguedType(PayloadError):
    """An event type contracts/events.py does not list: nothing says what its payload holds."""


# Every event of the log passes through decode_payload in every service: one lookup gives what it needs.
_CURRENT: Mapping[str, tuple[int, type[Payload]]] = {
    name: (catalogued.version, catalogued.payload_class) for name, catalogued in EVENT_TYPES.items()
}


class RawPayload(Mapping[str, Any]):
    """A payload as the bus carries it: MessagePack bytes holding a map. `decode_payload` reads them
    straight into the payload's typed class; the plain form (what the producer wrote: str keys, nested
    dicts and lists) is decoded from the bytes on first use and kept, so readers of the plain payload
    (`lahar events`, reports, a core reading uncatalogued events) see the same mapping as before, and the
    hot path never builds it. Not a MessagePack map inside raises PayloadError on that first use."""

    __slots__ = ("_plain", "raw")

    def __init__(self, raw: msgspec.Raw | bytes) -> None:
        self.raw = raw
        self._plain: dict[str, Any] | None = None

    @property
    def plain(self) -> dict[str, Any]:
        plain = self._plain
        if plain is None:
            try:
                plain = msgspec.msgpack.decode(self.raw)
            except msgspec.DecodeError as exc:  # e.g. a map key that is a list: not plain data
                raise PayloadError(f"payload is not plain data: {exc}") from None
            if not isinstance(plain, dict):
                raise PayloadError(f"payload must be a map, got {type(plain).__name__}")
            self._plain = plain
        return plain

    def __getitem__(self, key: str) -> Any:
        return self.plain[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.plain)

    def __len__(self) -> int:
        return len(self.plain)

    def __contains__(self, key: object) -> bool:
        return key in self.plain

    def get(self, key: str, default: Any = None) -> Any:
        return self.plain.get(key, default)

    def keys(self) -> KeysView[str]:
        return self.plain.keys()

    def items(self) -> ItemsView[str, Any]:
        return self.plain.items()

    def values(self) -> ValuesView[Any]:
        return self.plain.values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawPayload):
            other = other.plain
        return self.plain == other

    __hash__ = None  # type: ignore[assignment]  # a mapping, like a dict

    def __repr__(self) -> str:
        return repr(self.plain)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.plain,))  # copied or pickled, it is its plain form


# One MessagePack decoder per payload class, made on first use (msgspec compiles one per type anyway).
_DECODERS: dict[type[Payload], msgspec.msgpack.Decoder[Any]] = {}


def _decoder(cls: type[Payload]) -> msgspec.msgpack.Decoder[Any]:
    decoder = _DECODERS.get(cls)
    if decoder is None:
        decoder = _DECODERS[cls] = msgspec.msgpack.Decoder(cls)
    return decoder


def decode_payload(event_type: str, version: int, payload: Mapping[str, Any]) -> Payload:
    """The typed payload of an event written at schema `version` (0: the current one). A RawPayload at
    the current version is decoded from its bytes; anything else (an older version, which upcasters
    rewrite as plain data, or a plain mapping) is converted from its plain form."""
    current = _CURRENT.get(event_type)
    if current is None:
        raise UncataloguedType(f"{event_type}: not a catalogued event type (contracts/events.py)")
    latest, cls = current
    if version != latest and version:
        if version > latest:
            raise PayloadError(
                f"{event_type}: schema version {version} is newer than this lahar reads ({latest})"
            )
        payload = upcast(event_type, version, latest, payload)
    elif type(payload) is RawPayload:
        try:
            return _decoder(cls).decode(payload.raw)  # type: ignore[no-any-return]
        except msgspec.DecodeError:  # ValidationError is one
            # Refused: judged again below on the plain form, which names every offending field (and
            # decides as convert always has, should the two readings ever differ).
            payload = payload.plain
    try:
        return msgspec.convert(payload, cls)
    except msgspec.ValidationError:
        problems = payload_problems(cls, payload)
        raise PayloadError(f"{event_type} payload: " + "; ".join(problems)) from None


def encode_payload(payload: Payload | Mapping[str, Any]) -> dict[str, Any]:
    """Plain data (MessagePack- and JSON-safe) of a typed payload; a mapping is copied as it is. Read it,
    do not change it: a payload that is only an encoded object (PodCreated, PodGroupCreated, ...) shares
    that object, which is plain data already, rather than copying every node of it."""
    if isinstance(payload, Payload):
        if type(payload).__struct_fields__ == _OBJECT_ONLY:
            return {"object": payload.object}  # type: ignore[attr-defined]
        return msgspec.to_builtins(payload)  # type: ignore[no-any-return]
    return dict(payload)


# the fields of a payload that carries one encoded object and nothing else
_OBJECT_ONLY = ("object",)


def payload_problems(cls: type[Payload], payload: Any) -> list[str]:
    """Every field of `payload` that does not fit `cls` (msgspec stops at the first)."""
    if not isinstance(payload, Mapping):
        return [f"expected a map, got {type(payload).__name__}"]
    problems = []
    for field in msgspec.structs.fields(cls):
        if field.encode_name not in payload:
            if field.required:
                problems.append(f"{field.encode_name}: missing")
            continue
        try:
            msgspec.convert(payload[field.encode_name], field.type)
        except msgspec.ValidationError as exc:
            problems.append(f"{field.encode_name}: {_without_root(str(exc))}")
    if not problems:  # each field fits; what is left is a check across fields (__post_init__)
        try:
            msgspec.convert(payload, cls)
        except msgspec.ValidationError as exc:
            problems.append(str(exc))
    return problems


def _without_root(message: str) -> str:
    # msgspec names where in the value it failed as "`$...`"; a field's own value is "`$`"
    return message.replace(" - at `$`", "").replace("`$", "`")
