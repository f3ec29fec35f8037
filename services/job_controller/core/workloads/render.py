"""The read-model objects of CronJobs, JobFlows and JobTemplates: the stored spec with the status the
workloads state gives it (pure)."""

from __future__ import annotations

from dataclasses import replace

from contracts.objects_flow import CronJob, CronJobStatus, JobFlow, JobTemplate, JobTemplateStatus
from services.job_controller.core.workloads.cron import is_finished
from services.job_controller.core.workloads.flow import flow_status
from services.job_controller.core.workloads.fold import flow_jobs, made_by
from services.job_controller.core.workloads.state import WorkloadsState


def cronjob_object(state: WorkloadsState, key: str) -> CronJob | None:
    record = state.cronjobs.get(key)
    if record is None:
        return None
    jobs = sorted(made_by(state, ("cronjob", key)), key=lambda job: (job.created, job.name))
    status = CronJobStatus(
        active=tuple(job.name for job in jobs if not is_finished(job)),
        last_schedule_time=record.last_schedule_time,
        last_successful_time=record.last_successful_time,
    )
    return replace(record.cronjob, status=status)


def jobflow_object(state: WorkloadsState, key: str) -> JobFlow | None:
    record = state.jobflows.get(key)
    if record is None:
        return None
    return replace(record.jobflow, status=flow_status(record, flow_jobs(state, key), state.templates))


def jobtemplate_object(state: WorkloadsState, key: str) -> JobTemplate | None:
    template = state.templates.get(key)
    if template is None:
        return None
    namespace, _, name = key.partition("/")
    made = sorted(
        job.name
        for job in state.made.values()
        if job.template == name and job.key.startswith(f"{namespace}/")
    )
    return replace(template, status=JobTemplateStatus(job_depends_on_list=tuple(made)))
