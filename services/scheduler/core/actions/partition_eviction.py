"""Partition-aware eviction: preempt and reclaim for a PodGroup with sub-groups (a Job's partitions,
Volcano 1.14's subGroupPolicy; Volcano's gangpreempt / gangreclaim nomination plan in a domain).

A partitioned job may only make room its partitions can use: each partition all-or-nothing inside one
HyperNode of its allowed tier, and the job whole (its minAvailable and every policy's minSubGroups).
Evictions chosen pod by pod across the cluster would free room a partition cannot use together.

- Job domains: a hard job's candidate HyperNodes (domain_eviction.candidate_domains: tier <= its allowed
  one, holding what it runs on, big enough for its minResources); any other job has the whole cluster.
- In each domain, a trial takes the partitions in allocate's order (those the job needs for
  minSubGroups first, then the unready ones, by partition id) until the job is pipelined. A partition is
  tried in every HyperNode of its narrowest gradient that could hold it once victims are gone
  (subgroup_domains.gradients with `evicting`: allocatable covers its requests; a partition with pods
  already placed stays within the widest HyperNode of its tier holding them). There, its waiting pods
  look for room on that HyperNode's nodes only, with the action's usual victim search (victims.py: the
  same victims allowed, strict priority, cool-down, the cheapest irreducible set per node). A HyperNode
  where the whole partition then has room is a solution; the cheapest (victims' cost) wins, then the
  first in gradient order, and it stays applied while later partitions are tried, so they see its
  evictions and reservations. A partition no HyperNode can hold is skipped: the job may not need it.
- A domain where the job ends pipelined is a solution; of those the cheapest (all its victims' cost)
  wins, then the narrower tier; it is replayed and committed as one plan, evictions and the room
  reserved for every pod together. No solution: nothing is evicted, and the PodGroup says which
  partitions found no HyperNode and why.

Volcano's gangpreempt picks the victims per domain first (bundles of victims' jobs, until the domain's
idle plus theirs covers the job) and then simulates placement; lahar picks victims per pod inside each
partition's HyperNode, so a partition never loses room to victims it did not need (docs/deviations.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.scheduler.core.actions import subgroup_domains
from services.scheduler.core.actions.domain_eviction import (
    Place,
    candidate_domains,
    evict_in_one_domain,
    hard_topology,
)
from services.scheduler.core.actions.explain import (
    CONDITION_OF,
    WOULD_NOT_MAKE_ROOM,
    Attempts,
    listing,
    record,
    set_condition,
    why_not,
)
from services.scheduler.core.actions.subgroup_allocate import order_sub_groups, partition_label
from services.scheduler.core.actions.victims import Cost, victim_cost
from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Op, Statement
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.subgroups import REST, SubGroup, SubGroups, sub_groups_of
from services.scheduler.core.model.task import TaskInfo, TaskStatus
from services.scheduler.core.model.topology import CLUSTER_TOP

Journal = list[tuple[Op, TaskInfo, int, str]]


@dataclass(slots=True)
class DomainTrial:
    """What one job domain's trial did: the operations of every partition placed (undone since), which
    partition went to which HyperNode, what each pod found, and why the others found no HyperNode."""

    domain: str
    journal: Journal = field(default_factory=list)
    placed: list[tuple[str, str]] = field(default_factory=list)  # partition label, HyperNode
    attempts: Attempts | None = None
    notes: dict[str, str] = field(default_factory=dict)  # partition label -> why it has no HyperNode
    solved: bool = False


def is_partitioned(job: JobInfo) -> bool:
    return bool(job.podgroup.sub_group_policy)


def evict_within_domains(
    ssn: Session, job: JobInfo, pending: PriorityQueue[TaskInfo], action: str, place: Place
) -> bool:
    """A job's turn in preempt or reclaim when its victims must stay inside HyperNodes: a hard
    network-topology job's inside one HyperNode where the whole gang then fits, a partitioned one's each
    inside one HyperNode of the partition's tier. `place` finds one task room on the allowed nodes as
    the action does; the pending tasks are tried in their order."""
    ordered = []
    while pending:
        ordered.append(pending.pop())
    if is_partitioned(job):
        return evict_for_partitions(ssn, job, ordered, action, place)
    return evict_in_one_domain(ssn, job, ordered, action, place)


def evict_for_partitions(
    ssn: Session, job: JobInfo, tasks: list[TaskInfo], action: str, place: Place
) -> bool:
    """The partitioned job's turn in preempt or reclaim: committed (True) only when every partition it
    needs has room inside one HyperNode of its tier; its PodGroup says what happened either way."""
    groups = sub_groups_of(job)
    assert groups is not None
    waiting = {t.uid for t in tasks if t.status is TaskStatus.PENDING}
    domains = candidate_domains(ssn, job) if hard_topology(job) else [CLUSTER_TOP]
    best: tuple[tuple[Cost, int, int], DomainTrial] | None = None
    failed: list[DomainTrial] = []
    for order, domain in enumerate(domains):
        trial = _in_domain(ssn, job, groups, waiting, domain, action, place)
        if not trial.solved:
            failed.append(trial)
            continue
        victims = [task for op, task, _, _ in trial.journal if op is Op.EVICT]
        key = (victim_cost(ssn, victims), ssn.topology.tier[domain], order)
        if best is None or key < best[0]:
            best = (key, trial)
    if best is None:
        _record_failure(ssn, job, action, domains, failed)
        return False
    trial = best[1]
    stmt = ssn.statement()
    stmt.replay(trial.journal)
    stmt.commit()
    assert trial.attempts is not None
    record(ssn, job, trial.attempts, committed=True, where=_where(ssn, trial))
    return True


def _in_domain(
    ssn: Session,
    job: JobInfo,
    groups: SubGroups,
    waiting: set[str],
    domain: str,
    action: str,
    place: Place,
) -> DomainTrial:
    trial = DomainTrial(domain, attempts=Attempts(action))
    assert trial.attempts is not None
    chain: list[Statement] = []
    for group in order_sub_groups(groups, waiting):
        if ssn.job_pipelined_fn(job):
            break
        found = _place_partition(ssn, job, group, waiting, domain, action, place)
        if isinstance(found, str):
            trial.notes[partition_label(group)] = found
            continue
        stmt, hypernode, attempts = found
        chain.append(stmt)
        trial.placed.append((partition_label(group), hypernode))
        trial.attempts.placed.extend(attempts.placed)
    trial.solved = bool(chain) and ssn.job_pipelined_fn(job)
    trial.journal = [entry for stmt in chain for entry in stmt.journal()]
    for stmt in reversed(chain):
        stmt.discard()
    return trial


def _place_partition(
    ssn: Session,
    job: JobInfo,
    group: SubGroup,
    waiting: set[str],
    domain: str,
    action: str,
    place: Place,
) -> tuple[Statement, str, Attempts] | str:
    """The partition's waiting pods with their victims inside the cheapest HyperNode of its narrowest
    gradient that holds it whole, left applied on a statement; or why no HyperNode does."""
    gradients = subgroup_domains.gradients(ssn, group, domain, evicting=True)
    if not gradients:
        return _nowhere(ssn, group, domain, [])
    tried: list[tuple[str, Attempts]] = []
    for gradient in gradients:
        solutions: list[tuple[Cost, int, str, Journal, Attempts]] = []
        for index, hypernode in enumerate(gradient):
            stmt = ssn.statement()
            attempts = Attempts(action)
            _try_in(ssn, job, group, waiting, hypernode, stmt, attempts, place)
            if len(stmt) and group.is_pipelined():
                victims = [v for _, _, found in attempts.placed for v in found]
                solutions.append((victim_cost(ssn, victims), index, hypernode, stmt.journal(), attempts))
            else:
                tried.append((hypernode, attempts))
            stmt.discard()
        if solutions:
            _, _, hypernode, journal, attempts = min(solutions, key=lambda s: (s[0], s[1]))
            stmt = ssn.statement()
            stmt.replay(journal)
            return stmt, hypernode, attempts
    return _nowhere(ssn, group, domain, tried)


def _try_in(
    ssn: Session,
    job: JobInfo,
    group: SubGroup,
    waiting: set[str],
    hypernode: str,
    stmt: Statement,
    attempts: Attempts,
    place: Place,
) -> None:
    """The partition's waiting pods look for room on the HyperNode's nodes, in task order, until it is
    whole (the pods of no partition: until the job is), or until it can no longer be."""
    allowed = None if hypernode == CLUSTER_TOP else ssn.topology.members[hypernode]
    where = "" if hypernode == CLUSTER_TOP else f" in HyperNode {hypernode}"
    pending = PriorityQueue(ssn.task_order_fn, [t for t in group.waiting() if t.uid in waiting])
    while pending:
        if ssn.job_pipelined_fn(job) if group.policy == REST else group.is_pipelined():
            break
        task = pending.pop()
        place(stmt, task, allowed, where, attempts)
        if group.placed() + len(pending) < group.size:
            break  # one pod short: the partition cannot be whole here


def _nowhere(ssn: Session, group: SubGroup, domain: str, tried: list[tuple[str, Attempts]]) -> str:
    tier = subgroup_domains.allowed_tier(ssn, group)
    pods = len(group.waiting())
    inside = "" if domain == CLUSTER_TOP else f" inside HyperNode {domain}"
    if tier is not None and tier < 0:
        spec = group.network_topology
        return f"no HyperNode has tier name {spec.highest_tier_name if spec else ''!r}"
    if not tried:
        return f"no HyperNode of tier <= {tier}{inside} has the allocatable for its {pods} pod(s)"
    first, attempts = tried[0]
    detail = why_not(attempts) or "no pod tried"
    if tier is None or first == domain:  # not confined below the job's domain
        return f"its {pods} pod(s) would not all have room{inside} after evictions: {detail}"
    names = listing([name for name, _ in tried])
    return (
        f"no HyperNode of tier <= {tier}{inside} would hold its {pods} pod(s) after evictions"
        f" (tried {names}); in {first}: {detail}"
    )


def _where(ssn: Session, trial: DomainTrial) -> str:
    parts = [f"{label} in {'the cluster' if hn == CLUSTER_TOP else hn}" for label, hn in trial.placed]
    where = f" for partition(s) {listing(parts)}"
    if trial.domain != CLUSTER_TOP:
        where += f" inside HyperNode {trial.domain} (tier {ssn.topology.tier[trial.domain]})"
    return where


def _record_failure(
    ssn: Session, job: JobInfo, action: str, domains: list[str], failed: list[DomainTrial]
) -> None:
    if not domains:
        why = "no HyperNode of the job's tier holds the nodes it runs on and its minResources"
    else:
        trial = failed[0]
        parts = [f"partition {label}: {note}" for label, note in sorted(trial.notes.items())]
        if not parts:
            parts.append("the partitions that would have room do not make the job whole")
        elif trial.placed:
            parts.append(f"{len(trial.placed)} partition(s) would have room but not the whole job")
        why = "; ".join(parts)
        if trial.domain != CLUSTER_TOP:
            why = f"in HyperNode {trial.domain} (tried {listing(domains)}): {why}"
    set_condition(
        ssn,
        job,
        CONDITION_OF[action],
        "False",
        WOULD_NOT_MAKE_ROOM,
        f"{action} would not make room, nothing evicted: {why}",
    )
