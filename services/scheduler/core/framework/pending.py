"""Why an owned PodGroup waits, for its Unschedulable condition's reason (contracts/pending.py): a value
made at session close from what refused the job this session (its `pending_cause`), the reasons nodes
rejected its tasks for (`fit_errors`, with what each reason is about: `ssn.node_reasons`) and the cluster's
nodes. Cold path: only PodGroups the gang plugin reports as unschedulable get one.

Order: a job that can never fit says so first (more room would not help, nor would waiting); then a quota
refusal (an autoscaler must not add nodes for it), the line of a fifo queue, room held for a starving job
on a node that would take it now (the room exists, the wait ends by itself), the cluster's room (with what
it lacks: the requests of the pods the gang still needs, on the resources that were short), and last the
placement constraints alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from contracts.pending import (
    BEHIND_QUEUE_HEAD,
    BEHIND_STARVING_JOB,
    INSUFFICIENT_CLUSTER_CAPACITY,
    INSUFFICIENT_QUEUE_QUOTA,
    NEVER_FITS,
    NO_MATCHING_NODES,
    NOT_ENOUGH_RESOURCES,
)
from contracts.resources import CPU, EMPTY, MEMORY, MILLI, PODS, Resources, format_quantity
from services.scheduler.core.framework.placement import fits_rows
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.pending import BEHIND_HEAD, CAPACITY, HELD, QUOTA, Verdict
from services.scheduler.core.model.task import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session


def pending_verdict(ssn: Session, job: JobInfo, unready: int, placed: Callable[[TaskInfo], bool]) -> Verdict:
    """`unready`: how many more pods the gang needs; `placed`: whether a pending task found room in an
    attempt this session that was undone (the gang as a whole did not fit)."""
    never = never_fits(ssn, job)
    if never:
        return Verdict(NEVER_FITS, f"can never fit: {never}")
    cause = job.pending_cause
    if cause is not None and (cause.kind == QUOTA or (cause.share and _room_left(ssn, job))):
        return Verdict(INSUFFICIENT_QUEUE_QUOTA)
    if cause is not None and cause.kind == BEHIND_HEAD:
        return Verdict(BEHIND_QUEUE_HEAD)
    kinds: dict[str, str] = {}  # kind -> a dimension it was short on ("" for none)
    short: set[str] = set()
    for reasons in job.fit_errors.values():
        for reason, count in reasons.items():
            kind, dimension = ssn.node_reasons.get(reason, ("", ""))
            if count and kind:
                kinds[kind] = dimension
                if kind == CAPACITY and dimension:
                    short.add(dimension)
    if cause is not None and cause.kind == CAPACITY:
        short.update(cause.missing)
    if HELD in kinds:
        return Verdict(BEHIND_STARVING_JOB)
    if CAPACITY in kinds or (cause is not None and cause.kind == CAPACITY):
        missing = _missing(job, unready, placed, short, cause.missing if cause is not None else EMPTY)
        parts = [f"cluster lacks {format_resources(missing)}"] if missing else []
        if job.hold_note:
            parts.append(job.hold_note)
        return Verdict(INSUFFICIENT_CLUSTER_CAPACITY, "; ".join(parts), missing)
    if kinds:
        return Verdict(NO_MATCHING_NODES)
    return Verdict(NOT_ENOUGH_RESOURCES)


def _missing(
    job: JobInfo, unready: int, placed: Callable[[TaskInfo], bool], short: set[str], known: Resources
) -> Resources:
    """The requests, on the `short` dimensions (all requested ones if none is named), of the `unready`
    pending pods that found no room, those nodes rejected first; `known` when the job has no such pod
    (a PodGroup refused at enqueue, whose pods do not exist yet)."""
    taken = _unplaced(job, placed)[: max(unready, 0)]
    if not taken:
        return Resources({d: v for d, v in known.items() if d != PODS and v > 0})
    total: dict[str, int] = {}
    for task in taken:
        for dimension, value in task.resreq.items():
            if value > 0 and (not short or dimension in short):
                total[dimension] = total.get(dimension, 0) + value
    if PODS in short:
        total[PODS] = len(taken) * MILLI
    return Resources(total)


def _room_left(ssn: Session, job: JobInfo) -> bool:
    """Is the cluster left with room, placement constraints aside, for every pod the gang needs beyond its
    ready ones (first fit; what it placed this session was undone)? Then its queue's share, not the
    cluster, keeps it waiting."""
    left = ssn.nodes.future_idle().copy()
    need = job.min_available - job.ready_task_num()
    for task in _unplaced(job, lambda task: False)[: max(need, 0)]:
        fits = fits_rows(left, task.requested_columns, task.init_vector)
        if not fits.any():
            return False
        left[int(fits.argmax())] -= task.init_vector
    return True


def _unplaced(job: JobInfo, placed: Callable[[TaskInfo], bool]) -> list[TaskInfo]:
    """The pending pods that found no room this session, those nodes rejected first."""
    pending = job.tasks_by_status[TaskStatus.PENDING].values()
    unplaced = [t for t in pending if not t.best_effort and not placed(t)]
    unplaced.sort(key=lambda t: (t.uid not in job.fit_errors, t.role, t.index, t.uid))
    return unplaced


def never_fits(ssn: Session, job: JobInfo) -> str:
    """Why the job could not run on this cluster even if it were empty, or "": a pending pod no node is
    large enough for, or more in all than every node together has."""
    nodes = ssn.nodes
    if not len(nodes):
        return "the cluster has no nodes"
    seen: set[Resources] = set()
    for task in job.tasks_by_status[TaskStatus.PENDING].values():
        if task.best_effort or task.resreq in seen:
            continue
        seen.add(task.resreq)
        if not fits_rows(nodes.allocatable, task.requested_columns, task.init_vector).any():
            return f"no node is large enough for pod {task.name} ({format_resources(task.resreq)})"
    need = _gang_request(job)
    total = ssn.total_resource
    over = [d for d, v in need.items() if d != PODS and v > total.get(d)]
    if over:
        asked = format_resources(Resources({d: need[d] for d in over}))
        held = format_resources(Resources({d: total.get(d) for d in over}), zeros=True)
        return f"its minimum asks {asked} in all, the whole cluster has {held}"
    if job.min_available > int(nodes.max_pods.sum()):
        return f"its {job.min_available} pods exceed the {int(nodes.max_pods.sum())} pod slots of the cluster"
    return ""


def _gang_request(job: JobInfo) -> Resources:
    """What the gang's minimum asks in all: its minResources, else every pod's request when minMember
    covers every pod (otherwise which pods make the minimum is not known)."""
    if job.min_resources is not None:
        return job.min_resources
    if job.tasks and job.min_available >= job.task_count():
        return job.total_request()
    return EMPTY


_FIRST = {CPU: 0, MEMORY: 1}


def format_resources(resources: Mapping[str, int], *, zeros: bool = False) -> str:
    """ "cpu 3, memory 4Gi, nvidia.com/gpu 2": cpu and memory first, then by name."""
    items: Iterable[tuple[str, int]] = sorted(resources.items(), key=lambda kv: (_FIRST.get(kv[0], 2), kv[0]))
    return ", ".join(f"{d} {format_quantity(d, v)}" for d, v in items if v > 0 or zeros)
