"""One task's turn in allocate (whole jobs and partitions alike): the nodes it may go to, timed as
Volcano's Predicate stage, and the best of them, timed as Scoring, where it is allocated, or pipelined
when its room comes only once what is being released there has stopped."""

from __future__ import annotations

import numpy as np

from services.scheduler.core.framework.placement import feasible_nodes, fits_idle, select_best_node
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.framework.stats import PREDICATE, SCORING
from services.scheduler.core.model.task import TaskInfo

_NO_NODES = np.empty(0, dtype=np.intp)


def find_nodes(ssn: Session, task: TaskInfo, allowed: np.ndarray | None) -> tuple[np.ndarray, dict[str, int]]:
    """The nodes the task may go to, and, when there are none, why: reason -> nodes (the pre-predicate's
    refusal counts no node)."""
    reason = ssn.pre_predicate_fn(task)
    if reason:
        return _NO_NODES, {reason: 0}
    started = ssn.timer.tick()
    fit = feasible_nodes(ssn, task, allowed=allowed)
    ssn.timer.stage(PREDICATE, started)
    return fit.candidates, fit.reasons


def place_best(ssn: Session, stmt: Statement, task: TaskInfo, candidates: np.ndarray) -> None:
    """Allocate the task on the best-scored candidate, or pipeline it there."""
    started = ssn.timer.tick()
    node = select_best_node(ssn, task, candidates)
    ssn.timer.stage(SCORING, started)
    if fits_idle(ssn, task, node):
        stmt.allocate(task, node)
    else:
        stmt.pipeline(task, node)
