"""binpack: prefer nodes that are already full, to keep whole nodes free for big pods (Volcano's binpack).

For every resource the pod requests that has a weight (cpu, memory, and the names listed in
`binpack.resources`, each weighted by `binpack.resources.<name>`, default 1):
    s_r = (used_r + request_r) / allocatable_r * w_r
(0 when the node has none of it or the weight is 0), and
    score = sum(s_r) / sum(w_r) * 100 * binpack.weight.
If the request does not fit next to what the node uses on a weighted resource, the node scores 0.
`used` is the node's placed pods without pipelined reservations, as Volcano's node.Used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from contracts.resources import CPU, MEMORY
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.plugin import Event, Plugin

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.task import TaskInfo

MAX_SCORE = 100


def resource_weights(arguments: Mapping[str, Any], prefix: str) -> dict[str, int]:
    """Volcano's weight parsing shared with network-topology-aware: `<prefix>.cpu`, `<prefix>.memory`
    (default 1), `<prefix>.resources` (comma-separated names) with `<prefix>.resources.<name>` (default
    1); a negative weight falls back to 1."""
    weights: dict[str, int] = {}
    for name in str(argument(arguments, f"{prefix}.resources", "") or "").split(","):
        name = name.strip()
        if name:
            weight = argument(arguments, f"{prefix}.resources.{name}", 1)
            weights[name] = weight if weight >= 0 else 1
    for name in (CPU, MEMORY):
        weight = argument(arguments, f"{prefix}.{name}", 1)
        weights[name] = weight if weight >= 0 else 1
    return weights


class BinpackPlugin(Plugin):
    name = "binpack"
    arguments_spec: ClassVar[Mapping[str, type]] = {
        "binpack.weight": int,
        "binpack.cpu": int,
        "binpack.memory": int,
        "binpack.resources": str,
        "binpack.resources.*": int,
    }

    def on_session_open(self, ssn: Session) -> None:
        self._weight = argument(self.arguments, "binpack.weight", 1)
        weights = {}
        for name, weight in resource_weights(self.arguments, "binpack").items():
            col = ssn.resources.column.get(name)
            if col is not None:
                weights[col] = weight
        # The weighted columns only, as contiguous matrices (used kept live by the allocate/deallocate
        # events): gathering rows of a small contiguous matrix is several times cheaper than
        # fancy-indexing columns of the NodeTable on every call.
        nodes = ssn.nodes
        self._columns = sorted(weights)
        self._weights = np.array([weights[col] for col in self._columns], dtype=np.int64)
        self._allocatable = np.ascontiguousarray(nodes.allocatable[:, self._columns])
        self._used = np.ascontiguousarray(nodes.used[:, self._columns])
        # per column, no zero-capacity guard needed (a list: numpy's stubs do not know the matrix is 2-D)
        self._everywhere: list[bool] = cast(np.ndarray, (self._allocatable > 0).all(axis=0)).tolist()
        self._node_of: dict[str, int] = {}  # where an in-session placement went (undo sees node -1)
        self._plans: dict[bytes, tuple[np.ndarray, list[tuple[int, int, bool]], int]] = {}

    def node_order(self, ssn: Session, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
        score: np.ndarray = np.zeros(len(candidates))
        plan = self._plans.get(task.vector.tobytes())
        if plan is None:
            plan = self._plan(task.vector)
            self._plans[task.vector.tobytes()] = plan
        request, scored, weight_sum = plan
        if not weight_sum:
            return score
        allocatable = self._allocatable.take(candidates, axis=0)
        after = self._used.take(candidates, axis=0)
        after += request
        overflow = None
        for j, weight, everywhere in scored:
            capacity, total = allocatable[:, j], after[:, j]
            if everywhere:
                over = total > capacity
                score += total * weight / capacity
            else:  # a node without the resource adds 0 and cannot overflow on it
                has = capacity > 0
                over = has & (total > capacity)
                score += np.where(has, total * weight / np.maximum(capacity, 1), 0.0)
            overflow = over if overflow is None else overflow | over
        score = score / weight_sum * (MAX_SCORE * self._weight)
        if overflow is not None:
            score[overflow] = 0.0
        return score

    def _plan(self, vector: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, bool]], int]:
        """For one request vector: the request on the weighted columns, the columns scored (requested,
        weight > 0: a zero-weight resource is neither scored nor checked for fit, as in Volcano) and the
        weight sum (every requested weighted resource). A weight sum of 0 means no score."""
        request = vector[self._columns]
        asked = request > 0
        scored = [
            (int(j), int(self._weights[j]), self._everywhere[j])
            for j in np.flatnonzero(asked & (self._weights > 0))
        ]
        weight_sum = int(self._weights[asked].sum()) if self._weight else 0
        return request, scored, weight_sum

    # --- live accounting ---------------------------------------------------------------------------------
    def on_allocate(self, ssn: Session, event: Event) -> None:
        node = event.task.node_index
        self._node_of[event.task.uid] = node
        self._used[node] = ssn.nodes.used[node, self._columns]

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        node = event.task.node_index
        if node < 0:
            node = self._node_of.pop(event.task.uid)
        self._used[node] = ssn.nodes.used[node, self._columns]
