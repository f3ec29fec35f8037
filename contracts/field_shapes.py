"""Which field names an API object may hold, as data, and the walk that finds every other one.

A shape says what a value of a manifest may contain:

- an object: a mapping from each field name the API knows to that field's shape (`obj` builds one);
- `LEAF`: a scalar or a list of scalars; nothing inside it is a field name;
- `FREE`: a free-form mapping (labels, resource quantities, plugin arguments): any key is accepted;
- `MapOf(shape)`: a mapping whose keys are free and whose values all have `shape` (Volcano's
  taskStatusCount: task name -> its counts).

A list takes the shape of its items, so `containers` has the shape of one container and the walk visits
each item, naming it `containers[i]`. Whether a value has the right type is the parser's to say; the walk
only names keys no shape admits, and never descends into what it cannot check (a scalar where an object
was expected, a list of lists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

from contracts.errors import FieldError
from contracts.limits import ECHO_MAX_CHARS, clip
from contracts.parse_fields import join_path


class _Opaque:
    """A value the walk does not look into."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


LEAF: Final = _Opaque("LEAF")
FREE: Final = _Opaque("FREE")


@dataclass(frozen=True, slots=True)
class MapOf:
    """A mapping of free keys whose values all have one shape."""

    values: Shape


Shape: TypeAlias = "Mapping[str, Shape] | MapOf | _Opaque"

# a suggestion is only looked for in a key short enough to be a typo of a field name, and only for the
# first unknown fields of a document, so that a hostile document of thousands of unknown keys costs
# little more than a valid one
_SUGGEST_MAX_KEY_CHARS = 64
_SUGGEST_MAX_PER_DOCUMENT = 100
_PREFIX_MIN_CHARS = 5  # a shorter key begins too many names to say which one was meant


def obj(leaves: str = "", /, **fields: Shape) -> dict[str, Shape]:
    """An object shape: `leaves` names its scalar fields, separated by spaces; `fields` its others."""
    shape: dict[str, Shape] = dict.fromkeys(leaves.split(), LEAF)
    overlap = shape.keys() & fields.keys()
    if overlap:
        raise ValueError(f"fields given twice: {sorted(overlap)}")
    shape.update(fields)
    return shape


def unknown_fields(value: object, shape: Shape, document: str, path: str = "") -> list[FieldError]:
    """Every key of `value` (a parsed document, or part of one at `path`) that `shape` does not admit, each
    an error at its full path naming the nearest known field when one is close."""
    found: list[FieldError] = []
    _walk(value, shape, path, document, found)
    return found


def _walk(value: object, shape: Shape, path: str, document: str, found: list[FieldError]) -> None:
    if type(value) is list:
        for index, item in enumerate(value):
            if type(item) is dict:
                _walk(item, shape, f"{path}[{index}]", document, found)
        return
    if type(value) is not dict:
        return
    if isinstance(shape, MapOf):
        inner = shape.values
        if inner is not LEAF and inner is not FREE:
            for key, item in value.items():
                _walk(item, inner, join_path(path, str(key)), document, found)
        return
    if isinstance(shape, _Opaque):
        return
    for key, item in value.items():
        child = shape.get(key) if type(key) is str else None
        if child is None:
            found.append(FieldError(document, join_path(path, str(key)), _unknown(str(key), shape, found)))
        elif child is not LEAF and child is not FREE and type(item) in (dict, list):
            _walk(item, child, join_path(path, key), document, found)


def _unknown(key: str, shape: Mapping[str, Shape], found: list[FieldError]) -> str:
    message = f'unknown field "{clip(key, ECHO_MAX_CHARS)}"'
    if len(key) > _SUGGEST_MAX_KEY_CHARS or len(found) >= _SUGGEST_MAX_PER_DOCUMENT:
        return message
    nearest = suggestion(key, shape.keys())
    return f'{message}; did you mean "{nearest}"?' if nearest else message


def suggestion(key: str, known: Iterable[str]) -> str | None:
    """The known field name `key` most likely misspells, ignoring case: the nearest within one edit (a
    letter added, dropped, changed, or two swapped: "sepc", "resoures") for keys of up to 5 letters,
    within two for longer ones, the first in `known` among equals; else, for a key of at least 5 letters,
    the first name it begins ("priorityClass" for "priorityClassName"). None when nothing is that close."""
    names = list(known)
    folded = key.casefold()
    limit = 1 if len(folded) <= 5 else 2
    best: str | None = None
    for name in names:
        if abs(len(name) - len(folded)) > limit:
            continue
        distance = _edits(folded, name.casefold(), limit)
        if distance <= limit:
            best, limit = name, distance - 1
            if limit < 0:
                break
    if best is None and len(folded) >= _PREFIX_MIN_CHARS:
        best = next((name for name in names if name.casefold().startswith(folded)), None)
    return best


def _edits(a: str, b: str, limit: int) -> int:
    """The optimal-string-alignment distance between a and b (Damerau-Levenshtein without editing a
    substring twice), or limit + 1 as soon as it must exceed limit."""
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]
