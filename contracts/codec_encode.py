"""API values to plain data, with one encoder per class compiled on first use.

The output is exactly the reflective encoder's (`tests/unit/contracts/test_codec_wire.py` keeps it as the
reference): a dataclass becomes a dict of its fields in field order, `Resources` a dict of dimension ->
milli-units, other mappings dicts with str keys, tuples and lists lists, anything else stays as it is.

What compiling buys: a dataclass's encoder knows from its type hints which fields hold scalars (copied as
they are, with no call per field) and which need converting, and label-like `Mapping[str, str]` and
`tuple[str, ...]` fields are copied in one C-level step. A converted field's value is checked to be of the
class its hint promises and otherwise handed to `encode`, which dispatches on the value's class as the
reflective encoder did, so a dict in a `Mapping` field or a list in a `tuple` field encodes as it always
has. Scalars are taken at their hint's word: the two encoders could only differ on a container in a
field hinted `str`, `int`, `float` or `bool` (or in a `tuple[str, ...]`), which is a bug in whatever built
the object.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from contracts.codec_hints import SCALARS, field_hints, without_none
from contracts.objects import FrozenMap
from contracts.resources import Resources

Encoder = Callable[[Any], Any]

_BY_CLASS: dict[type, Encoder] = {}
_STR = frozenset({str})


def encode(value: Any) -> Any:
    """Any contracts value to plain data (dict/list/str/int/float/bool/None)."""
    return (_BY_CLASS.get(value.__class__) or _class_encoder(value.__class__))(value)


def _class_encoder(cls: type) -> Encoder:
    encoder = _BY_CLASS.get(cls)
    if encoder is None:
        encoder = _BY_CLASS[cls] = _encoder_for_class(cls)
    return encoder


def _encoder_for_class(cls: type) -> Encoder:
    # the reflective encoder's tests, in its order, asked once of the class instead of every value
    if dataclasses.is_dataclass(cls):
        return _dataclass_encoder(cls)
    if issubclass(cls, Resources):
        return Resources.to_dict
    if cls is FrozenMap:
        return _frozen_map
    if issubclass(cls, Mapping):
        return _mapping
    if issubclass(cls, tuple | list):
        return _sequence
    return _as_is


def _as_is(value: Any) -> Any:
    return value


def _frozen_map(value: FrozenMap) -> dict[str, Any]:
    # its backing dict: FrozenMap's inherited items() would call back into Python for every key
    items = value._items
    return dict(zip(_str_keys(items), map(encode, items.values()), strict=True))


def _scalar_frozen_map(value: FrozenMap) -> dict[str, Any]:
    items = value._items  # see _frozen_map
    return items.copy() if _STR.issuperset(map(type, items)) else {str(k): v for k, v in items.items()}


def _str_keys(items: dict[Any, Any]) -> Iterable[str]:
    # str() of a key that is a str already is a costly no-op, and labels and annotations have only those
    return items if _STR.issuperset(map(type, items)) else map(str, items)


def _mapping(value: Mapping[Any, Any]) -> dict[str, Any]:
    return {str(k): encode(v) for k, v in value.items()}


def _sequence(value: tuple[Any, ...] | list[Any]) -> list[Any]:
    return list(map(encode, value))


def _dataclass_encoder(cls: type) -> Encoder:
    try:
        hints = field_hints(cls)
    except NameError:
        # a dataclass from outside contracts.objects whose hints name its own module's types: encode
        # each field by what it holds
        hints = tuple((field.name, object) for field in dataclasses.fields(cls))
    names = tuple(name for name, _ in hints)
    converters = tuple(
        (name, *converter) for name, hint in hints if (converter := _field_encoder(hint)) is not None
    )

    def encode_dataclass(obj: Any) -> dict[str, Any]:
        data = {name: getattr(obj, name) for name in names}
        for name, expected, convert in converters:
            value = data[name]
            # reassigning a key keeps its place, so the dict stays in field order
            if value.__class__ is expected:
                data[name] = convert(value)
            elif value is not None:
                data[name] = encode(value)
        return data

    return encode_dataclass


def _field_encoder(hint: Any) -> tuple[type | None, Encoder] | None:
    """How to convert a field's value: the class its hint promises and the encoder specialised for that
    class (other values go through `encode`); None when the hint says it is plain data already."""
    hint = without_none(hint)
    if hint in SCALARS:
        return None
    if hint is Resources:
        return Resources, Resources.to_dict
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint, _class_encoder(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        scalars = bool(args) and all(a in SCALARS or a is Ellipsis for a in args)
        return tuple, list if scalars else _sequence
    if origin in (Mapping, dict):
        scalars = len(args) == 2 and args[1] in SCALARS
        return FrozenMap, _scalar_frozen_map if scalars else _frozen_map
    return None, encode  # no class is None: every value is dispatched on its own class
