"""Event payloads from plain data to their typed classes and back: the edge every event crosses.

`decode_payload` is what a consumer applies to each event it reads: unknown types, versions newer than
this code knows and payloads that are not what their type promises raise PayloadError naming every
offending field, so the event is set aside instead of reaching a core. `encode_payload` is what a
producer writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from contracts.events import EVENT_TYPES
from contracts.payloads import Payload, PayloadError
from contracts.upcasters import upcast

__all__ = ["PayloadError", "UncataloguedType", "decode_payload", "encode_payload", "payload_problems"]


class UncataloguedType(PayloadError):
    """An event type contracts/events.py does not list: nothing says what its payload holds."""


# Every event of the log passes through decode_payload in every service: one lookup gives what it needs.
_CURRENT: Mapping[str, tuple[int, type[Payload]]] = {
    name: (catalogued.version, catalogued.payload_class) for name, catalogued in EVENT_TYPES.items()
}


def decode_payload(event_type: str, version: int, payload: Mapping[str, Any]) -> Payload:
    """The typed payload of an event written at schema `version` (0: the current one)."""
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
    try:
        return msgspec.convert(payload, cls)
    except msgspec.ValidationError:
        problems = payload_problems(cls, payload)
        raise PayloadError(f"{event_type} payload: " + "; ".join(problems)) from None


def encode_payload(payload: Payload | Mapping[str, Any]) -> dict[str, Any]:
    """Plain data (MessagePack- and JSON-safe) of a typed payload; a mapping is copied as it is."""
    if isinstance(payload, Payload):
        return msgspec.to_builtins(payload)  # type: ignore[no-any-return]
    return dict(payload)


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
