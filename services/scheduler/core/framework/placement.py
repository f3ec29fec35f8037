"""Finding and choosing nodes for a task, vectorised over the whole NodeTable.

Feasibility = every plugin predicate passes and the task's request fits the node's future idle resources.
As in Volcano and kube-scheduler, the search stops after an adaptive number of feasible nodes, starting
where the previous search stopped (round-robin), so large clusters cost the same per task as medium ones.
Scores come from the node-order plugins; ties are broken with the session's seeded RNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from services.scheduler.core.model.pending import CAPACITY
from services.scheduler.core.model.task import TaskInfo

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5


def num_feasible_nodes_to_find(total: int, percentage: int = 0) -> int:
    """Volcano's CalculateNumOfFeasibleNodesToFind with its defaults (adaptive 50 - n/125 %, floor 5 %,
    at least 100 nodes)."""
    if total <= MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return total
    adaptive = percentage or max(50 - total // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
    return max(total * adaptive // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class FitResult:
    candidates: np.ndarray  # node indices, feasible
    reasons: dict[str, int]  # only filled when nothing is feasible: reason -> number of nodes


def fits_rows(matrix: np.ndarray, cols: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Row mask: matrix[row, c] >= need[c] for every requested column c. A loop over the few requested
    columns is much cheaper than fancy-indexing a (rows x dims) block."""
    mask: np.ndarray = matrix[:, cols[0]] >= need[cols[0]]
    for col in cols[1:]:
        mask &= matrix[:, col] >= need[col]
    return mask


def _resource_shortfall(
    ssn: Session, task: TaskInfo, available: np.ndarray, remaining: np.ndarray, reasons: dict[str, int]
) -> np.ndarray:
    for col in task.requested_columns:
        lacking = remaining & (available[:, col] < task.init_vector[col])
        count = int(lacking.sum())
        if count:
            dimension = ssn.resources.names[col]
            reason = f"insufficient {dimension}"
            reasons[reason] = count
            ssn.node_reasons[reason] = (CAPACITY, dimension)
            remaining &= ~lacking
    return remaining


def feasible_nodes(
    ssn: Session,
    task: TaskInfo,
    *,
    allowed: np.ndarray | None = None,
    check_resources: bool = True,
    resolvable_ok: bool = False,
    limit: bool = True,
) -> FitResult:
    """Nodes that can host `task`. `allowed` restricts the search (a HyperNode's members);
    `resolvable_ok` ignores failures eviction could fix (for preempt/reclaim); `check_resources` off lets
    preempt/reclaim look at full nodes."""
    nodes = ssn.nodes
    count = len(nodes)
    failures = [f for f in ssn.predicate_failures(task) if not (resolvable_ok and f.resolvable)]
    cols = task.requested_columns
    fits = check_resources and len(cols)
    if fits and allowed is None and not failures:
        mask = fits_rows(nodes.future_idle(), cols, task.init_vector)  # the usual case: a new array
    else:
        mask = np.ones(count, dtype=bool) if allowed is None else allowed.copy()
        for failure in failures:
            mask &= ~failure.nodes
        if fits:
            mask &= fits_rows(nodes.future_idle(), cols, task.init_vector)
    found = np.flatnonzero(mask)
    if len(found) == 0:
        reasons: dict[str, int] = {}
        remaining = np.ones(count, dtype=bool) if allowed is None else allowed.copy()
        for failure in failures:
            hit = remaining & failure.nodes
            n = int(hit.sum())
            if n:
                reasons[failure.reason] = reasons.get(failure.reason, 0) + n
                ssn.node_reasons[failure.reason] = (failure.kind, failure.dimension)
                remaining &= ~failure.nodes
        if check_resources and len(cols):
            _resource_shortfall(ssn, task, nodes.future_idle(), remaining, reasons)
        if count == 0:
            reasons["no nodes in the cluster"] = 0
        return FitResult(found, reasons)
    if limit:
        wanted = num_feasible_nodes_to_find(count)
        if len(found) > wanted:
            # the first `wanted` of the feasible nodes from next_start_node on, wrapping around
            start = int(np.searchsorted(found, ssn.next_start_node % count))
            after = len(found) - start
            if after >= wanted:
                found = found[start : start + wanted]
            else:
                found = np.concatenate((found[start:], found[: wanted - after]))
            ssn.next_start_node = (int(found[-1]) + 1) % count
    return FitResult(found, {})


def select_best_node(ssn: Session, task: TaskInfo, candidates: np.ndarray) -> int:
    """Nodes where the request fits idle resources come first (allocate now), then those where it only
    fits future idle (pipeline); within that gradient the highest summed score wins."""
    cols = task.requested_columns
    if len(cols) and not ssn.nodes.future_is_idle():
        now = fits_rows(ssn.nodes.idle.take(candidates, axis=0), cols, task.init_vector)
        if now.any():
            candidates = candidates[now]
    if len(candidates) == 1:
        return int(candidates[0])
    scores = ssn.node_order_fn(task, candidates)
    best = scores.max()
    ties = np.flatnonzero(scores >= best - 1e-9)
    if len(ties) == 1:
        return int(candidates[ties[0]])
    return int(candidates[ties[ssn.rng.randrange(len(ties))]])


def fits_idle(ssn: Session, task: TaskInfo, node_index: int) -> bool:
    cols = task.requested_columns
    return bool((ssn.nodes.idle[node_index, cols] >= task.init_vector[cols]).all())


def fits_future_idle(ssn: Session, task: TaskInfo, node_index: int) -> bool:
    cols = task.requested_columns
    return bool((ssn.nodes.future_idle_row(node_index)[cols] >= task.init_vector[cols]).all())


def format_reasons(reasons: dict[str, int]) -> str:
    """ "3 nodes: insufficient nvidia.com/gpu; 2 nodes: node(s) didn't match nodeSelector", most first."""
    parts = []
    for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        if count:
            parts.append(f"{count} node{'s' if count != 1 else ''}: {reason}")
        else:
            parts.append(reason)
    return "; ".join(parts)
