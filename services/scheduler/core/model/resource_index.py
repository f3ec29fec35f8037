"""Column layout of resource vectors inside one session: every dimension the cluster or any task mentions
gets a column, so fit checks and scores are numpy operations over an (nodes x dims) matrix."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from contracts.resources import CPU, MEMORY, PODS, Resources


class ResourceIndex:
    """Maps dimension names to matrix columns. `pods` is not a column: pod count is tracked separately,
    as Volcano does with MaxTaskNum."""

    __slots__ = ("column", "names")

    def __init__(self, names: Iterable[str]) -> None:
        ordered = [CPU, MEMORY, *sorted({n for n in names if n not in (CPU, MEMORY, PODS)})]
        self.names: tuple[str, ...] = tuple(ordered)
        self.column: dict[str, int] = {name: i for i, name in enumerate(self.names)}

    @property
    def width(self) -> int:
        return len(self.names)

    def vector(self, resources: Mapping[str, int]) -> np.ndarray:
        """Dense int64 vector of `resources`; dimensions outside the index are dropped (a task requesting
        a resource no node has is caught earlier, by `unknown_dims`)."""
        out = np.zeros(len(self.names), dtype=np.int64)
        for name, value in resources.items():
            col = self.column.get(name)
            if col is not None:
                out[col] = value
        return out

    def resources(self, vector: np.ndarray) -> Resources:
        return Resources({name: int(vector[i]) for i, name in enumerate(self.names) if vector[i]})

    def requested_columns(self, vector: np.ndarray) -> np.ndarray:
        return np.flatnonzero(vector > 0)
