"""JSON Schemas of the API objects as contracts.codec writes them, derived from the same type hints.

The codec compiles its encoders and decoders from the dataclasses' hints (contracts/codec_hints.py), so the
schema walks those hints with the codec's rules: a dataclass is a map of its field names (every field is
written; a field with a default may be left out, the decoder then takes the default), `Resources` a map of
dimension -> integer milli-units, a read-only mapping a map with string keys, a tuple a list, `float`
any JSON number (the decoder takes an integer too), a free-form value (`object`) anything. Decoded values
that the hints do not promise are the codec's leniency, not the contract, so the schema leaves them out.
(msgspec's own schema generator cannot be used here: it cannot write the defaults of type FrozenMap and
Resources the dataclasses use.)
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Mapping
from typing import Any

from contracts.codec import encode
from contracts.codec_hints import field_hints
from contracts.objects import FrozenMap
from contracts.resources import Resources

_SCALARS: Mapping[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    object: {},
    Any: {},
}
_RESOURCES = {
    "type": "object",
    "description": "a resource vector: dimension (cpu, memory, nvidia.com/gpu, ...) -> integer milli-units "
    "(cpu 1 is 1000, memory 1Ki is 1024000)",
    "additionalProperties": {"type": "integer"},
}


def object_schema(kind: str, cls: type) -> dict[str, Any]:
    """The tagged form contracts.codec.encode_object writes, {"kind", "object"}, with every class the
    object holds in $defs."""
    defs: dict[str, Any] = {}
    ref = _schema(cls, defs)
    return {
        "title": kind,
        "description": f"A {kind} as contracts.codec encodes it, tagged with its kind",
        "type": "object",
        "properties": {"kind": {"const": kind}, "object": ref},
        "required": ["kind", "object"],
        "$defs": dict(sorted(defs.items())),
    }


def _schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if hint is Resources:
        defs["Resources"] = _RESOURCES
        return {"$ref": "#/$defs/Resources"}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # a placeholder, so a class that holds itself ends
            defs[hint.__name__] = _dataclass_schema(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema(arg, defs) for arg in args]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], defs)}
        raise TypeError(f"no schema for {hint!r}: the codec writes only tuple[X, ...] fields")
    if origin in (Mapping, dict) and len(args) == 2 and args[0] is str:
        return {"type": "object", "additionalProperties": _schema(args[1], defs)}
    if hint in (Mapping, FrozenMap):
        return {"type": "object"}
    raise TypeError(f"no schema for {hint!r}: teach contracts/schema_objects.py how the codec writes it")


def _dataclass_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = dict(field_hints(cls))
    properties: dict[str, Any] = {}
    required = []
    for field in dataclasses.fields(cls):
        schema = _schema(hints[field.name], defs)
        if field.default is not dataclasses.MISSING:
            schema["default"] = encode(field.default)
        elif field.default_factory is not dataclasses.MISSING:
            schema["default"] = encode(field.default_factory())
        else:
            required.append(field.name)
        properties[field.name] = schema
    out: dict[str, Any] = {"title": cls.__name__, "type": "object", "properties": properties}
    doc = _own_doc(cls)
    if doc:
        out["description"] = doc
    out["required"] = required
    return out


def _own_doc(cls: type) -> str:
    """The class's docstring; a dataclass without one gets its signature as __doc__, which says nothing
    the properties do not."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    return "" if doc.startswith(f"{cls.__name__}(") else doc
