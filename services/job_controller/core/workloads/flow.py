"""What a JobFlow's controller decides and shows (pure): Volcano's jobflow controller.

Jobs: in Pending and Running (and Succeed, whose jobs a `retain` flow keeps), every flow whose job does
not exist is created from its JobTemplate once each of its targets' jobs is Completed — and, lahar adds,
each taskStatusList probe holds for them: every target job that has the probe's task ended with all of
that task's pods in the probe's phase (a conditional dependency: "run b if a's task check succeeded").
A flow whose template does not exist waits for it. A Succeed flow whose jobRetainPolicy is delete has its
jobs deleted. Failed and Terminating flows do nothing more.

Status: the flow's jobs by phase (Volcano's lists: Completing and Terminating jobs are in none, a phase
of no list is "unknown"), a condition per job, the job status list (kept after a job is gone), and the
phase, moved by Volcano's state machine: Pending -> Running once a job runs or completed and none failed;
-> Failed once one failed or was terminated; Running -> Succeed once every flow's job completed. lahar
also fails a flow whose job can never start (its targets completed, a probe does not hold), which
Volcano, which ignores probes, cannot meet.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, replace

from contracts.names import label_value_problem
from contracts.objects import Job, JobStatus, ObjectMeta, frozen_map
from contracts.objects_flow import Flow, FlowCondition, FlowJobStatus, JobFlowStatus, JobTemplate
from services.job_controller.core.workloads.owners import (
    CREATED_BY_FLOW,
    CREATED_BY_TEMPLATE,
    JOBFLOW,
    OWNER,
    Owner,
    flow_job_name,
    object_string,
)
from services.job_controller.core.workloads.state import FlowRecord, MadeJob

# Volcano's status lists: the job phase each holds
LISTED = {
    "Pending": "pending_jobs",
    "Running": "running_jobs",
    "Completed": "completed_jobs",
    "Failed": "failed_jobs",
    "Terminated": "terminated_jobs",
}
UNLISTED = frozenset({"Completing", "Terminating"})  # known to Volcano's status, in no list
DEPLOYING = frozenset({"Pending", "Running", "Succeed"})


@dataclass(frozen=True, slots=True)
class FlowDecision:
    create: tuple[Job, ...] = ()
    delete: tuple[str, ...] = ()


def decide_flow(
    record: FlowRecord,
    jobs: Mapping[str, MadeJob],
    templates: Mapping[str, JobTemplate],
    taken: Container[str],
) -> FlowDecision:
    """`jobs`: the flow's jobs that exist, by flow name; `templates` by "namespace/name"; `taken`: the key
    of every job that exists."""
    jobflow = record.jobflow
    if record.phase == "Succeed" and jobflow.job_retain_policy == "delete":
        return FlowDecision(delete=tuple(sorted(job.key for job in jobs.values())))
    if record.phase not in DEPLOYING:
        return FlowDecision()
    create = []
    for flow in jobflow.flows:
        key = f"{jobflow.meta.namespace}/{flow_job_name(jobflow.meta.name, flow.name)}"
        template = templates.get(f"{jobflow.meta.namespace}/{flow.name}")
        if key in taken or template is None or not ready(flow, jobs):
            continue
        create.append(job_from_template(record, flow, template))
    return FlowDecision(create=tuple(create))


def ready(flow: Flow, jobs: Mapping[str, MadeJob]) -> bool:
    """Every target's job Completed and every taskStatus probe holding."""
    targets = flow.depends_on.targets if flow.depends_on else ()
    found = [jobs.get(target) for target in targets]
    if any(job is None or job.phase != "Completed" for job in found):
        return False
    return not failed_probes(flow, [job for job in found if job is not None])


def failed_probes(flow: Flow, targets: Sequence[MadeJob]) -> list[str]:
    """The taskStatusList probes that do not hold for the (finished) target jobs, described."""
    probe = flow.depends_on.probe if flow.depends_on else None
    failed = []
    for check in probe.task_status_list if probe else ():
        for job in targets:
            counts = job.task_status_count.get(check.task_name)
            if counts is None:
                continue  # not a task of this target
            pods = sum(counts.values())
            if pods == 0 or counts.get(check.phase, 0) != pods:
                failed.append(f"task {check.task_name!r} of job {job.name!r} did not end {check.phase}")
    return failed


def job_from_template(record: FlowRecord, flow: Flow, template: JobTemplate) -> Job:
    jobflow = record.jobflow
    namespace = jobflow.meta.namespace
    marks = {
        CREATED_BY_TEMPLATE: object_string(namespace, template.meta.name),
        CREATED_BY_FLOW: object_string(namespace, jobflow.meta.name),
    }
    owner = Owner(JOBFLOW, jobflow.meta.name, jobflow.meta.uid)
    meta = ObjectMeta(
        name=flow_job_name(jobflow.meta.name, flow.name),
        namespace=namespace,
        # Volcano labels the job too; a label holds at most 63 characters, an annotation any
        labels=frozen_map({k: v for k, v in marks.items() if label_value_problem(v) is None}),
        annotations=frozen_map({**marks, OWNER: owner.annotation()}),
    )
    return replace(template.spec, meta=meta, status=JobStatus())


def next_phase(record: FlowRecord, jobs: Mapping[str, MadeJob]) -> tuple[str, str]:
    """The flow's phase after its jobs changed, and why it failed ("" unless it did now)."""
    phase = record.phase
    if phase not in ("Pending", "Running"):
        return phase, ""
    phases = [job.phase for job in jobs.values()]
    failed = phases.count("Failed") + phases.count("Terminated")
    if phase == "Pending":
        if (phases.count("Running") or phases.count("Completed")) and not phases.count("Failed"):
            phase = "Running"
        elif failed:
            return "Failed", "a job of the flow failed or was terminated"
    if phase == "Running":
        if phases.count("Completed") == len(record.jobflow.flows):
            return "Succeed", ""
        if failed:
            return "Failed", "a job of the flow failed or was terminated"
    blocked = _blocked(record, jobs)
    if blocked:
        return "Failed", blocked
    return phase, ""


def _blocked(record: FlowRecord, jobs: Mapping[str, MadeJob]) -> str:
    """Why a flow's job can never start: its targets all completed and a probe does not hold."""
    for flow in record.jobflow.flows:
        if flow.name in jobs or flow.depends_on is None:
            continue
        targets = [jobs.get(target) for target in flow.depends_on.targets]
        if any(job is None or job.phase != "Completed" for job in targets):
            continue
        failed = failed_probes(flow, [job for job in targets if job is not None])
        if failed:
            return f"flow {flow.name!r} can never start: {'; '.join(failed)}"
    return ""


def flow_status(
    record: FlowRecord, jobs: Mapping[str, MadeJob], templates: Mapping[str, JobTemplate]
) -> JobFlowStatus:
    """The status the read model shows (Volcano's getAllJobStatus, with the phase the fold keeps)."""
    order = {flow.name: index for index, flow in enumerate(record.jobflow.flows)}
    listed: dict[str, list[str]] = {field: [] for field in LISTED.values()}
    unknown: list[str] = []
    conditions: dict[str, FlowCondition] = {}
    for _, job in sorted(jobs.items(), key=lambda item: (order.get(item[0], len(order)), item[0])):
        field = LISTED.get(job.phase)
        if field is not None:
            listed[field].append(job.name)
        elif job.phase not in UNLISTED:
            unknown.append(job.name)
        conditions[job.name] = FlowCondition(
            phase=job.phase,
            create_time=job.created,
            running_duration=None if job.finished_at is None else max(0.0, job.finished_at - job.created),
            task_status_count=frozen_map({t: frozen_map(c) for t, c in job.task_status_count.items()}),
        )
    statuses = tuple(
        FlowJobStatus(
            name=name,
            state=status.state,
            start_timestamp=status.started,
            end_timestamp=status.ended,
            restart_count=status.restart_count,
            running_histories=status.runs,
        )
        for name, status in sorted(record.statuses.items(), key=lambda item: (item[1].started, item[0]))
    )
    return JobFlowStatus(
        **{field: tuple(names) for field, names in listed.items()},
        un_know_jobs=tuple(unknown),
        job_status_list=statuses,
        conditions=frozen_map(conditions),
        phase=record.phase,
        message=record.message or _waiting(record, jobs, templates),
    )


def _waiting(record: FlowRecord, jobs: Mapping[str, MadeJob], templates: Mapping[str, JobTemplate]) -> str:
    """The flows whose job waits for a JobTemplate that does not exist."""
    if record.phase not in DEPLOYING:
        return ""
    namespace = record.jobflow.meta.namespace
    missing = [
        flow.name
        for flow in record.jobflow.flows
        if flow.name not in jobs and f"{namespace}/{flow.name}" not in templates
    ]
    return f"waiting for JobTemplate {', '.join(repr(n) for n in missing)}" if missing else ""
