"""The workloads state as plain data for the job-controller's checkpoint, and back (pure). The owned-job
index and the timers are derived, rebuilt on load."""

from __future__ import annotations

from typing import Any

from contracts import codec
from contracts.objects_flow import CronJob, FlowJobRun, JobFlow, JobTemplate
from services.job_controller.core.timer_heap import TimerHeap, schedule
from services.job_controller.core.workloads.cron import next_fire
from services.job_controller.core.workloads.owners import CRONJOB, Owner
from services.job_controller.core.workloads.state import (
    CronRecord,
    FlowRecord,
    FlowRunStatus,
    MadeJob,
    WorkloadsState,
)


def to_plain(state: WorkloadsState) -> dict[str, Any]:
    return {
        "cronjobs": [
            [codec.encode(r.cronjob), r.last_schedule_time, r.last_successful_time]
            for r in state.cronjobs.values()
        ],
        "jobflows": [
            {
                "jobflow": codec.encode(r.jobflow),
                "phase": r.phase,
                "message": r.message,
                "made": r.made,
                "statuses": {name: _status_to_plain(s) for name, s in r.statuses.items()},
            }
            for r in state.jobflows.values()
        ],
        "templates": [codec.encode(t) for t in state.templates.values()],
        "made": [_made_to_plain(job) for job in state.made.values()],
        "jobs": state.jobs,
        "doomed": {key: list(maker) for key, maker in state.doomed.items()},
    }


def from_plain(data: dict[str, Any]) -> WorkloadsState:
    state = WorkloadsState(jobs=dict(data["jobs"]))
    for cronjob, last_schedule, last_success in data["cronjobs"]:
        record = CronRecord(codec.decode(CronJob, cronjob), last_schedule, last_success)
        state.cronjobs[record.cronjob.meta.key] = record
    for item in data["jobflows"]:
        flow = FlowRecord(
            codec.decode(JobFlow, item["jobflow"]),
            phase=item["phase"],
            message=item["message"],
            made=dict(item["made"]),
            statuses={name: _status_from_plain(s) for name, s in item["statuses"].items()},
        )
        state.jobflows[flow.jobflow.meta.key] = flow
    for item in data["templates"]:
        template = codec.decode(JobTemplate, item)
        state.templates[template.meta.key] = template
    for item in data["made"]:
        job = _made_from_plain(item)
        state.made[job.key] = job
    state.doomed = {key: (maker[0], maker[1]) for key, maker in data["doomed"].items()}
    rebuild(state)
    return state


def rebuild(state: WorkloadsState) -> None:
    """The derived parts: which jobs each maker owns, and when each CronJob fires next."""
    state.owned = {}
    for job in state.made.values():
        if job.orphaned or job.key in state.doomed:
            continue
        namespace = job.key.partition("/")[0]
        maker = ("cronjob" if job.owner.kind == CRONJOB else "jobflow", f"{namespace}/{job.owner.name}")
        state.owned.setdefault(maker, set()).add(job.key)
    state.timers = TimerHeap()
    for key, record in state.cronjobs.items():
        schedule(state.timers, key, next_fire(record, 0.0))


def _run_to_plain(run: FlowJobRun) -> list[Any]:
    return [run.state, run.start_timestamp, run.end_timestamp]


def _run_from_plain(data: list[Any]) -> FlowJobRun:
    return FlowJobRun(data[0], data[1], data[2])


def _status_to_plain(status: FlowRunStatus) -> dict[str, Any]:
    return {
        "state": status.state,
        "started": status.started,
        "ended": status.ended,
        "restart_count": status.restart_count,
        "runs": [_run_to_plain(r) for r in status.runs],
    }


def _status_from_plain(data: dict[str, Any]) -> FlowRunStatus:
    return FlowRunStatus(
        data["state"],
        data["started"],
        data["ended"],
        data["restart_count"],
        tuple(_run_from_plain(r) for r in data["runs"]),
    )


def _made_to_plain(job: MadeJob) -> dict[str, Any]:
    return {
        "key": job.key,
        "uid": job.uid,
        "owner": [job.owner.kind, job.owner.name, job.owner.uid],
        "created": job.created,
        "template": job.template,
        "scheduled": job.scheduled,
        "phase": job.phase,
        "finished_at": job.finished_at,
        "retry_count": job.retry_count,
        "task_status_count": job.task_status_count,
        "runs": [_run_to_plain(r) for r in job.runs],
        "orphaned": job.orphaned,
    }


def _made_from_plain(data: dict[str, Any]) -> MadeJob:
    return MadeJob(
        key=data["key"],
        uid=data["uid"],
        owner=Owner(*data["owner"]),
        created=data["created"],
        template=data["template"],
        scheduled=data["scheduled"],
        phase=data["phase"],
        finished_at=data["finished_at"],
        retry_count=data["retry_count"],
        task_status_count={task: dict(counts) for task, counts in data["task_status_count"].items()},
        runs=[_run_from_plain(r) for r in data["runs"]],
        orphaned=data["orphaned"],
    )
