"""The resolved type hints the codec compiles its per-class encoders and decoders from."""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from typing import Any

from contracts import objects

# Hints whose values are plain data already: both directions copy them as they are.
SCALARS = frozenset({str, int, float, bool, type(None)})


def field_hints(cls: type) -> tuple[tuple[str, Any], ...]:
    """(field name, resolved hint) in field order. Names resolve in `contracts.objects`, where the API
    dataclasses and the types their fields use are defined (the annotations are strings there), and in
    the class's own module (contracts/objects_flow.py's kinds name types of both)."""
    own = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    hints = typing.get_type_hints(cls, {**vars(objects), **own})
    return tuple((field.name, hints[field.name]) for field in dataclasses.fields(cls))


def is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def without_none(hint: Any) -> Any:
    """X for `X | None`, the hint itself for anything else (a union of several types included)."""
    if not is_union(hint):
        return hint
    options = [a for a in typing.get_args(hint) if a is not type(None)]
    return options[0] if len(options) == 1 else hint
