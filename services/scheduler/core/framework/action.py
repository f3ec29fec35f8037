"""The action contract and the ordered containers actions share."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session

T = TypeVar("T")


class Action:
    """An action runs once per session (enqueue, allocate, backfill, preempt, reclaim)."""

    name: ClassVar[str] = ""
    arguments_spec: ClassVar[Mapping[str, type]] = {}

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.arguments = dict(arguments)

    def execute(self, ssn: Session) -> None:
        raise NotImplementedError


class _Entry(Generic[T]):
    __slots__ = ("item", "less")

    def __init__(self, item: T, less: Callable[[T, T], bool]) -> None:
        self.item = item
        self.less = less

    def __lt__(self, other: _Entry[T]) -> bool:
        return self.less(self.item, other.item)


class PriorityQueue(Generic[T]):
    """A heap ordered by a session order function (`less(a, b)` true when a goes first). Items are
    re-ordered when pushed back, which is how Volcano lets a queue's share change its position."""

    __slots__ = ("_heap", "_less")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._heap: list[_Entry[T]] = [_Entry(i, less) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, self._less))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def drain(self) -> list[T]:
        """Every item, in no particular order, leaving the queue empty: for a caller that treats them
        alike (popping them in order would compare them O(n log n) times for nothing)."""
        items = [entry.item for entry in self._heap]
        self._heap = []
        return items

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
