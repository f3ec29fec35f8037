"""Session close: PodGroup phase and conditions, queue figures (Volcano's CloseSession / job_updater)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from contracts.objects import PodGroupCondition
from contracts.plans import PodGroupUpdate
from services.scheduler.core.framework.plan import JobFigures, PendingSummary, QueueUpdate, SessionResult
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.task import SCHEDULED_STATUSES, TaskStatus

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session


def podgroup_phase(job: JobInfo) -> str:
    """Volcano's getPodGroupPhase, computed on the session's view of the job's tasks."""
    if job.status_counts[TaskStatus.RUNNING] > 0 and job.unschedulable_this_session:
        return "Unknown"
    scheduled = job.count(*SCHEDULED_STATUSES)
    scheduled += sum(1 for t in job.tasks_by_status[TaskStatus.RELEASING].values() if t.node)
    if scheduled >= job.min_available and scheduled > 0:
        finished = job.count(TaskStatus.SUCCEEDED, TaskStatus.FAILED)
        return "Completed" if finished == scheduled else "Running"
    if job.phase != "Inqueue":
        return "Pending"
    return "Inqueue"


def _conditions(job: JobInfo, ssn: Session) -> tuple[PodGroupCondition, ...]:
    """Conditions replace their own type. A condition whose status stays the same keeps its transition
    time (Kubernetes' meaning of lastTransitionTime; Volcano stamps every session's time): an Unschedulable
    condition says since when the gang has waited, which the starvation bound reads. Once a gang is
    Scheduled, an Unschedulable condition left from an earlier session is marked False (Volcano leaves it
    True beside Scheduled: a contradiction)."""
    current = {c.type: c for c in job.podgroup.status.conditions}
    for kind, condition in job.new_conditions.items():
        before = current.get(kind)
        unchanged = before is not None and before.status == condition.status
        kept = before.last_transition_time if unchanged and before is not None else None
        if kept is not None:
            condition = replace(condition, last_transition_time=kept)
        current[kind] = condition
    scheduled = job.new_conditions.get("Scheduled")
    stale = current.get("Unschedulable")
    if (
        scheduled is not None
        and stale is not None
        and stale.status == "True"
        and "Unschedulable" not in job.new_conditions
    ):
        current["Unschedulable"] = replace(stale, status="False", last_transition_time=ssn.now)
    return tuple(current[t] for t in sorted(current))


def close_session(ssn: Session) -> SessionResult:
    """Statuses and reservations of the jobs the session owns; queue figures of every queue."""
    podgroups: dict[str, PodGroupUpdate] = {}
    for key, job in ssn.owned_jobs.items():
        podgroups[key] = PodGroupUpdate(
            phase=podgroup_phase(job),
            conditions=_conditions(job, ssn),
            running=job.status_counts[TaskStatus.RUNNING],
            succeeded=job.status_counts[TaskStatus.SUCCEEDED],
            failed=job.status_counts[TaskStatus.FAILED],
            allocated_hypernode=job.allocated_hypernode,
        )
    queues = _queue_figures(ssn)
    pipelined = {
        t.key: t.node
        for job in ssn.owned_jobs.values()
        for t in job.tasks_by_status[TaskStatus.PIPELINED].values()
    }
    jobs = _job_figures(ssn)
    pending = {
        key: PendingSummary(job.queue, job.verdict.reason, job.verdict.missing)
        for key, job in ssn.owned_jobs.items()
        if job.verdict is not None
    }
    return SessionResult(
        ssn.uid, tuple(ssn.plans), pipelined, podgroups, queues, jobs, ssn.timer.stats, pending=pending
    )


def _was_scheduled(job: JobInfo) -> bool:
    return any(c.type == "Scheduled" and c.status == "True" for c in job.podgroup.status.conditions)


def _job_figures(ssn: Session) -> dict[str, JobFigures]:
    """Per owned job with tasks (or an enqueue verdict): what Volcano's gang plugin reports at close
    (unready tasks, a retry) and whether the gang has just become Scheduled; its DRF share."""
    job_share = getattr(ssn.plugins.get("drf"), "job_share", None)
    unready_tasks = getattr(ssn.plugins.get("gang"), "unready_tasks", None)
    figures = {}
    for key, job in ssn.owned_jobs.items():
        if not job.tasks and not job.job_fit_error:
            continue
        unready = 0
        if job.unschedulable_this_session:
            unready = max(unready_tasks(job) if unready_tasks is not None else job.min_available, 0)
        scheduled = job.new_conditions.get("Scheduled")
        figures[key] = JobFigures(
            unready_tasks=unready,
            unschedulable=job.unschedulable_this_session,
            newly_scheduled=scheduled is not None and scheduled.status == "True" and not _was_scheduled(job),
            share=float(job_share(job.uid)) if job_share is not None else None,
        )
    return figures


def _queue_figures(ssn: Session) -> dict[str, QueueUpdate]:
    """Deserved and share come from the fairness plugin when one is configured (proportion or capacity),
    and so does allocated (with hierarchy, a parent's holds its descendants'); without one, allocated is
    the sum of the queue's allocated tasks."""
    figures: dict[str, QueueUpdate] = {}
    for plugin in ssn.plugin_instances():
        report = getattr(plugin, "queue_figures", None)
        if report is not None:
            figures.update(report(ssn))
    allocated: dict[str, dict[str, int]] = {name: {} for name in ssn.queues}
    for job in ssn.jobs.values():
        bucket = allocated.setdefault(job.queue, {})
        for dim, value in job.allocated.items():  # the sum of its allocated tasks' requests
            bucket[dim] = bucket.get(dim, 0) + value
    out = {}
    for name, queue in ssn.queues.items():
        known = figures.get(name)
        out[name] = QueueUpdate(
            allocated=known.allocated if known else allocated.get(name, {}),
            deserved=known.deserved if known else {},
            share=known.share if known else 0.0,
            request=known.request if known else {},
            inqueue=known.inqueue if known else {},
            real_capability=known.real_capability if known else None,
            overused=ssn.overused_fn(queue) if known else None,  # the plugin has the queue's figures
        )
    return out
