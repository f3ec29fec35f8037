"""The Job, PodGroup and Pod objects the job-controller's state describes, spec and status together, as the
read model shows them (docs/control-plane.md, "Read model and CLI").

Statuses are the log's facts: a job's is its last JobStatusChanged, a PodGroup's phase its last
PodGroupStatusChanged (its pod counts come from the job's pods), a pod's phase what the node agent
reported. Pod and PodGroup specs are derived again from the job (`expand`), as the state keeps them
compact; the few status details the state does not keep (exit codes, conditions) are passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from contracts import payloads
from contracts.objects import (
    Job,
    JobCondition,
    JobState,
    JobStatus,
    Pod,
    PodGroup,
    PodGroupCondition,
    PodGroupStatus,
    PodStatus,
    PriorityClass,
    frozen_map,
)
from services.job_controller.core.expand import pod_for, podgroup_for
from services.job_controller.core.state import POD_PHASES, JobRecord


def job_object(record: JobRecord | None) -> Job | None:
    """The job with its published status and its pods' counts now; None once it is deleted (or for an
    orphan record)."""
    if record is None or record.job is None or not record.active:
        return None
    job = record.job
    return replace(job, status=job_status(job, record.published, record.tally.by_task))


def job_status(
    job: Job, published: payloads.JobStatusChanged | None, by_task: Mapping[str, Mapping[str, int]]
) -> JobStatus:
    """Volcano's JobStatus: the lifecycle from the last JobStatusChanged (a job nothing was published for
    is Pending) and the counts of its pods by phase, per task and in total."""
    counts = {phase: sum(c.get(phase, 0) for c in by_task.values()) for phase in POD_PHASES}
    status = replace(
        job.status,
        task_status_count=frozen_map({task: frozen_map(dict(c)) for task, c in by_task.items()}),
        pending=counts["Pending"],
        running=counts["Running"],
        succeeded=counts["Succeeded"],
        failed=counts["Failed"],
        terminating=counts["Terminating"],
    )
    if published is None:
        return replace(status, state=JobState(phase="Pending"), min_available=job.min_available or 0)
    return replace(
        status,
        state=JobState(phase=published.phase, last_transition_time=published.last_transition_time),
        min_available=published.min_available,
        retry_count=published.retry_count,
        version=published.version,
        conditions=tuple(JobCondition(c.status, c.last_transition_time) for c in published.conditions),
    )


def podgroup_conditions(status: payloads.PodGroupStatusChanged) -> tuple[PodGroupCondition, ...]:
    """The conditions a PodGroupStatusChanged gives a PodGroup (a Job's or a plain one)."""
    return tuple(
        PodGroupCondition(
            type=c.type,
            status=c.status,
            transition_id=c.transition_id,
            last_transition_time=c.last_transition_time,
            reason=c.reason,
            message=c.message,
        )
        for c in status.conditions
    )


def podgroup_object(
    record: JobRecord | None,
    conditions: tuple[PodGroupCondition, ...],
    classes: Mapping[str, PriorityClass],
) -> PodGroup | None:
    """The job's PodGroup while it exists, its phase from the log and its counts from the job's pods."""
    if record is None or record.job is None or not record.podgroup_exists:
        return None
    by_phase: dict[str, int] = {}
    for counts in record.tally.by_task.values():
        for phase, n in counts.items():
            by_phase[phase] = by_phase.get(phase, 0) + n
    status = PodGroupStatus(
        phase=record.podgroup or "Pending",
        conditions=conditions,
        running=by_phase.get("Running", 0),
        succeeded=by_phase.get("Succeeded", 0),
        failed=by_phase.get("Failed", 0),
    )
    return replace(podgroup_for(record.job, dict(classes)), status=status)


def pod_object(
    record: JobRecord | None, name: str, details: PodStatus | None, deletion_time: float | None
) -> Pod | None:
    """The current generation of pod `name` while it exists (until it is stopped, lost or deleted before
    any node took it). details: reason, message, exit code and start time as reported; deletion_time: when
    its stop was asked for (it shows as terminating)."""
    if record is None or record.job is None:
        return None
    pod = record.pods.get(name)
    if pod is None or pod.gone:
        return None
    task = next((t for t in record.job.tasks if t.name == pod.task), None)
    if task is None:
        return None
    base = pod_for(
        record.job,
        task,
        pod.index,
        created_at=pod.created_at,
        generation=pod.retry,
        retry_count=pod.job_retry,
        version=pod.version,
    )
    stopping = pod.evicting or pod.deletion_node is not None
    return replace(
        base,
        meta=replace(base.meta, deletion_timestamp=deletion_time if stopping else None),
        spec=replace(base.spec, node_name=pod.node),
        status=replace(details or PodStatus(), phase=pod.phase),
    )
