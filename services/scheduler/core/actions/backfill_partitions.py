"""backfill for a partitioned job (a PodGroup with a subGroupPolicy): a partition's BestEffort pods are
placed together inside one HyperNode of its allowed tier, like the rest of the partition.

allocate leaves BestEffort pods to backfill (they never wait for room, so a partition counts them as
ready); placed one by one on the best node of the cluster they would leave their partition's HyperNode.
So backfill takes a partition's pending BestEffort pods as one unit: inside the job's domains (its own
network-topology gradients, narrowest first; the whole cluster without one) and then the partition's
candidate HyperNodes (subgroup_domains.gradients: a partition with pods placed stays within the widest
HyperNode of its tier holding them), the first HyperNode where every one of them passes the predicates
gets them all, each on its best-scoring node there. None: they stay pending, and the job's condition says
why (Unschedulable, or the Scheduled one's "waiting:" when the job is ready without them, as BestEffort
pods count as ready). Pods of no partition (size 1) are placed one at a time within the job's domain.
"""

from __future__ import annotations

from services.scheduler.core.actions import subgroup_domains
from services.scheduler.core.actions.subgroup_allocate import job_gradients, partition_label, placements_note
from services.scheduler.core.framework.placement import feasible_nodes, select_best_node
from services.scheduler.core.framework.session import Session
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.framework.stats import PREDICATE, SCORING
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.subgroups import REST, SubGroup, sub_groups_of
from services.scheduler.core.model.task import TaskInfo, TaskStatus
from services.scheduler.core.model.topology import CLUSTER_TOP


def backfill_partition(ssn: Session, job: JobInfo, task: TaskInfo, stmt: Statement) -> bool:
    """Place `task` with the other pending BestEffort pods of its partition on `stmt`, all inside one
    HyperNode of the partition's tier; False (nothing placed, fit errors recorded) when none holds them."""
    groups = sub_groups_of(job)
    assert groups is not None
    group = next(g for g in groups.groups if any(t is task for t in g.tasks))
    if group.policy == REST:
        pods = [task]
    else:
        pods = [t for t in group.tasks if t.status is TaskStatus.PENDING and t.best_effort]
    for gradient in job_gradients(ssn, job):
        for domain in gradient:
            for candidates in subgroup_domains.gradients(ssn, group, domain):
                for hypernode in candidates:
                    trial = ssn.statement()
                    if _place_all(ssn, pods, hypernode, trial):
                        stmt.merge(trial)
                        job.partition_note = placements_note(job.partition_note, [(group.key, hypernode)])
                        return True
                    trial.discard()
    why = _nowhere(ssn, group, len(pods))
    for pod in pods:
        job.record_fit_errors(pod, {why: 0})
    job.job_fit_error = f"{job.job_fit_error}; {why}" if job.job_fit_error else why
    return False


def _place_all(ssn: Session, pods: list[TaskInfo], hypernode: str, trial: Statement) -> bool:
    allowed = None if hypernode == CLUSTER_TOP else ssn.topology.members[hypernode]
    for pod in pods:
        if ssn.pre_predicate_fn(pod):
            return False
        started = ssn.timer.tick()
        fit = feasible_nodes(ssn, pod, allowed=allowed, check_resources=False)
        ssn.timer.stage(PREDICATE, started)
        if not len(fit.candidates):
            return False
        started = ssn.timer.tick()
        node = select_best_node(ssn, pod, fit.candidates)
        ssn.timer.stage(SCORING, started)
        trial.allocate(pod, node)
    return True


def _nowhere(ssn: Session, group: SubGroup, pods: int) -> str:
    tier = subgroup_domains.allowed_tier(ssn, group)
    where = f"no single HyperNode of tier <= {tier}" if tier is not None and tier >= 0 else "no HyperNode"
    return f"partition {partition_label(group)}: {pods} best-effort pod(s) fit in {where}"
