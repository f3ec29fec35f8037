"""Gang-aware eviction for hard network-topology jobs (Volcano 1.15's topology-aware preemption): preempt
and reclaim choose the victims of such a job inside ONE HyperNode of its allowed tier, so that the whole
gang fits there once they are gone; evictions across HyperNodes for a gang that then cannot be placed
never happen.

The candidate domains of a job (`networkTopology: {mode: hard}`) are the HyperNodes of tier <=
highestTierAllowed (or highestTierName's tier) that hold every node the job already runs on and whose
nodes' allocatable together covers its minResources; narrowest tier first, then by name, at most
MAX_DOMAINS (Volcano's hypernode.gradient.evict.max-hypernodes default). A hard job that names no tier, or a
cluster without HyperNodes, has one domain: the whole cluster (as allocate places it).

Each domain is a trial on its own statement: the job's pending tasks, in task order while it is starving,
look for room on the domain's nodes only, with the action's usual victim search (victims.py: the same
candidates, strict priority, cool-down, cheapest irreducible set per node). A domain where the job ends
pipelined (the whole gang has room) is a solution; every trial is undone. Of the solutions, the one whose
victims cost least wins (victims.py's cost: pods lost first), then the narrower tier, then the first
found; it is replayed on one statement and committed: its evictions and the room reserved for the gang are
one plan. No solution: nothing is evicted, and the PodGroup says which domains were tried and why the first
one failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contracts.resources import PODS
from services.scheduler.core.actions.explain import Attempts, record_domain
from services.scheduler.core.actions.victims import Cost, victim_cost
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Op, Statement
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.task import ALLOCATED_STATUSES, TaskInfo, TaskStatus
from services.scheduler.core.model.topology import CLUSTER_TOP

MAX_DOMAINS = 8

# (statement, task, the domain's nodes or None for the whole cluster, where in words, attempts): puts the
# task's evictions and the task pipelined on the statement when it finds room
Place = Callable[[Statement, TaskInfo, np.ndarray | None, str, Attempts], None]


def hard_topology(job: JobInfo) -> bool:
    return job.network_topology is not None and job.network_topology.mode == "hard"


def allowed_tier(ssn: Session, job: JobInfo) -> int | None:
    """The widest tier a hard job may span (None: it names none, so the cluster is its only domain)."""
    spec = job.network_topology
    assert spec is not None
    if spec.highest_tier_allowed is not None:
        return spec.highest_tier_allowed
    if spec.highest_tier_name in ssn.topology.tier_by_name:
        return ssn.topology.tier_by_name[spec.highest_tier_name]
    return None


def candidate_domains(ssn: Session, job: JobInfo) -> list[str]:
    topology = ssn.topology
    tier = allowed_tier(ssn, job)
    if tier is None or topology.empty:
        return [CLUSTER_TOP]
    placed = [
        t.node_index for t in job.tasks.values() if t.node_index >= 0 and t.status in ALLOCATED_STATUSES
    ]
    wanted = {d: v for d, v in (job.min_resources or {}).items() if v > 0 and d != PODS}
    if any(d not in ssn.resources.column for d in wanted):
        return []  # a resource no node has: no domain can hold the gang
    cols = [ssn.resources.column[d] for d in wanted]
    need = np.array(list(wanted.values()), dtype=np.int64)
    domains = []
    for name in [*topology.names, CLUSTER_TOP]:
        if topology.tier[name] > tier:
            continue
        members = topology.members[name]
        if placed and not members[placed].all():
            continue
        if cols and (ssn.nodes.allocatable[members][:, cols].sum(axis=0) < need).any():
            continue
        domains.append(name)
        if len(domains) >= MAX_DOMAINS:
            break
    return domains


@dataclass(slots=True)
class Solution:
    key: tuple[Cost, int, int]  # victims' cost, tier, order found
    domain: str
    journal: list[tuple[Op, TaskInfo, int, str]]
    attempts: Attempts


def evict_in_one_domain(ssn: Session, job: JobInfo, tasks: list[TaskInfo], action: str, place: Place) -> bool:
    """The job's turn in preempt or reclaim: committed (True) only with every victim in one domain where
    the whole gang then has room; its PodGroup says what happened either way."""
    domains = candidate_domains(ssn, job)
    best: Solution | None = None
    failed: list[tuple[str, Attempts]] = []
    for order, domain in enumerate(domains):
        stmt = ssn.statement()
        attempts = Attempts(action)
        allowed = None if domain == CLUSTER_TOP else ssn.topology.members[domain]
        where = "" if domain == CLUSTER_TOP else f" in HyperNode {domain}"
        for task in tasks:
            if not ssn.job_starving_fn(job):
                break
            if task.status is TaskStatus.PENDING:
                place(stmt, task, allowed, where, attempts)
        if ssn.job_pipelined_fn(job):
            victims = [v for _, _, found in attempts.placed for v in found]
            key = (victim_cost(ssn, victims), ssn.topology.tier[domain], order)
            if best is None or key < best.key:
                best = Solution(key, domain, stmt.journal(), attempts)
        else:
            failed.append((domain, attempts))
        stmt.discard()
    if best is None:
        record_domain(ssn, job, action, "", failed, allowed_tier(ssn, job))
        return False
    stmt = ssn.statement()
    stmt.replay(best.journal)
    stmt.commit()
    record_domain(ssn, job, action, best.domain, [(best.domain, best.attempts)], allowed_tier(ssn, job))
    return True
