"""Volcano's lifecycle policies (applyPolicies in pkg/controllers/job/job_controller_util.go, the pod and
PodGroup handlers that raise bus events, the delayed actions of job_controller.go) as pure functions of
the job-controller's state. The fold calls them as events land: a policy event is resolved against the
job's spec at once, and the action it calls for becomes a `Pending` entry of the job's record; reconcile
runs it through the state machine (lifecycle.py) and the JobStatusChanged that does so consumes it
(`handled`).

Policy events, from the log:
- PodFailed: a pod's PodFailed, with its exit code. TaskFailed: the task's pods have failed its maxRetry
  times since the job's last full restart (maxRetry −1: never); raised before the PodFailed.
- PodEvicted: the binder evicting a pod (PodEvicting: preempt, reclaim, ...), its node lost (PodLost), or
  the pod stopped without anyone asking (PodTerminated).
- PodPending: a pod was created (it is Pending); only a policy with a timeout takes it.
- TaskCompleted: the last replica of a task succeeded. Unknown: the PodGroup's phase became Unknown.
  JobUpdated: the job's spec changed.
- A CommandIssued for the job: its action, which needs no policy.

Resolution: the task's policies (for an event about a task) before the job's; in each list the first
policy whose events hold the event or `*`, or whose exitCode is the failed pod's exit code. No match:
nothing to do (Volcano's SyncJob). A policy's timeout delays its action from the event's time (a
PodPending one from the pod's creation).

Volcano's edge cases, and the rules chosen here:
- One policy event per pod generation: the first of its failure or eviction. What follows for the same
  generation (a pod failing while it is evicted, or evicted after failing) is a consequence of it and
  raises nothing (issue #5885: a PodEvicted and a PodFailed racing for one pod gave two actions).
- Pods the controller asked to stop raise nothing: a restart cannot trigger itself again through the pods
  it kills (issues #4814 / PR #4815: RestartTask on PodEvicted restarted itself until maxRetry).
- Finished jobs (Completed, Failed, Terminated) ignore policy events and commands (issue #3967).
- Evictions and the retry budget (issue #2560): a restart caused by a PodEvicted whose reason is
  preempt or reclaim (contracts/evictions.py) — the scheduler's decision, not the job's fault — counts
  against maxRetry only when the policy that matched names PodEvicted itself; matched through `*` it
  restarts without consuming a retry. Without a PodEvicted policy an evicted pod is simply created again
  (reconcile's plain path), which never counts. Evictions for other reasons (node lost, stopped by hand,
  descheduled) count like failures.
- Delayed actions: a PodFailed or PodEvicted one is cancelled when a pod of that name runs (it
  recovered); a PodPending one when its pod generation leaves Pending, is stopped or replaced; a second
  delayed action with the same action for the same pod is not added.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from contracts import payloads
from contracts.evictions import SCHEDULING_DECISIONS, eviction_cause
from contracts.objects import Job, LifecyclePolicy
from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.core.state import JobRecord, Pending, PodRecord
from shared.runner_types import Event

ANY_EVENT = "*"
# events whose delayed action a pod that runs again cancels
RECOVERABLE = frozenset({"PodFailed", "PodEvicted"})


def resolve(
    job: Job, event: str, task: str = "", exit_code: int | None = None
) -> tuple[LifecyclePolicy, bool] | None:
    """The policy `event` calls for, and whether it names the event itself (not only through `*`)."""
    spec = next((t for t in job.tasks if t.name == task), None) if task else None
    for policies in ((spec.policies if spec is not None else ()), job.policies):
        for policy in policies:
            events = policy.all_events()
            if (event in events or ANY_EVENT in events) and (
                event != "PodPending" or policy.timeout_seconds is not None
            ):
                return policy, event in events
            if policy.exit_code is not None and policy.exit_code == exit_code:
                return policy, True
    return None


def accepting(record: JobRecord) -> bool:
    """Whether events and commands still act on the job: it exists and has not finished."""
    return record.active and record.phase not in FINAL_PHASES


def raise_event(
    record: JobRecord,
    cause: Event,
    event: str,
    *,
    pod: str = "",
    of: PodRecord | None = None,
    task: str = "",
    exit_code: int | None = None,
    reason: str = "",
) -> None:
    """Resolve a policy event of the job (about pod `pod`, generation `of`, or task `task`) and keep the
    action it calls for."""
    if not accepting(record):
        return
    assert record.job is not None  # active
    task = of.task if of is not None else task
    found = resolve(record.job, event, task, exit_code)
    if found is None:
        return
    policy, named = found
    due = None
    if policy.timeout_seconds is not None:
        since = of.created_at if event == "PodPending" and of is not None else cause.time
        due = since + policy.timeout_seconds
        if pod and any(
            p.pod == pod and p.action == policy.action and p.due is not None for p in record.pending
        ):
            return
    entry = Pending(
        key=f"{cause.id}/{event}",
        cause=cause.id,
        event=event,
        action=policy.action,
        due=due,
        task=task,
        pod=pod,
        index=of.index if of is not None else -1,
        retry=of.retry if of is not None else -1,
        counted=not (event == "PodEvicted" and eviction_cause(reason) in SCHEDULING_DECISIONS and not named),
    )
    record.pending = (*record.pending, entry)


def command(record: JobRecord, cause: Event, action: str) -> None:
    """A CommandIssued for the job: its action runs as it is (Volcano: an explicit action wins)."""
    if accepting(record):
        pending = Pending(key=f"{cause.id}/Command", cause=cause.id, event="Command", action=action)
        record.pending = (*record.pending, pending)


def consume(record: JobRecord, handled: Collection[str]) -> None:
    """Forget the pending actions a JobStatusChanged ran or cancelled."""
    if handled:
        done = set(handled)
        record.pending = tuple(p for p in record.pending if p.key not in done)


def _cancel(record: JobRecord, which: Callable[[Pending], bool]) -> None:
    if any(which(p) for p in record.pending):
        record.pending = tuple(p for p in record.pending if not which(p))


# --- pods ------------------------------------------------------------------------------------------


def pod_created(record: JobRecord, cause: Event, name: str, pod: PodRecord) -> None:
    """A new generation of pod `name`, Pending: an earlier generation's PodPending action no longer
    applies; the new one may call for one."""
    _cancel(record, lambda p: p.pod == name and p.event == "PodPending")
    raise_event(record, cause, "PodPending", pod=name, of=pod)


def pod_changed(record: JobRecord, cause: Event, name: str, before: PodRecord, after: PodRecord) -> None:
    """Cancel and raise what a change of the current generation of pod `name` calls for. A generation's
    first failure or eviction is its policy event: a failed pod, one being evicted and one that is gone
    change no more in ways that raise one."""
    if after.phase != "Pending" or after.gone or after.evicting or after.deletion_node is not None:
        _cancel(record, lambda p: p.pod == name and p.event == "PodPending")
    if cause.type == "PodRunning":
        _cancel(record, lambda p: p.pod == name and p.due is not None and p.event in RECOVERABLE)
    # a consequence of an earlier eviction, or of a stop the controller asked for
    if before.evicting or before.deletion_node is not None:
        return
    if cause.type == "PodSucceeded":
        _task_completed(record, cause, before)
    elif cause.type == "PodFailed":
        _failed(record, cause, name, after)
    elif cause.type in ("PodEvicting", "PodLost", "PodTerminated") and not before.finished:
        raise_event(record, cause, "PodEvicted", pod=name, of=after, reason=_stop_reason(cause))


def _failed(record: JobRecord, cause: Event, name: str, pod: PodRecord) -> None:
    """A pod failed by itself: count it for TaskFailed, then raise PodFailed with its exit code."""
    record.failures[pod.task] = failures = record.failures.get(pod.task, 0) + 1
    spec = next((t for t in record.job.tasks if t.name == pod.task), None) if record.job else None
    if spec is not None and spec.max_retry > 0 and failures == spec.max_retry:
        raise_event(record, cause, "TaskFailed", task=pod.task)
    exit_code = cause.payload_as(payloads.PodFailed).exit_code
    raise_event(record, cause, "PodFailed", pod=name, of=pod, exit_code=exit_code)


def _stop_reason(cause: Event) -> str:
    """Why a pod was evicted, lost or stopped, as its event says."""
    data = cause.data
    if isinstance(data, payloads.PodEvicting | payloads.PodLost | payloads.PodTerminated):
        return data.reason
    return ""


def _task_completed(record: JobRecord, cause: Event, pod: PodRecord) -> None:
    """TaskCompleted when this success (not yet in the tally) makes every replica of the task Succeeded."""
    spec = next((t for t in record.job.tasks if t.name == pod.task), None) if record.job else None
    succeeded = record.tally.by_task.get(pod.task, {}).get("Succeeded", 0) + 1
    if spec is not None and spec.replicas > 0 and succeeded == spec.replicas:
        raise_event(record, cause, "TaskCompleted", task=pod.task)


# --- the job and its PodGroup ----------------------------------------------------------------------


def podgroup_phase_changed(record: JobRecord, cause: Event, before: str | None) -> None:
    """Unknown (Volcano's JobUnknown) when the PodGroup's phase becomes Unknown."""
    if record.podgroup == "Unknown" and before != "Unknown":
        raise_event(record, cause, "Unknown")
