"""What a CronJob's controller decides at a moment (pure): Volcano's cronjob controller, itself Kubernetes'
CronJob controller, step by step.

1. Its finished jobs (Completed, Failed, Terminated) leave `active`; the oldest Completed ones beyond
   successfulJobsHistoryLimit and Failed ones beyond failedJobsHistoryLimit are deleted.
2. Suspended: nothing more.
3. The most recent scheduled time not yet run: counted from the last scheduled time it ran (or its
   creation), but no further back than startingDeadlineSeconds; at most that one of the missed times
   runs, and more than 100 missed is noted (Kubernetes' TooManyMissedTimes).
4. That time ran already (its job is active, or it is the last scheduled time): nothing.
5. Forbid with a job active: skipped (it runs once the active job finishes, if still within the
   deadline). Replace: the active jobs are deleted and the new one created.
6. The job: the template, named `<cronjob>-<minutes since the epoch of the scheduled time>`, annotated
   with that time and its maker. A job of that name that exists already (a finished run of the same
   minute, or someone else's) is not created again.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, replace

from contracts.cron import Schedule, ScheduleError, load_zone, most_recent_time, next_time, parse_schedule
from contracts.objects import Job, JobStatus, ObjectMeta, frozen_map
from contracts.objects_flow import CronJob
from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.core.workloads.owners import (
    CRONJOB,
    OWNER,
    SCHEDULED_TIMESTAMP,
    Owner,
    cron_job_name,
    rfc3339,
)
from services.job_controller.core.workloads.state import CronRecord, MadeJob

TOO_MANY_MISSED = 100  # Kubernetes' bound on missed schedules before it warns


@dataclass(frozen=True, slots=True)
class CronDecision:
    create: Job | None = None
    delete: tuple[str, ...] = ()  # keys of the jobs to delete, in order
    notes: tuple[str, ...] = ()


def schedule_of(cronjob: CronJob) -> Schedule:
    """The CronJob's schedule in its time zone; ScheduleError when either no longer reads (admission
    checked both, but a time zone database can change under a running cluster)."""
    return parse_schedule(cronjob.schedule, cronjob.time_zone)


def is_finished(job: MadeJob) -> bool:
    return job.phase in FINAL_PHASES


def decide_cron(
    record: CronRecord, jobs: Sequence[MadeJob], taken: Container[str], now: float
) -> CronDecision:
    """`jobs`: the CronJob's jobs that exist; `taken`: the key of every job that exists."""
    cronjob = record.cronjob
    key = cronjob.meta.key
    active = [job for job in jobs if not is_finished(job)]
    delete = list(_beyond_history(cronjob, jobs))
    notes: list[str] = []
    if cronjob.suspend:
        return CronDecision(delete=tuple(delete))
    try:
        schedule = schedule_of(cronjob)
    except ScheduleError as exc:
        return CronDecision(delete=tuple(delete), notes=(f"CronJob {key}: cannot read its schedule: {exc}",))
    earliest = record.last_schedule_time
    if earliest is None:
        earliest = cronjob.meta.creation_timestamp
    if cronjob.starting_deadline_seconds is not None:
        earliest = max(earliest, now - cronjob.starting_deadline_seconds)
    scheduled, missed = most_recent_time(schedule, earliest, now)
    if missed > TOO_MANY_MISSED:
        notes.append(
            f"CronJob {key}: too many missed start times ({missed}); set or decrease "
            "startingDeadlineSeconds or check clock skew"
        )
    if scheduled is None:
        return CronDecision(delete=tuple(delete), notes=tuple(notes))
    name = cron_job_name(cronjob.meta.name, scheduled)
    if any(job.name == name for job in active) or record.last_schedule_time == scheduled:
        return CronDecision(delete=tuple(delete), notes=tuple(notes))
    if active and cronjob.concurrency_policy == "Forbid":
        notes.append(f"CronJob {key}: skipping the run of {name}: another of its jobs is still active")
        return CronDecision(delete=tuple(delete), notes=tuple(notes))
    if active and cronjob.concurrency_policy == "Replace":
        delete.extend(job.key for job in active if job.key not in delete)
    job = job_from_template(cronjob, scheduled, schedule)
    if job.meta.key in taken:
        return CronDecision(delete=tuple(delete), notes=tuple(notes))
    return CronDecision(create=job, delete=tuple(delete), notes=tuple(notes))


def _beyond_history(cronjob: CronJob, jobs: Sequence[MadeJob]) -> list[str]:
    """The oldest finished jobs beyond the history limits (oldest first: by creation, then name)."""
    doomed = []
    for phase, limit in (
        ("Completed", cronjob.successful_jobs_history_limit),
        ("Failed", cronjob.failed_jobs_history_limit),
    ):
        kept = sorted((job for job in jobs if job.phase == phase), key=lambda j: (j.created, j.name))
        doomed += [job.key for job in kept[: max(0, len(kept) - limit)]]
    return doomed


def job_from_template(cronjob: CronJob, scheduled: float, schedule: Schedule) -> Job:
    template = cronjob.job_template
    owner = Owner(CRONJOB, cronjob.meta.name, cronjob.meta.uid)
    annotations = {
        **template.meta.annotations,
        SCHEDULED_TIMESTAMP: rfc3339(scheduled, load_zone(schedule.zone)),
        OWNER: owner.annotation(),
    }
    meta = ObjectMeta(
        name=cron_job_name(cronjob.meta.name, scheduled),
        namespace=cronjob.meta.namespace,
        labels=template.meta.labels,
        annotations=frozen_map(annotations),
    )
    return replace(template, meta=meta, status=JobStatus())


def next_fire(record: CronRecord, after: float) -> float | None:
    """When the CronJob next has something to start, after `after` (None: suspended, or never)."""
    cronjob = record.cronjob
    if cronjob.suspend:
        return None
    try:
        schedule = schedule_of(cronjob)
    except ScheduleError:
        return None
    start = record.last_schedule_time
    if start is None:
        start = cronjob.meta.creation_timestamp
    return next_time(schedule, max(start, after))
