"""API objects to plain data and back, for event payloads and the etcd read model.

The encoding is generic over the dataclasses of `contracts.objects`: a dataclass becomes a mapping of its
field names (snake_case), `Resources` a mapping of dimension -> milli-units, read-only mappings become
mappings and tuples lists. Every value is then MessagePack- and JSON-safe. Decoding walks the field type
hints, so the schema is the dataclass and cannot drift from it.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

from contracts import objects
from contracts.objects import ApiObject, FrozenMap, frozen_map
from contracts.resources import Resources

KINDS: Mapping[str, type] = {
    cls.kind: cls
    for cls in (
        objects.Node,
        objects.Pod,
        objects.PriorityClass,
        objects.PodGroup,
        objects.Queue,
        objects.HyperNode,
        objects.Job,
        objects.Command,
    )
}


class DecodeError(ValueError):
    pass


def encode(value: Any) -> Any:
    """Any contracts value to plain data (dict/list/str/int/float/bool/None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Resources):
        return dict(value.items())
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    return value


def encode_object(obj: ApiObject) -> dict[str, Any]:
    """An API object with its kind, so it can be decoded without knowing the kind in advance."""
    return {"kind": obj.kind, "object": encode(obj)}


def decode_object(data: Mapping[str, Any]) -> ApiObject:
    kind = data.get("kind")
    cls = KINDS.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise DecodeError(f"unknown kind {kind!r}")
    return decode(cls, data.get("object"))


def decode(cls: type, data: Any) -> Any:
    if not isinstance(data, Mapping):
        raise DecodeError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
    hints = _hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in data:
            values[field.name] = _decode_value(
                hints[field.name], data[field.name], f"{cls.__name__}.{field.name}"
            )
    return cls(**values)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(objects))


def _decode_value(hint: Any, value: Any, where: str) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return _decode_value(options[0], value, where) if len(options) == 1 else value
    if hint is Resources:
        return Resources({str(k): int(v) for k, v in value.items()})
    if dataclasses.is_dataclass(hint):
        return decode(hint, value)
    if origin is tuple:
        inner = args[0] if args else Any
        return tuple(_decode_value(inner, v, where) for v in value)
    if origin in (Mapping, dict) or hint in (Mapping, FrozenMap):
        inner = args[1] if len(args) == 2 else Any
        return frozen_map({str(k): _decode_value(inner, v, where) for k, v in value.items()})
    if hint is float and isinstance(value, int):
        return float(value)
    return _freeze(value)


def _freeze(value: Any) -> Any:
    """Free-form values (Any): mappings and lists become read-only, hashable values."""
    if isinstance(value, Mapping):
        return frozen_map({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value
