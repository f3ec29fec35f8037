"""Reserved room turned into binds (pure): the first thing allocate does.

A preemption (or reclaim) commits its evictions and the room they free as one plan; the binder then
holds that room for the preemptor's pods (PodNominated) against every other pod, and each session opens
with those pods Pipelined on their nominated nodes (framework/build.py). Each session, for every job it
places that holds reserved room, in job order:

- a reserved pod whose room is free now (its request fits the node's idle resources and every predicate
  passes) is allocated there; when that makes the gang ready, the job's allocations are committed: the
  reserved pods are bound where their room was made (ReservationBound);
- one whose room is still being released (its victims have not stopped) keeps waiting for it;
- one whose room cannot come any more (nothing on its node is being released and it still would not fit:
  the node shrank, was cordoned, lost its victims to something else) gives the job's reservations up: its
  pods are Pending again, for allocate, preempt or reclaim to place afresh (ReservationReleased).

Gangs stay whole: a gang whose reserved pods are not all free yet waits with all of them.
"""

from __future__ import annotations

from services.scheduler.core.actions.common import predicates_pass
from services.scheduler.core.actions.explain import (
    RESERVATION_BOUND,
    RESERVATION_RELEASED,
    listing,
    reserving_condition,
    set_condition,
)
from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.framework.placement import fits_idle
from services.scheduler.core.framework.session import Session
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.task import TaskInfo, TaskStatus


def bind_reserved(ssn: Session) -> None:
    jobs = [ssn.jobs[key] for key in ssn.reserved_jobs if key in ssn.owned_jobs]
    ordered = PriorityQueue(ssn.job_order_fn, jobs)
    while ordered:
        _honor(ssn, ordered.pop())


def _honor(ssn: Session, job: JobInfo) -> None:
    reserved = sorted(job.tasks_by_status[TaskStatus.PIPELINED].values(), key=lambda t: t.uid)
    if not reserved:
        return
    where = {task.uid: task.node_index for task in reserved}
    for task in reserved:
        _unpipeline(ssn, task)
    stmt = ssn.statement()
    placed: list[TaskInfo] = []
    waiting: list[TaskInfo] = []
    for task in reserved:
        node = where[task.uid]
        if fits_idle(ssn, task, node) and predicates_pass(ssn, task, node):
            stmt.allocate(task, node)
            placed.append(task)
        elif _still_releasing(ssn, task, node):
            waiting.append(task)
        else:
            stmt.discard()
            _released(ssn, job, task, ssn.nodes.names[node])
            return  # every reserved pod of the job is Pending again
    if placed and ssn.job_ready_fn(job):
        stmt.commit()
        rooms = [f"{task.key} on {task.node}" for task in placed]
        message = f"bound in the room reserved: {listing(rooms)}"
        set_condition(ssn, job, reserving_condition(job), "False", RESERVATION_BOUND, message)
        _repipeline(ssn, waiting, where)
    elif placed and not waiting:
        # All its room is free, yet the gang needs pods that hold none (some of its running pods
        # ended): the allocations stay open for allocate to complete the gang; committed or not, the
        # binder keeps the room reserved until the pods are bound.
        return
    else:
        stmt.discard()
        _repipeline(ssn, reserved, where)


def _still_releasing(ssn: Session, task: TaskInfo, node: int) -> bool:
    """Whether the task will fit once what is being released on the node has stopped: its room is on
    its way (a victim still stopping), as opposed to gone."""
    nodes = ssn.nodes
    cols = task.requested_columns
    coming = nodes.idle[node, cols] + nodes.releasing[node, cols]
    if not (coming >= task.init_vector[cols]).all():
        return False
    if nodes.future_pods(node) >= nodes.max_pods[node]:
        return False
    return not any(f.nodes[node] for f in ssn.predicate_failures(task) if not f.resolvable)


def _unpipeline(ssn: Session, task: TaskInfo) -> None:
    """Take a reserved task out of its room for this session (the plugins told while it is still there)."""
    ssn.nodes.remove_task(task.node_index, task)
    ssn.jobs[task.job].update_task_status(task, TaskStatus.PENDING)
    ssn.fire_deallocate(task)
    task.node = ""
    task.node_index = -1


def _repipeline(ssn: Session, tasks: list[TaskInfo], where: dict[str, int]) -> None:
    """Put reserved tasks back in their room (outside any statement: the room is the binder's fact)."""
    for task in tasks:
        node = where[task.uid]
        ssn.jobs[task.job].update_task_status(task, TaskStatus.PIPELINED)
        task.node = ssn.nodes.names[node]
        task.node_index = node
        ssn.nodes.add_task(node, task)
        ssn.fire_allocate(task)


def _released(ssn: Session, job: JobInfo, task: TaskInfo, node: str) -> None:
    kind = reserving_condition(job)
    message = (
        f"room reserved for {task.key} on {node} can no longer hold it (nothing there is being released"
        " and it does not fit): the job's pods are scheduled afresh"
    )
    set_condition(ssn, job, kind, "False", RESERVATION_RELEASED, message)
