"""A read-only mapping that shows changes over a base mapping without copying it (pure).

Deciding a request works on a context in which earlier parts of the same request (or earlier requests of
one intake batch) already happened: a queue created by the first document must exist for the job of the
second. Copying a table of every job for each such step would make a decision cost as much as the whole
cluster; an overlay costs as much as the changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

_GONE = object()


class Overlay(Mapping[str, Any]):
    """`base` with `changes` applied: a key mapped to a value is set, a key in `removed` is gone."""

    __slots__ = ("_base", "_changes")

    def __init__(self, base: Mapping[str, Any], changes: Mapping[str, Any] | None = None) -> None:
        # an overlay of an overlay folds into one level, so lookups stay O(1) however many steps
        if isinstance(base, Overlay):
            merged = dict(base._changes)
            merged.update(changes or {})
            self._base: Mapping[str, Any] = base._base
            self._changes: dict[str, Any] = merged
        else:
            self._base = base
            self._changes = dict(changes or {})

    def with_value(self, key: str, value: Any) -> Overlay:
        return Overlay(self, {key: value})

    def without(self, key: str) -> Overlay:
        return Overlay(self, {key: _GONE})

    def __getitem__(self, key: str) -> Any:
        value = self._changes.get(key, self._base.get(key, _GONE))
        if value is _GONE:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        if key in self._changes:
            return self._changes[key] is not _GONE
        return key in self._base

    def __iter__(self) -> Iterator[str]:
        for key in self._base:
            if key not in self._changes:
                yield key
        for key, value in self._changes.items():
            if value is not _GONE:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __repr__(self) -> str:
        return f"Overlay({dict(self.items())!r})"
