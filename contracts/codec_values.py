"""Decoders for the values inside an API dataclass: free-form values, floats, `Resources`, tuples and
read-only mappings, each a closure that knows its element decoder and the "Class.field" it reports in a
DecodeError. The dataclass decoders that put them together are in `contracts.codec_decode`.

An element decoder of None means a scalar or free-form element: plain values are final and containers
are frozen (see `freeze`). None elements stay None whatever the hint, as they always have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contracts.codec_hints import SCALARS
from contracts.objects import frozen_map
from contracts.resources import Resources

# a value that is not None -> the decoded value
Decoder = Callable[[Any], Any]

_STR = frozenset({str})
_INT = frozenset({int})


class DecodeError(ValueError):
    """Plain data of the wrong shape for what it is decoded as; the message names the class and field."""


def freeze(value: Any) -> Any:
    """Free-form values (Any): mappings and lists become read-only, hashable values."""
    if isinstance(value, Mapping):
        return frozen_map({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def as_is(value: Any) -> Any:
    return value


def to_float(value: Any) -> Any:
    # JSON and MessagePack writers may have turned a whole float into an int
    return float(value) if isinstance(value, int) else freeze(value)


def resources_decoder(where: str) -> Decoder:
    def decode_resources(value: Any) -> Resources:
        if value.__class__ is not dict and not isinstance(value, Mapping):
            raise DecodeError(f"{where}: expected a mapping of milli-units, got {type(value).__name__}")
        if _STR.issuperset(map(type, value)) and _INT.issuperset(map(type, value.values())):
            return Resources(value)  # what the encoder wrote; Resources copies it
        try:
            return Resources(dict(zip(map(str, value), map(int, value.values()), strict=True)))
        except (TypeError, ValueError, OverflowError) as exc:
            raise DecodeError(f"{where}: expected integer milli-units ({exc})") from None

    return decode_resources


def tuple_decoder(element: Decoder | None, where: str) -> Decoder:
    def decode_tuple(value: Any) -> tuple[Any, ...]:
        if value.__class__ is not list and not isinstance(value, list | tuple):
            raise DecodeError(f"{where}: expected a list, got {type(value).__name__}")
        if element is None:
            if SCALARS.issuperset(map(type, value)):
                return tuple(value)
            return tuple(map(freeze, value))
        if None in value:
            return tuple([None if v is None else element(v) for v in value])
        return tuple(map(element, value))

    return decode_tuple


def mapping_decoder(element: Decoder | None, where: str) -> Decoder:
    def decode_mapping(value: Any) -> Mapping[str, Any]:
        if value.__class__ is not dict and not isinstance(value, Mapping):
            raise DecodeError(f"{where}: expected a mapping, got {type(value).__name__}")
        if element is not None:
            return frozen_map({str(k): None if v is None else element(v) for k, v in value.items()})
        if _STR.issuperset(map(type, value)) and SCALARS.issuperset(map(type, value.values())):
            return frozen_map(value)  # labels and annotations as the encoder wrote them; copied
        return frozen_map({str(k): freeze(v) for k, v in value.items()})

    return decode_mapping
