"""The part of the node table that does not change inside a session, kept between sessions (Volcano 1.14's
incremental snapshot, for lahar's columns).

`NodeRows` is the producer's mutable copy: the scheduler's view updates one row per node event (a node
registers, turns ready or not ready) instead of converting every Node object for every session. `base()`
hands out a `NodeBase`, an immutable copy (read-only numpy arrays, tuples), cached until the next change,
so a session may read it in another thread while the view keeps folding events. A session builds its
working `NodeTable` on a base: the static columns are shared, only the accounting columns are new.

Offline producers (`lahar simulate`, tests, a snapshot without a base) build a base from the Node
objects with `NodeBase.build`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from contracts.objects import Node, Taint
from contracts.resources import PODS, Resources
from services.scheduler.core.model.resource_index import ResourceIndex

DEFAULT_MAX_PODS = 110
_MIN_CAPACITY = 64


def _allocatable(node: Node) -> Resources:
    return node.allocatable or node.capacity


def _max_pods(allocatable: Mapping[str, int]) -> int:
    return allocatable.get(PODS, DEFAULT_MAX_PODS * 1000) // 1000


def _grown(array: np.ndarray) -> np.ndarray:
    out = np.zeros((2 * len(array), *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@dataclass(frozen=True, slots=True, eq=False)
class NodeBase:
    """Every node's static columns at one point, in node order. Immutable: arrays are read-only."""

    resources: ResourceIndex
    names: tuple[str, ...]
    index: Mapping[str, int]  # name -> row; never modified once built
    allocatable: np.ndarray  # (nodes x dims) int64
    max_pods: np.ndarray
    labels: tuple[Mapping[str, str], ...]
    taints: tuple[tuple[Taint, ...], ...]
    unschedulable: np.ndarray
    ready: np.ndarray

    @classmethod
    def build(cls, nodes: Sequence[Node]) -> NodeBase:
        """From Node objects, in their order."""
        rows = NodeRows()
        rows.put_all(nodes)
        return rows.base()

    def __len__(self) -> int:
        return len(self.names)

    def widened(self, dims: Collection[str]) -> NodeBase:
        """This base with a zero column for each of `dims` it lacks (a resource some pod requests and no
        node has): the columns move, no node is converted again."""
        missing = [d for d in dims if d not in self.resources.column and d != PODS]
        if not missing:
            return self
        resources = ResourceIndex((*self.resources.names, *missing))
        allocatable = np.zeros((len(self.names), resources.width), dtype=np.int64)
        allocatable[:, [resources.column[name] for name in self.resources.names]] = self.allocatable
        return NodeBase(
            resources,
            self.names,
            self.index,
            _read_only(allocatable),
            self.max_pods,
            self.labels,
            self.taints,
            self.unschedulable,
            self.ready,
        )


class NodeRows:
    """The mutable, growing form of a NodeBase. Counters say how many rows were converted from a Node
    (`rows_built`) and how many were changed in place (`rows_updated`): what node events cost."""

    __slots__ = (
        "_allocatable",
        "_base",
        "_max_pods",
        "_ready",
        "_sources",
        "_unschedulable",
        "index",
        "labels",
        "names",
        "resources",
        "rows_built",
        "rows_updated",
        "taints",
    )

    def __init__(self) -> None:
        self.resources = ResourceIndex(())
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.labels: list[Mapping[str, str]] = []
        self.taints: list[tuple[Taint, ...]] = []
        self._sources: list[Resources] = []  # each row's allocatable, to re-lay the columns
        self._allocatable = np.zeros((_MIN_CAPACITY, self.resources.width), dtype=np.int64)
        self._max_pods = np.zeros(_MIN_CAPACITY, dtype=np.int64)
        self._unschedulable = np.zeros(_MIN_CAPACITY, dtype=bool)
        self._ready = np.zeros(_MIN_CAPACITY, dtype=bool)
        self._base: NodeBase | None = None
        self.rows_built = 0
        self.rows_updated = 0

    def __len__(self) -> int:
        return len(self.names)

    @property
    def ready_count(self) -> int:
        return int(self._ready[: len(self.names)].sum())

    # --- changes ----------------------------------------------------------------------------------
    def put(self, node: Node) -> None:
        """A node registered (again): its row is written, or appended for a new node."""
        self.put_all((node,))

    def put_all(self, nodes: Iterable[Node]) -> None:
        nodes = list(nodes)
        wanted: set[str] = set()
        for node in nodes:
            wanted.update(_allocatable(node))
        wanted.discard(PODS)
        if not wanted.issubset(self.resources.column):
            # a new resource dimension: every row gets the new column layout
            self.resources = ResourceIndex((*self.resources.names, *wanted))
            self._allocatable = np.zeros((len(self._max_pods), self.resources.width), dtype=np.int64)
            for row, source in enumerate(self._sources):
                self._allocatable[row] = self.resources.vector(source)
            self.rows_built += len(self._sources)
        for node in nodes:
            self._write(node)
        self._base = None

    def set_ready(self, name: str, ready: bool) -> None:
        row = self.index.get(name)
        if row is not None and bool(self._ready[row]) != ready:
            self._ready[row] = ready
            self.rows_updated += 1
            self._base = None

    def _write(self, node: Node) -> None:
        name = node.meta.name
        row = self.index.get(name)
        if row is None:
            row = len(self.names)
            if row == len(self._max_pods):
                self._grow()
            self.index[name] = row
            self.names.append(name)
            self.labels.append(node.meta.labels)
            self.taints.append(node.taints)
            self._sources.append(_allocatable(node))
        else:
            self.labels[row] = node.meta.labels
            self.taints[row] = node.taints
            self._sources[row] = _allocatable(node)
        allocatable = self._sources[row]
        self._allocatable[row] = self.resources.vector(allocatable)
        self._max_pods[row] = _max_pods(allocatable)
        self._unschedulable[row] = node.unschedulable
        self._ready[row] = node.ready
        self.rows_built += 1

    def _grow(self) -> None:
        """Double the capacity: appending n nodes copies O(n) rows in all."""
        self._allocatable = _grown(self._allocatable)
        self._max_pods = _grown(self._max_pods)
        self._unschedulable = _grown(self._unschedulable)
        self._ready = _grown(self._ready)

    # --- reading ----------------------------------------------------------------------------------
    def base(self) -> NodeBase:
        """An immutable copy of the rows, the same object until the next change."""
        if self._base is None:
            count = len(self.names)
            self._base = NodeBase(
                self.resources,
                tuple(self.names),
                dict(self.index),
                _read_only(self._allocatable[:count].copy()),
                _read_only(self._max_pods[:count].copy()),
                tuple(self.labels),
                tuple(self.taints),
                _read_only(self._unschedulable[:count].copy()),
                _read_only(self._ready[:count].copy()),
            )
        return self._base
