"""Folding the log into the workloads state (pure; in place, like the job-controller's fold).

Each handler returns what the event touched: the read-model objects whose value may have changed and
the CronJobs and JobFlows whose decisions may have. A job's maker is found by the owner annotation
(owners.py); a job whose maker no longer exists (it was deleted, or replaced by another of the same name)
is doomed, as Kubernetes' garbage collector deletes a dependent whose owner is gone; so are the jobs of a
deleted CronJob, and of a deleted JobFlow unless its jobRetainPolicy is retain (docs/deviations.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from contracts import payloads
from contracts.objects import Job
from contracts.objects_flow import CronJob, FlowJobRun, JobFlow, JobTemplate
from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.core.timer_heap import schedule
from services.job_controller.core.workloads import flow as flows
from services.job_controller.core.workloads.cron import next_fire
from services.job_controller.core.workloads.owners import (
    CREATED_BY_TEMPLATE,
    CRONJOB,
    owner_of,
    scheduled_time,
)
from services.job_controller.core.workloads.state import (
    CronRecord,
    FlowRecord,
    FlowRunStatus,
    MadeJob,
    WorkloadKey,
    WorkloadsState,
)
from shared.projected_core import ObjectKey
from shared.runner_types import Event


@dataclass(slots=True)
class Touched:
    changed: list[ObjectKey] = field(default_factory=list)  # read-model objects
    keys: list[WorkloadKey] = field(default_factory=list)  # CronJobs and JobFlows to reconcile


def apply(state: WorkloadsState, event: Event) -> Touched:
    handler = _HANDLERS.get(event.type)
    return Touched() if handler is None else handler(state, event)


def _key(event: Event) -> str:
    return f"{event.namespace}/{event.name}"


def _object(kind: str, key: str) -> ObjectKey:
    namespace, _, name = key.partition("/")
    return (kind, namespace, name)


def made_by(state: WorkloadsState, maker: WorkloadKey) -> list[MadeJob]:
    """The jobs a CronJob or JobFlow made that exist."""
    return [state.made[key] for key in sorted(state.owned.get(maker, ())) if key in state.made]


def flow_jobs(state: WorkloadsState, key: str) -> dict[str, MadeJob]:
    """A JobFlow's jobs that exist, by flow (template) name."""
    return {job.template: job for job in made_by(state, ("jobflow", key))}


def refresh_phase(state: WorkloadsState, key: str) -> None:
    record = state.jobflows.get(key)
    if record is None:
        return
    phase, why = flows.next_phase(record, flow_jobs(state, key))
    if phase != record.phase:
        record.phase = phase
        record.message = why or record.message


# --- CronJob, JobTemplate, JobFlow --------------------------------------------------------------------


def _cronjob_applied(state: WorkloadsState, event: Event) -> Touched:
    cronjob = event.payload_as(payloads.CronJobApplied).decoded()
    assert isinstance(cronjob, CronJob)
    key = cronjob.meta.key
    record = state.cronjobs.get(key)
    if record is not None and record.cronjob.meta.uid == cronjob.meta.uid:
        record.cronjob = cronjob
    else:
        _doom_made(state, ("cronjob", key))
        record = state.cronjobs[key] = CronRecord(cronjob)
    schedule(state.timers, key, next_fire(record, 0.0))
    return Touched([_object("cronjob", key)], [("cronjob", key)])


def _cronjob_deleted(state: WorkloadsState, event: Event) -> Touched:
    key = _key(event)
    state.cronjobs.pop(key, None)
    schedule(state.timers, key, None)
    _doom_made(state, ("cronjob", key))
    return Touched([_object("cronjob", key)], [("cronjob", key)])


def _template_changed(state: WorkloadsState, event: Event) -> Touched:
    key = _key(event)
    if event.type == "JobTemplateApplied":
        template = event.payload_as(payloads.JobTemplateApplied).decoded()
        assert isinstance(template, JobTemplate)
        state.templates[key] = template
    else:
        state.templates.pop(key, None)
    users = [
        fkey
        for fkey, record in state.jobflows.items()
        if record.jobflow.meta.namespace == event.namespace
        and any(f.name == event.name for f in record.jobflow.flows)
    ]
    return Touched(
        [_object("jobtemplate", key), *(_object("jobflow", f) for f in users)],
        [("jobflow", f) for f in users],
    )


def _jobflow_applied(state: WorkloadsState, event: Event) -> Touched:
    jobflow = event.payload_as(payloads.JobFlowApplied).decoded()
    assert isinstance(jobflow, JobFlow)
    key = jobflow.meta.key
    record = state.jobflows.get(key)
    if record is not None and record.jobflow.meta.uid == jobflow.meta.uid:
        record.jobflow = jobflow
    else:
        _doom_made(state, ("jobflow", key))
        state.jobflows[key] = FlowRecord(jobflow)
    refresh_phase(state, key)
    return Touched([_object("jobflow", key)], [("jobflow", key)])


def _jobflow_deleted(state: WorkloadsState, event: Event) -> Touched:
    key = _key(event)
    record = state.jobflows.pop(key, None)
    if record is not None and record.jobflow.job_retain_policy == "retain":
        for job in made_by(state, ("jobflow", key)):
            job.orphaned = True  # nobody's now; its template still lists it
        state.owned.pop(("jobflow", key), None)
    else:
        _doom_made(state, ("jobflow", key))
    return Touched([_object("jobflow", key)], [("jobflow", key)])


def _doom_made(state: WorkloadsState, maker: WorkloadKey) -> None:
    for job in made_by(state, maker):
        state.doomed[job.key] = maker
    state.owned.pop(maker, None)


# --- jobs ---------------------------------------------------------------------------------------------


def _job_submitted(state: WorkloadsState, event: Event) -> Touched:
    job = event.payload_as(payloads.JobSubmitted).decoded()
    assert isinstance(job, Job)
    key = job.meta.key
    state.jobs[key] = job.meta.uid
    owner = owner_of(job)
    if owner is None:
        return Touched()
    kind = "cronjob" if owner.kind == CRONJOB else "jobflow"
    maker: WorkloadKey = (kind, f"{job.meta.namespace}/{owner.name}")
    record: CronRecord | FlowRecord | None = (
        state.cronjobs.get(maker[1]) if kind == "cronjob" else state.jobflows.get(maker[1])
    )
    made_for = None if record is None else _uid(record)
    if made_for != owner.uid:
        state.doomed[key] = maker  # its maker is gone: collected
        return Touched([], [maker])
    template = job.meta.annotations.get(CREATED_BY_TEMPLATE, "").partition(".")[2]
    made = MadeJob(
        key=key,
        uid=job.meta.uid,
        owner=owner,
        created=job.meta.creation_timestamp,
        template=template,
        scheduled=scheduled_time(job),
        runs=[FlowJobRun("Pending", job.meta.creation_timestamp)],
    )
    state.made[key] = made
    state.owned.setdefault(maker, set()).add(key)
    changed = [_object(kind, maker[1])]
    if isinstance(record, CronRecord) and made.scheduled is not None:
        last = record.last_schedule_time
        record.last_schedule_time = made.scheduled if last is None else max(last, made.scheduled)
    if isinstance(record, FlowRecord):
        record.made[template] = record.made.get(template, 0) + 1
        record.statuses[made.name] = FlowRunStatus("Pending", made.created, runs=tuple(made.runs))
        changed.append(_object("jobtemplate", f"{job.meta.namespace}/{template}"))
        refresh_phase(state, maker[1])
    return Touched(changed, [maker])


def _uid(record: CronRecord | FlowRecord) -> str:
    return record.cronjob.meta.uid if isinstance(record, CronRecord) else record.jobflow.meta.uid


def _maker(job: MadeJob) -> WorkloadKey:
    namespace = job.key.partition("/")[0]
    return ("cronjob" if job.owner.kind == CRONJOB else "jobflow", f"{namespace}/{job.owner.name}")


def _job_status_changed(state: WorkloadsState, event: Event) -> Touched:
    job = state.made.get(_key(event))
    if job is None:
        return Touched()
    status = event.payload_as(payloads.JobStatusChanged)
    job.retry_count = status.retry_count
    job.task_status_count = {task: dict(counts) for task, counts in status.task_status_count.items()}
    if status.phase != job.phase:
        last = job.runs[-1] if job.runs else None
        if last is not None and last.end_timestamp is None:
            job.runs[-1] = FlowJobRun(last.state, last.start_timestamp, event.time)
        job.runs.append(FlowJobRun(status.phase, event.time))
        job.phase = status.phase
    job.finished_at = status.last_transition_time if job.phase in FINAL_PHASES else None
    if job.orphaned:
        return Touched()
    maker = _maker(job)
    cron = state.cronjobs.get(maker[1]) if maker[0] == "cronjob" else None
    if cron is not None and job.phase == "Completed" and job.finished_at is not None:
        success = cron.last_successful_time
        cron.last_successful_time = job.finished_at if success is None else max(success, job.finished_at)
    flow = state.jobflows.get(maker[1]) if maker[0] == "jobflow" else None
    if flow is not None:
        flow.statuses[job.name] = FlowRunStatus(
            job.phase, job.created, job.finished_at, job.retry_count, tuple(job.runs)
        )
        refresh_phase(state, maker[1])
    return Touched([_object(*maker)], [maker])


def _job_gone(state: WorkloadsState, event: Event) -> Touched:
    key = _key(event)
    state.jobs.pop(key, None)
    doomed_by = state.doomed.pop(key, None)
    job = state.made.pop(key, None)
    if job is None:
        return Touched([], [doomed_by] if doomed_by else [])
    changed = [_object("jobtemplate", f"{key.partition('/')[0]}/{job.template}")] if job.template else []
    if job.orphaned:
        return Touched(changed)
    maker = doomed_by or _maker(job)
    state.owned.get(maker, set()).discard(key)
    if maker[0] == "jobflow":
        refresh_phase(state, maker[1])
    return Touched([*changed, _object(*maker)], [maker])


_HANDLERS: Mapping[str, Callable[[WorkloadsState, Event], Touched]] = {
    "CronJobApplied": _cronjob_applied,
    "CronJobDeleted": _cronjob_deleted,
    "JobTemplateApplied": _template_changed,
    "JobTemplateDeleted": _template_changed,
    "JobFlowApplied": _jobflow_applied,
    "JobFlowDeleted": _jobflow_deleted,
    "JobSubmitted": _job_submitted,
    "JobStatusChanged": _job_status_changed,
    "JobDeleted": _job_gone,
    "JobCleanedUp": _job_gone,
}
HANDLED_EVENTS = frozenset(_HANDLERS)
