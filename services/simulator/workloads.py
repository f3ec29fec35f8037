"""What a simulation reports of its CronJobs and JobFlows: each one's jobs in the order they were made
(from the simulated log, so jobs a history limit or a retain policy deleted are listed too) and, from the
job-controller's workloads core, a CronJob's last schedule and a JobFlow's phase."""

from __future__ import annotations

from typing import Any

from contracts import payloads
from services.job_controller.core.workloads.owners import owner_of
from services.job_controller.core.workloads.render import cronjob_object, jobflow_object
from services.job_controller.core.workloads.state import WorkloadsState
from shared.runner_types import Event


def made_jobs(events: list[Event]) -> dict[tuple[str, str], list[str]]:
    """(kind, "namespace/name") of each CronJob and JobFlow -> the names of the jobs it made, in order."""
    made: dict[tuple[str, str], list[str]] = {}
    for event in events:
        if event.type != "JobSubmitted":
            continue
        job = event.payload_as(payloads.JobSubmitted).decoded()
        owner = owner_of(job)
        if owner is not None:
            made.setdefault((owner.kind, f"{job.meta.namespace}/{owner.name}"), []).append(job.meta.name)
    return made


def workloads_report(state: WorkloadsState, events: list[Event]) -> dict[str, Any]:
    """{"cronjobs": {...}, "jobflows": {...}}, each only when the simulation had some."""
    made = made_jobs(events)
    report: dict[str, Any] = {}
    cronjobs = {}
    for key in sorted(state.cronjobs):
        cron = cronjob_object(state, key)
        assert cron is not None
        cronjobs[key] = {
            "schedule": cron.schedule,
            "jobs": made.get(("CronJob", key), []),
            "active": list(cron.status.active),
            "last_schedule_time": cron.status.last_schedule_time,
            "last_successful_time": cron.status.last_successful_time,
        }
    flows = {}
    for key in sorted(state.jobflows):
        flow = jobflow_object(state, key)
        assert flow is not None
        flows[key] = {
            "phase": flow.status.phase,
            "jobs": made.get(("JobFlow", key), []),
            "completed": list(flow.status.completed_jobs),
            "failed": list(flow.status.failed_jobs),
            "message": flow.status.message,
        }
    if cronjobs:
        report["cronjobs"] = cronjobs
    if flows:
        report["jobflows"] = flows
    return report


def workloads_table(report: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if "cronjobs" in report:
        lines += ["", f"{'CRONJOB':40} {'SCHEDULE':16} {'LAST SCHEDULE':>13}  JOBS"]
        for key, cron in report["cronjobs"].items():
            last = "-" if cron["last_schedule_time"] is None else f"{cron['last_schedule_time']:.0f}"
            lines.append(f"{key:40} {cron['schedule']:16} {last:>13}  {len(cron['jobs'])}")
    if "jobflows" in report:
        lines += ["", f"{'JOBFLOW':40} {'PHASE':10} JOBS (in the order made)"]
        for key, flow in report["jobflows"].items():
            detail = f"  ({flow['message']})" if flow["message"] else ""
            lines.append(f"{key:40} {flow['phase']:10} {', '.join(flow['jobs'])}{detail}")
    return lines
