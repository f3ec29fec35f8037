"""allocate for a PodGroup with sub-groups (a Job's partitions): a gang of sub-gangs (Volcano's
allocateForJob / allocateForSubJob).

For each candidate domain of the job (its own network-topology gradients, narrowest first; the whole
cluster when it has none), a trial places sub-groups one by one inside that domain: the sub-groups the
job still needs to reach each policy's minSubGroups first, then the unready ones, by partition index.
Each sub-group is tried in every candidate HyperNode of its first gradient that has a solution
(subgroup_domains.py) and placed all-or-nothing in the best one: all its pods inside one HyperNode of
its allowed tier. The trial stops as soon as the job is ready (minAvailable and every minSubGroups). A
domain whose trial leaves the job ready or pipelined is a solution; the best-scoring one (the sum of its
sub-groups' HyperNode scores, the narrowest gradient first) is replayed for real. A partition left over
once the job is ready is placed on a later turn of its queue, like any task of a ready job.

Why a partition could not be placed (no HyperNode of its tier with room, or its pods' own fit errors)
is left on the job for its Unschedulable condition; where they went is left for its Scheduled one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from services.scheduler.core.actions import subgroup_domains
from services.scheduler.core.actions.placing import find_nodes, place_best
from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.framework.statement import Op, Statement
from services.scheduler.core.model.subgroups import REST, SubGroup, SubGroups, sub_groups_of
from services.scheduler.core.model.topology import CLUSTER_TOP

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.queue import QueueInfo
    from services.scheduler.core.model.task import TaskInfo

Ops = list[tuple[Op, "TaskInfo", int]]


def allocate_sub_groups(
    ssn: Session, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo]
) -> Statement | None:
    """Place the job's partitions; the tasks left unplaced go back to `tasks`."""
    groups = sub_groups_of(job)
    assert groups is not None
    ordered = []
    while tasks:
        ordered.append(tasks.pop())
    waiting = {t.uid for t in ordered}
    notes: dict[str, str] = {}
    for gradient in job_gradients(ssn, job):
        solutions: dict[str, tuple[Ops, float, list[tuple[str, str]]]] = {}
        for domain in gradient:
            solution = _trial(ssn, job, queue, groups, waiting, domain, notes)
            if solution is not None:
                solutions[domain] = solution
        if not solutions:
            continue
        best = max(solutions, key=lambda name: (solutions[name][1], -gradient.index(name)))
        ops, _, placements = solutions[best]
        stmt = ssn.statement()
        for op, task, node in ops:
            if op is Op.ALLOCATE:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
        placed = {task.uid for _, task, _ in ops}
        for task in ordered:
            if task.uid not in placed:
                tasks.push(task)
        job.partition_note = placements_note(job.partition_note, placements)
        return stmt
    for task in ordered:
        tasks.push(task)
    if notes:
        job.job_fit_error = "; ".join(f"partition {key}: {why}" for key, why in sorted(notes.items()))
    return None


def job_gradients(ssn: Session, job: JobInfo) -> list[list[str]]:
    if job.network_topology is None or ssn.topology.empty:
        return [[CLUSTER_TOP]]
    gradients = ssn.hypernode_gradients_fn(job)
    return [[CLUSTER_TOP]] if gradients is None else gradients


def order_sub_groups(groups: SubGroups, waiting: set[str]) -> list[SubGroup]:
    """Sub-groups with pods to place: those needed for each policy's minSubGroups first, then the
    unready ones, then by partition index (Volcano's required set and the gang's sub-job order)."""
    candidates = [g for g in groups.groups if any(t.uid in waiting for t in g.waiting())]
    ready: dict[str, int] = {}
    for group in groups.groups:
        if group.is_ready():
            ready[group.policy] = ready.get(group.policy, 0) + 1
    required = set()
    for group in candidates:
        if not group.is_ready() and ready.get(group.policy, 0) < groups.minimum.get(group.policy, 0):
            required.add(group.key)
            ready[group.policy] = ready.get(group.policy, 0) + 1
    return sorted(candidates, key=lambda g: (g.key not in required, g.is_ready(), g.index))


def _trial(
    ssn: Session,
    job: JobInfo,
    queue: QueueInfo,
    groups: SubGroups,
    waiting: set[str],
    domain: str,
    notes: dict[str, str],
) -> tuple[Ops, float, list[tuple[str, str]]] | None:
    """Place sub-groups inside `domain` until the job is ready; undo it all and return what was done
    (operations, summed score, sub-group -> HyperNode) when it left the job ready or pipelined."""
    line = order_sub_groups(groups, waiting)
    done: list[Statement] = []
    score = 0.0
    placements: list[tuple[str, str]] = []
    while line:
        group = line.pop(0)
        placed = _place_group(ssn, job, queue, group, waiting, domain, notes)
        if placed is None:
            continue
        stmt, where, group_score = placed
        done.append(stmt)
        score += group_score
        placements.append((group.key, where))
        if any(t.uid in waiting for t in group.waiting()):
            line.append(group)  # ready with pods to spare: it may take more once the others had a turn
        if ssn.job_ready_fn(job):
            break
    ops: Ops = [op for stmt in done for op in stmt.operations()]
    solved = bool(ops) and (ssn.job_ready_fn(job) or ssn.job_pipelined_fn(job))
    for stmt in reversed(done):
        stmt.discard()
    return (ops, score, placements) if solved else None


def _place_group(
    ssn: Session,
    job: JobInfo,
    queue: QueueInfo,
    group: SubGroup,
    waiting: set[str],
    domain: str,
    notes: dict[str, str],
) -> tuple[Statement, str, float] | None:
    """The sub-group all-or-nothing in the best HyperNode of its first gradient that holds it."""
    gradients = subgroup_domains.gradients(ssn, group, domain)
    if not gradients:
        notes[partition_label(group)] = _why_nowhere(ssn, group, domain)
        return None
    for gradient in gradients:
        solutions: dict[str, Ops] = {}
        for hypernode in gradient:
            allowed = None if hypernode == CLUSTER_TOP else ssn.topology.members[hypernode]
            trial = _place_tasks(ssn, job, queue, group, waiting, allowed)
            if trial is not None:
                solutions[hypernode] = trial.operations()
                trial.discard()
        if not solutions:
            continue
        scores = subgroup_domains.scores(ssn, group, list(solutions))
        best = max(solutions, key=lambda name: (scores.get(name, 0.0), -gradient.index(name)))
        stmt = ssn.statement()
        for op, task, node in solutions[best]:
            if op is Op.ALLOCATE:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
        notes.pop(partition_label(group), None)
        return stmt, best, scores.get(best, 0.0)
    notes[partition_label(group)] = _why_nowhere(ssn, group, domain)
    return None


def _place_tasks(
    ssn: Session,
    job: JobInfo,
    queue: QueueInfo,
    group: SubGroup,
    waiting: set[str],
    allowed: np.ndarray | None,
) -> Statement | None:
    """The sub-group's waiting pods on the best nodes among `allowed`; kept when the sub-group is then
    ready or pipelined and something was placed."""
    stmt = ssn.statement()
    pending = PriorityQueue(ssn.task_order_fn, [t for t in group.waiting() if t.uid in waiting])
    all_needed = group.size >= len(group.tasks)
    while pending:
        task = pending.pop()
        if not ssn.allocatable_fn(queue, task):
            refusal = ssn.quota_refusal(queue, task)
            job.record_fit_errors(task, {refusal.text: 0})
            job.record_refusal(refusal)
            continue
        candidates, reasons = find_nodes(ssn, task, allowed)
        if not len(candidates):
            job.record_fit_errors(task, reasons)
            if all_needed:  # one pod short and the partition cannot be whole here
                break
            continue
        place_best(ssn, stmt, task, candidates)
        if group.is_ready():
            break
    if len(stmt) and (group.is_ready() or group.is_pipelined()):
        return stmt
    stmt.discard()
    return None


def partition_label(group: SubGroup) -> str:
    return group.key if group.policy != REST else "(pods of no partition)"


def _why_nowhere(ssn: Session, group: SubGroup, domain: str) -> str:
    tier = subgroup_domains.allowed_tier(ssn, group)
    pods = len(group.waiting())
    where = "the cluster" if domain == CLUSTER_TOP else f"HyperNode {domain}"
    if tier is None or ssn.topology.empty:
        return f"{pods} pod(s) do not all fit in {where}"
    if tier < 0:
        spec = group.network_topology
        name = spec.highest_tier_name if spec is not None else ""
        return f"no HyperNode has tier name {name!r}"
    return f"{pods} pod(s) fit in no single HyperNode of tier <= {tier} in {where}"


def placements_note(previous: str, placements: list[tuple[str, str]]) -> str:
    parts = [
        f"{key or 'the rest'} in {'the cluster' if where == CLUSTER_TOP else where}"
        for key, where in placements
    ]
    note = ", ".join(parts)
    return f"{previous}, {note}" if previous and note else previous or note
