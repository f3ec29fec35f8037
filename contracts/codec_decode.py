"""Plain data to API dataclasses, with one decoder per class compiled on first use from its type hints.

Decoding is what the reflective decoder did, per field: nested dataclasses from mappings, `Resources` from
a mapping of milli-units, tuples from lists, read-only mappings from mappings, ints in float fields as
floats, and scalar or free-form values frozen when they are containers, so a decoded object is a hashable
value. A None stays None whatever the hint; fields absent from the data take their defaults and keys that
are not fields are ignored, so payloads written before a field was added or after one was dropped still
decode.

A value of the wrong shape for its hint (not a mapping where a dataclass, `Resources` or mapping belongs,
not a list where a tuple does) or a required field missing raises DecodeError naming "Class.field"; the
reflective decoder let Python's own TypeError or AttributeError through there, or read a string as a list
of characters.

Compiling once per class means the hints are walked once, not on every call. The common case, data the
encoder wrote, with every field present and plain values in the scalar fields, takes a fast path: all
fields are read in one C-level pass, only the fields that need converting are visited, and the class is
built from positional arguments. Anything else takes the field-by-field path.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import typing
from collections.abc import Callable, Mapping
from itertools import compress
from typing import Any, TypeVar

from contracts.codec_hints import SCALARS, field_hints, is_union, without_none
from contracts.codec_values import (
    DecodeError,
    Decoder,
    as_is,
    freeze,
    mapping_decoder,
    resources_decoder,
    to_float,
    tuple_decoder,
)
from contracts.objects import FrozenMap
from contracts.resources import Resources

T = TypeVar("T")


def decode(cls: type[T], data: Any) -> T:
    # mypy does not see a type[T] as Hashable (every class is), so the cache is keyed on it as a plain type
    plain_cls: type = cls
    decoded: T = _top_level_decoder(plain_cls)(data)
    return decoded


@functools.cache
def _top_level_decoder(cls: type) -> Decoder:
    return _dataclass_decoder(cls, cls.__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    """How to decode one class, shared by every field that holds one."""

    cls: type
    names: tuple[str, ...]
    # per field, in field order: None for a scalar or free-form field (see codec_values)
    decoders: tuple[Decoder | None, ...]
    # the fast path's selectors: the fields to check for plain values, the fields to convert
    scalar_mask: tuple[bool, ...]
    converters: tuple[tuple[int, Decoder], ...]


@functools.cache
def _plan(cls: type) -> _Plan:
    if not all(field.init for field in dataclasses.fields(cls)):
        raise TypeError(f"{cls.__name__}: the codec builds objects from all their fields, by position")
    hints = field_hints(cls)
    decoders = tuple(_field_decoder(hint, f"{cls.__name__}.{name}") for name, hint in hints)
    return _Plan(
        cls=cls,
        names=tuple(name for name, _ in hints),
        decoders=decoders,
        scalar_mask=tuple(d is None for d in decoders),
        converters=tuple((i, d) for i, d in enumerate(decoders) if d is not None),
    )


def _field_decoder(hint: Any, where: str) -> Decoder | None:
    """The decoder for a value of `hint`, or None when it is a scalar or free-form value."""
    hint = without_none(hint)
    if is_union(hint):
        return as_is  # a choice of several types: the reflective decoder kept such values as they came
    if hint is float:
        return to_float
    if hint is Resources:
        return resources_decoder(where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint, where)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        return tuple_decoder(_field_decoder(args[0], where) if args else None, where)
    if origin in (Mapping, dict) or hint in (Mapping, FrozenMap):
        return mapping_decoder(_field_decoder(args[1], where) if len(args) == 2 else None, where)
    return None


def _dataclass_decoder(cls: type, where: str) -> Decoder:
    plan = _plan(cls)
    read_all, scalar_mask, converters = _reader(plan.names), plan.scalar_mask, plan.converters

    def decode_dataclass(data: Any) -> Any:
        # decoded MessagePack and JSON are dicts: the ABC check is for anything else
        if data.__class__ is not dict and not isinstance(data, Mapping):
            raise DecodeError(f"{where}: expected a mapping, got {type(data).__name__}")
        try:
            values = list(read_all(data))
        except KeyError:
            return _decode_field_by_field(plan, data)
        if not SCALARS.issuperset(map(type, compress(values, scalar_mask))):
            return _decode_field_by_field(plan, data)
        for i, decoder in converters:
            value = values[i]
            if value is not None:
                values[i] = decoder(value)
        return cls(*values)

    return decode_dataclass


def _reader(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """All the fields' values in one C-level call, or KeyError."""
    if len(names) > 1:
        return operator.itemgetter(*names)
    # itemgetter of one key returns the bare value, not a 1-tuple
    return lambda data: tuple(data[name] for name in names)


def _decode_field_by_field(plan: _Plan, data: Mapping[str, Any]) -> Any:
    """Data with fields missing, or with containers in scalar fields."""
    values = {}
    for name, decoder in zip(plan.names, plan.decoders, strict=True):
        if name in data:
            value = data[name]
            if decoder is None:
                value = freeze(value)
            elif value is not None:
                value = decoder(value)
            values[name] = value
    try:
        return plan.cls(**values)
    except TypeError:
        # looked for only now: on the fast path the constructor's own check is the only one
        missing = _missing_fields(plan.cls, values)
        if not missing:
            raise
        raise DecodeError(f"{plan.cls.__name__}.{missing[0]}: required, but missing") from None


def _missing_fields(cls: type, present: Mapping[str, Any]) -> list[str]:
    return [
        field.name
        for field in dataclasses.fields(cls)
        if field.default is dataclasses.MISSING
        and field.default_factory is dataclasses.MISSING
        and field.name not in present
    ]
