"""What the job-controller should write and the log does not show yet: create the PodGroup, then the pods
once the PodGroup left Pending (each task once its dependencies run), publish the job's status and
lifecycle (lifecycle.py), stop the pods the job no longer wants, delete a finished job whose TTL ran out,
and tear everything down after deletion.

Level-triggered: every output follows from comparing the state with what the log already records, so
calling reconcile again before an output has been folded back re-emits it with the same id (the loop
keeps it in flight, the stream deduplicates it). Output ids are `deterministic_id` over (service, event
type, object key, the fact): the job incarnation (the seq of its JobSubmitted), a pod's generation, the
job's version and the pod's node, a status generation and content — never `now`.

Pods that disappear: a pod that is evicted (PodEvicting, then PodTerminated), lost with its node (PodLost),
stopped without being asked (PodTerminated) or deleted by a restart is created again under the same name
with the next generation (the `lahar.dev/pod-generation` annotation and the uid suffix), at the job's
current version and retryCount, so it goes back to Pending and the scheduler places it again. Succeeded
and Failed pods are kept unless a restart deletes them. Pods are created only while the job is Pending or
Running; lifecycle policies decide, per event, whether more than that happens (policies.py).

A finished job (Completed, Failed, Terminated) with `ttlSecondsAfterFinished` is deleted once that many
seconds passed since it finished: the job-controller writes JobCleanedUp (admission owns JobDeleted), which
every reader takes as the job's deletion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import msgspec

from contracts import payloads
from contracts.events import JOB_CONTROLLER
from contracts.job_shape import pod_name
from contracts.objects import Job
from services.job_controller.core import lifecycle, render
from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.core.state import (
    POD_PHASES,
    Cause,
    JobRecord,
    PodRecord,
    State,
    job_namespace,
    restart_kills,
    stop_unrequested,
    target_names,
)
from shared.runner_types import Output, deterministic_id

# the parts of a published status that, when they differ, call for a new JobStatusChanged: the job's
# lifecycle. Its pod counts follow from the pods' own events, so they change no fact of their own (the
# read model shows them live; a JobStatusChanged carries them as they stood at its transition).
STATUS_FACT = ("phase", "min_available", "retry_count", "version", "restart")
# why the pods of a job in a stopping phase are stopped
STOP_REASONS = {
    "Aborting": "AbortJob",
    "Aborted": "AbortJob",
    "Completing": "CompleteJob",
    "Terminating": "TerminateJob",
    "Completed": "JobFinished",
    "Failed": "JobFinished",
    "Terminated": "JobFinished",
}


def reconcile(state: State, now: float, keys: Iterable[str] | None = None) -> list[Output]:
    """What to write about the jobs `keys` (default: every job)."""
    outputs: list[Output] = []
    jobs = state.jobs
    records = jobs.values() if keys is None else (r for k in keys if (r := jobs.get(k)) is not None)
    for record in records:
        if record.active:
            outputs.extend(_reconcile_active(state, record, now))
        else:
            outputs.extend(_reconcile_deleted(record))
    return outputs


def _reconcile_active(state: State, r: JobRecord, now: float) -> list[Output]:
    job = r.job
    assert job is not None  # active
    outputs: list[Output] = []
    advanced, handled, cause = lifecycle.advance(r, job, now)
    # the whole payload (counts, conditions) is built only when it is to be published: most jobs a
    # batch touched had a pod change that moves no phase
    if handled or _status_moved(r.published, advanced, job):
        status = job_status(job, r, now, advanced, handled)
        fact = status_fact(r, status)
        cause = cause or r.last_cause[1]
        outputs.append(_output(r, "JobStatusChanged", "job", job.meta.name, status, fact, cause))
    # pods are created only while the job runs, as published and as about to be published (the stop of
    # what runs waits for the publication: it is caused by it)
    running = advanced.phase in lifecycle.RUNNING_PHASES and not r.stopping
    queue_open = state.queue_states.get(job.queue, "Open") == "Open"
    if r.podgroup is None and queue_open and running:
        # render.podgroup_doc: codec.encode of expand.podgroup_for's PodGroup, shared with the read model's
        podgroup = render.podgroup_doc(r.key, job, state.priority_classes)
        payload = payloads.PodGroupCreated(object={"kind": "PodGroup", "object": podgroup})
        fact = str(r.incarnation)
        outputs.append(
            _output(r, "PodGroupCreated", "podgroup", job.meta.name, payload, fact, r.spec_cause[1])
        )
    if r.tally.vacant and r.podgroup_exists and r.podgroup != "Pending" and running:
        outputs.extend(_missing_pods(r, job, now, advanced))
    if r.tally.unstopped:
        outputs.extend(_deletions(r))
    outputs.extend(_expiry(r, job, now))
    return outputs


def _reconcile_deleted(r: JobRecord) -> list[Output]:
    """The deletion cascade: stop every live pod, then remove the PodGroup once none is left."""
    outputs = _deletions(r) if r.tally.unstopped else []
    if r.podgroup_exists and not r.tally.live:
        name = r.key.partition("/")[2]
        fact = str(r.incarnation)
        deleted = payloads.Empty()
        outputs.append(_output(r, "PodGroupDeleted", "podgroup", name, deleted, fact, r.last_cause[1]))
    return outputs


def _expiry(r: JobRecord, job: Job, now: float) -> list[Output]:
    """JobCleanedUp once a finished job's TTL ran out (Volcano's garbage collector)."""
    ttl = job.ttl_seconds_after_finished
    finished_at = r.published.last_transition_time if r.published else None
    if ttl is None or r.phase not in FINAL_PHASES or finished_at is None or now < finished_at + ttl:
        return []
    payload = payloads.JobCleanedUp(incarnation=r.incarnation)
    return [_output(r, "JobCleanedUp", "job", job.meta.name, payload, str(r.incarnation), r.status_cause[1])]


# --- pods ------------------------------------------------------------------------------------------


def _missing_pods(r: JobRecord, job: Job, now: float, status: lifecycle.Lifecycle) -> list[Output]:
    """PodCreated for every replica without a pod, and a new generation for every pod that is gone, of the
    tasks whose dependencies run."""
    outputs = []
    version, retries = status.version, status.retry_count
    for task in job.tasks:
        if not lifecycle.dependencies_ready(job, task, r):
            continue
        for index in range(task.replicas):
            name = pod_name(job.meta.name, task.name, index)
            existing = r.pods.get(name)
            if existing is None:
                retry, cause = 0, max(r.spec_cause, r.podgroup_cause)
            elif existing.gone:
                retry, cause = existing.retry + 1, existing.end_cause
            else:
                continue
            # render.pod_doc: codec.encode of expand.pod_for's pod, from the task's pod encoded once
            pod = render.pod_doc(
                r.key,
                job,
                task,
                index,
                created_at=now,
                generation=retry,
                retry_count=retries,
                version=version,
            )
            payload = payloads.PodCreated(object={"kind": "Pod", "object": pod})
            fact = f"{r.incarnation}/{version}/{retry}"
            outputs.append(_output(r, "PodCreated", "pod", name, payload, fact, cause[1]))
    return outputs


def _deletions(r: JobRecord) -> list[Output]:
    """PodDeletionRequested for every pod to stop that was not asked to yet on its node (an evicting pod
    is being stopped already; a pod bound after its deletion was requested is asked again on its node)."""
    outputs = []
    for name, p in r.pods.items():
        if stop_unrequested(r, p):
            reason, cause = _stop_reason(r, p)
            payload = payloads.PodDeletionRequested(reason=reason, node=p.node)
            fact = f"{r.incarnation}/{p.retry}/{p.node}"
            outputs.append(_output(r, "PodDeletionRequested", "pod", name, payload, fact, cause[1]))
    return outputs


def _stop_reason(r: JobRecord, pod: PodRecord) -> tuple[str, Cause]:
    """Why a pod is stopped, and the event that decided it."""
    if not r.active:
        return "JobDeleted", r.deleted or r.last_cause
    if r.stopping:
        return STOP_REASONS[r.phase], r.status_cause
    if restart_kills(r, pod):
        assert r.published is not None  # restart targets are published
        target = next(t for t in r.published.restart if target_names(t, pod))
        return target.action, r.status_cause
    if pod.deletion_node is None:
        return "ScaleDown", r.spec_cause
    return "Stopped", pod.end_cause  # asked before, and bound since


# --- status ----------------------------------------------------------------------------------------


def job_status(
    job: Job, r: JobRecord, now: float, state: lifecycle.Lifecycle, handled: list[str]
) -> payloads.JobStatusChanged:
    """The JobStatusChanged payload of the lifecycle `state` that lifecycle.advance gave at `now` (and the
    pending actions it handled): its phase, retryCount, version and restart targets, totals and per-task
    counts by pod phase, minAvailable, the phase's transition time and conditions."""
    by_task = r.tally.by_task
    last = r.published
    moved = last is None or state.phase != last.phase
    conditions = () if last is None else last.conditions
    if moved:
        # Volcano's appendJobCondition: one condition per phase, the latest transition last
        entered = payloads.JobCondition(status=state.phase, last_transition_time=now)
        conditions = (*(c for c in conditions if c.status != state.phase), entered)
    return payloads.JobStatusChanged(
        phase=state.phase,
        counts={ph.lower(): sum(c.get(ph, 0) for c in by_task.values()) for ph in POD_PHASES},
        task_status_count={task: dict(c) for task, c in by_task.items()},
        min_available=job.min_available or 0,
        retry_count=state.retry_count,
        version=state.version,
        restart=state.restart,
        handled=tuple(handled),
        last_transition_time=now if last is None or moved else last.last_transition_time,
        conditions=conditions,
    )


def _status_moved(published: payloads.JobStatusChanged | None, state: lifecycle.Lifecycle, job: Job) -> bool:
    """Whether the job's lifecycle (STATUS_FACT) differs from the one last published."""
    return (
        published is None
        or state.phase != published.phase
        or (job.min_available or 0) != published.min_available
        or state.retry_count != published.retry_count
        or state.version != published.version
        or state.restart != published.restart
    )


def status_fact(r: JobRecord, status: payloads.JobStatusChanged) -> str:
    """The status's part of its event id: the JSON of its lifecycle (STATUS_FACT) and the pending actions
    it handled, as the plain payload holds them (restart targets as maps), with sorted keys and no
    spaces. Ids are deduplication keys: this must give the same string for the same status, in every
    release, or a status already published would be published again."""
    fields = {k: getattr(status, k) for k in (*STATUS_FACT, "handled")}
    content = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=msgspec.structs.asdict)
    return f"{r.incarnation}/{r.status_generation}/{content}"


# --- outputs ---------------------------------------------------------------------------------------


def _output(
    r: JobRecord,
    event_type: str,
    kind: str,
    name: str,
    payload: payloads.Payload,
    fact: str,
    cause: str,
) -> Output:
    """An event about `<job namespace>/<name>`, correlated to the job, caused by event id `cause`."""
    namespace = job_namespace(r.key)
    return Output(
        type=event_type,
        kind=kind,
        namespace=namespace,
        name=name,
        payload=payload,
        id=deterministic_id(JOB_CONTROLLER, event_type, f"{namespace}/{name}", fact),
        causation_id=cause or None,
        correlation_id=r.key,
    )
