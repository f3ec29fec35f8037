"""Scores kept for the node rows across a session's scoring calls, recomputed only where a node changed.

A node's resource scores for a pod (nodeorder's LeastAllocated, MostAllocated, BalancedAllocation) depend
only on the pod's request and on what that node holds; in a session most pods ask for one of a few
requests (a gang's tasks are alike), and each placement changes one node. So the score of a row for a
request is kept once computed, and recomputed when a call reads it after its node changed (`changed`
counts a row's changes): one by one in plain Python when few rows are due (numpy's fixed cost per call
would be most of the work), vectorised when many are. Either way a row gets the score a fresh
computation would give it (node_scores.py). Rows are computed as candidates ask for them, so a request
asked for once costs what scoring its candidates cost; the MAX_KEPT requests used last are kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

# the scores of the given node rows (an index array) for one key
ComputeRows = Callable[[np.ndarray], np.ndarray]
# the score of one node row for one key
ComputeOne = Callable[[int], float]

ONE_BY_ONE_ROWS = 32  # due rows up to this many are recomputed one by one
MAX_KEPT = 64  # requests kept at once (a row array of each); the least recently used goes first


class KeptScores:
    __slots__ = ("_changes", "_kept", "_rows")

    def __init__(self, rows: int) -> None:
        self._rows = rows
        self._changes = np.zeros(rows, dtype=np.int64)  # per row: how often its node changed
        # key -> (a score per row, the row's change count when it was computed; -1: never)
        self._kept: OrderedDict[Hashable, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def take(
        self, key: Hashable, candidates: np.ndarray, compute_rows: ComputeRows, compute_one: ComputeOne
    ) -> np.ndarray:
        """The scores of the candidate rows for `key` (a new array, the caller's to change)."""
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = (np.zeros(self._rows), np.full(self._rows, -1, dtype=np.int64))
            if len(self._kept) > MAX_KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        scores, computed_at = kept
        now = self._changes.take(candidates)
        due = computed_at.take(candidates) != now
        rows = candidates[due]
        if len(rows) > ONE_BY_ONE_ROWS:
            scores[rows] = compute_rows(rows)
        else:
            for row in rows.tolist():
                scores[row] = compute_one(row)
        computed_at[rows] = now[due]
        taken: np.ndarray = scores.take(candidates)
        return taken

    def changed(self, row: int) -> None:
        """What node `row` holds changed: its scores are recomputed when next read."""
        self._changes[row] += 1
