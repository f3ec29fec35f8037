"""What the job-controller should write and the log does not show yet (the plain path of Volcano's job
controller: create the PodGroup, then the pods once the PodGroup left Pending, publish the job's status,
and tear everything down after deletion).

Level-triggered: every output follows from comparing the state with what the log already records, so
calling reconcile again before an output has been folded back re-emits it with the same id (the loop
keeps it in flight, the stream deduplicates it). Output ids are `deterministic_id` over (service, event
type, object key, the fact): the job incarnation (the seq of its JobSubmitted), a pod's retry and node, a
status generation and content — never `now`.

Plain-path rules for pods that disappear: a pod that is evicted (PodEvicting, then PodTerminated), lost
with its node (PodLost) or stopped without being asked (PodTerminated) is created again under the same
name with its retry (the `volcano.sh/job-retry-count` annotation and the uid suffix) incremented, so it
goes back to Pending and the scheduler places it again. Succeeded and Failed pods are kept as they are.
Lifecycle policies (RestartJob, AbortJob, ...) will decide this per event once they exist.
"""

from __future__ import annotations

import json
from typing import Any

from contracts import codec
from contracts.events import JOB_CONTROLLER
from contracts.objects import Job
from services.job_controller.core.expand import pod_for, pod_name, podgroup_for
from services.job_controller.core.phase import FINISHED_PHASES, TaskCounts, settle_phase
from services.job_controller.core.state import (
    POD_PHASES,
    JobRecord,
    State,
    job_namespace,
    stop_unrequested,
)
from shared.runner_types import Output, deterministic_id

# the parts of a published status that, when they differ, call for a new JobStatusChanged
STATUS_FACT = ("phase", "counts", "task_status_count", "min_available", "retry_count")


def reconcile(state: State, now: float) -> list[Output]:
    outputs: list[Output] = []
    for record in state.jobs.values():
        if record.active:
            outputs.extend(_reconcile_active(state, record, now))
        else:
            outputs.extend(_reconcile_deleted(record))
    return outputs


def _reconcile_active(state: State, r: JobRecord, now: float) -> list[Output]:
    job = r.job
    assert job is not None  # active
    outputs: list[Output] = []
    status = job_status(job, r, now)
    if r.published is None or any(status[k] != r.published[k] for k in STATUS_FACT):
        fact = _status_fact(r, status)
        outputs.append(_output(r, "JobStatusChanged", "job", job.meta.name, status, fact, r.last_cause[1]))
    # pods are not created for a finished job, even before its phase is published (the stop of what still
    # runs waits for the publication: it is caused by it)
    finished = r.stopping or status["phase"] in FINISHED_PHASES
    queue_open = state.queue_states.get(job.queue, "Open") == "Open"
    if r.podgroup is None and queue_open and not finished:
        podgroup = podgroup_for(job, state.priority_classes)
        payload = {"object": codec.encode_object(podgroup)}
        fact = str(r.incarnation)
        outputs.append(
            _output(r, "PodGroupCreated", "podgroup", job.meta.name, payload, fact, r.spec_cause[1])
        )
    if r.tally.vacant and r.podgroup_exists and r.podgroup != "Pending" and not finished:
        outputs.extend(_missing_pods(r, job, now))
    if r.tally.unstopped:
        # Volcano's Completing: what still runs of a finished job (minSuccess reached) is stopped
        reason, cause = ("JobFinished", r.status_cause) if r.stopping else ("ScaleDown", r.spec_cause)
        outputs.extend(_deletions(r, reason, cause[1]))
    return outputs


def _reconcile_deleted(r: JobRecord) -> list[Output]:
    """The deletion cascade: stop every live pod, then remove the PodGroup once none is left."""
    outputs = _deletions(r, "JobDeleted", (r.deleted or r.last_cause)[1]) if r.tally.unstopped else []
    if r.podgroup_exists and not r.tally.live:
        name = r.key.partition("/")[2]
        fact = str(r.incarnation)
        outputs.append(_output(r, "PodGroupDeleted", "podgroup", name, {}, fact, r.last_cause[1]))
    return outputs


# --- pods ------------------------------------------------------------------------------------------


def _missing_pods(r: JobRecord, job: Job, now: float) -> list[Output]:
    """PodCreated for every replica without a pod, and a new generation for every pod that is gone."""
    outputs = []
    for task in job.tasks:
        for index in range(task.replicas):
            name = pod_name(job.meta.name, task.name, index)
            existing = r.pods.get(name)
            if existing is None:
                retry, cause = 0, max(r.spec_cause, r.podgroup_cause)
            elif existing.gone and not existing.finished:
                retry, cause = existing.retry + 1, existing.end_cause
            else:
                continue
            pod = pod_for(job, task, index, created_at=now, retry_count=retry)
            payload = {"object": codec.encode_object(pod)}
            fact = f"{r.incarnation}/{retry}"
            outputs.append(_output(r, "PodCreated", "pod", name, payload, fact, cause[1]))
    return outputs


def _deletions(r: JobRecord, reason: str, cause: str) -> list[Output]:
    """PodDeletionRequested for every pod to stop that was not asked to yet on its node (an evicting pod
    is being stopped already; a pod bound after its deletion was requested is asked again on its node)."""
    outputs = []
    for name, p in r.pods.items():
        if stop_unrequested(r, p):
            payload = {"reason": reason, "node": p.node}
            fact = f"{r.incarnation}/{p.retry}/{p.node}"
            outputs.append(_output(r, "PodDeletionRequested", "pod", name, payload, fact, cause))
    return outputs


# --- status ----------------------------------------------------------------------------------------


def job_status(job: Job, r: JobRecord, now: float) -> dict[str, Any]:
    """The JobStatusChanged payload the job should have now: phase (Volcano's SyncJob rules from the last
    published phase), totals and per-task counts by pod phase, minAvailable and retries."""
    by_task = r.tally.by_task
    counts = {
        task: TaskCounts(c.get("Pending", 0), c.get("Running", 0), c.get("Succeeded", 0), c.get("Failed", 0))
        for task, c in by_task.items()
    }
    last = r.published or {"phase": "Pending", "last_transition_time": None}
    phase = settle_phase(job, last["phase"], counts)
    moved = r.published is None or phase != last["phase"]
    return {
        "phase": phase,
        "counts": {ph.lower(): sum(c.get(ph, 0) for c in by_task.values()) for ph in POD_PHASES},
        "task_status_count": {task: dict(c) for task, c in by_task.items()},
        "min_available": job.min_available or 0,
        "retry_count": job.status.retry_count,
        "last_transition_time": now if moved else last["last_transition_time"],
    }


def _status_fact(r: JobRecord, status: dict[str, Any]) -> str:
    content = json.dumps({k: status[k] for k in STATUS_FACT}, sort_keys=True, separators=(",", ":"))
    return f"{r.incarnation}/{r.status_generation}/{content}"


# --- outputs ---------------------------------------------------------------------------------------


def _output(
    r: JobRecord, event_type: str, kind: str, name: str, payload: dict[str, Any], fact: str, cause: str
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
