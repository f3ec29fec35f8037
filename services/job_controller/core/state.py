"""What the job-controller knows: per job incarnation, its spec, its PodGroup, its pods and the status it last
published, all folded from the log (including the controller's own events).

The state is a mutable container that `fold.apply` updates in place (the runner holds the only reference;
copying it per event would make replay quadratic). Leaf values — jobs, pod records — are immutable.
Pods and PodGroups are kept compact (their objects are re-derivable with `expand.pod_for` /
`expand.podgroup_for` from the job, the pod's task, index, retry and creation time), so a checkpoint of a
large cluster stays small.

Every record also keeps a `Tally` of its pods, updated per pod change by `put_pod` and recomputed by
`retally` when what the job wants changes (spec, deletion, the published phase, version or restart
targets): reconcile reads it, so a job with nothing to do costs O(tasks) rather than O(pods).

Which pods a job stops (`to_stop`): every live pod once the job is deleted or in a stopping phase
(Aborting, Aborted, Completing, Terminating and the finished ones: Volcano's KillJob with retain Soft keeps
Succeeded and Failed pods), the pods beyond a task's replicas, a pod once its deletion was asked (for good,
on whichever node it lands), and while Restarting the pods of an earlier job version that a restart target
names (finished ones too when the target's retain is None). A finished pod whose deletion was asked is
gone: nothing runs it, and its slot is free for the next generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts import payloads
from contracts.objects import Job, PriorityClass
from services.job_controller.core.phase import STOPPING_PHASES
from services.job_controller.core.pod_lifecycle import FINISHED_POD_PHASES, gone
from services.job_controller.core.timer_heap import TimerHeap

# (seq, event id) of the event that made something true: the seq orders causes, the id becomes the
# causation id of the outputs that follow from it.
Cause = tuple[int, str]
NO_CAUSE: Cause = (0, "")

# what a pod counts as in a job's status: Volcano's TaskStatusCount phases, plus pods being stopped
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Terminating")
LIVE_PHASES = ("Pending", "Running", "Terminating")


@dataclass(frozen=True, slots=True)
class PodRecord:
    """One generation of a pod (a pod name is reused with a new retry when its predecessor is gone)."""

    uid: str
    task: str
    index: int
    retry: int
    created_at: float
    node: str = ""  # "" while unbound
    phase: str = "Pending"  # Pending | Running | Succeeded | Failed
    evicting: bool = False
    # the node named by the last PodDeletionRequested ("" = requested while unbound); None = not requested
    deletion_node: str | None = None
    ended: bool = False  # PodTerminated or PodLost: the pod no longer exists on any node
    end_cause: Cause = NO_CAUSE  # the event that ended this generation (or asked for its end)
    version: int = 0  # the job's version when it was created (every kill action bumps it)
    job_retry: int = 0  # the job's retryCount when it was created

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_POD_PHASES

    @property
    def gone(self) -> bool:
        return gone(self)  # pod_lifecycle.gone

    @property
    def live(self) -> bool:
        """Holds (or may still get) a place on a node."""
        return not self.gone and not self.finished

    @property
    def counted_as(self) -> str | None:
        """Its POD_PHASES entry: gone pods nowhere, finished ones by phase, pods being stopped as
        Terminating, the rest by phase (a bound pod that has not started is Pending)."""
        if self.gone:
            return None
        if self.finished:
            return self.phase
        if self.evicting or self.deletion_node is not None:
            return "Terminating"
        return self.phase


@dataclass(frozen=True, slots=True)
class Pending:
    """A policy action (or a command) resolved when its event was folded, waiting for reconcile to run
    it: at once (`due` None) or from `due` on (a policy's timeout)."""

    key: str  # "<event id>/<policy event>": what a JobStatusChanged names in `handled` once it ran
    cause: str  # the id of the event that raised it
    event: str  # the policy event (PodFailed, ..., JobUpdated) or "Command"
    action: str
    due: float | None = None
    task: str = ""  # the task the event is about ("" for job events)
    pod: str = ""  # the pod's name, for pod events
    index: int = -1  # the pod's index in its task
    retry: int = -1  # the pod's generation
    counted: bool = True  # a restart it causes consumes the retry budget (see policies.py)


@dataclass(slots=True)
class Tally:
    """Aggregates over a record's pods (see the module docstring)."""

    by_task: dict[str, dict[str, int]] = field(default_factory=dict)  # task -> POD_PHASES entry -> pods
    vacant: int = 0  # replicas of the spec to create a pod for (none yet, or one gone without finishing)
    unstopped: int = 0  # pods to stop (see `to_stop`) whose deletion was not requested on their node

    @property
    def live(self) -> int:
        return sum(counts.get(phase, 0) for counts in self.by_task.values() for phase in LIVE_PHASES)


@dataclass(slots=True)
class JobRecord:
    """One incarnation of a job key: from its JobSubmitted (or the first stray event about it) until its
    PodGroup and pods are gone after JobDeleted. Build it with `new_record`."""

    key: str
    job: Job | None  # the defaulted spec; None for an orphan (a PodGroup or pod whose job is unknown)
    incarnation: int  # seq of the event that started this record: part of every output id
    spec_cause: Cause = NO_CAUSE
    deleted: Cause | None = None  # JobDeleted
    podgroup: str | None = None  # the PodGroup's phase; None until PodGroupCreated
    podgroup_deleted: bool = False
    podgroup_cause: Cause = NO_CAUSE  # the last PodGroup event
    pods: dict[str, PodRecord] = field(default_factory=dict)  # by pod name; change through put_pod
    published: payloads.JobStatusChanged | None = None  # payload of the last JobStatusChanged
    status_generation: int = 0  # JobStatusChanged events folded so far
    status_cause: Cause = NO_CAUSE  # the last JobStatusChanged
    last_cause: Cause = NO_CAUSE  # the last event folded into this record
    # policy actions and commands waiting to run, in log order (policies.py; consumed by JobStatusChanged)
    pending: tuple[Pending, ...] = ()
    failures: dict[str, int] = field(default_factory=dict)  # task -> pod failures since the last full restart
    # a JobSubmitted for this key while it is still being deleted: promoted once the deletion completes
    successor: tuple[Job, Cause] | None = None
    tally: Tally = field(default_factory=Tally)  # derived from the fields above

    @property
    def active(self) -> bool:
        return self.job is not None and self.deleted is None

    @property
    def phase(self) -> str:
        """The published phase (Pending until the first JobStatusChanged)."""
        return "Pending" if self.published is None else self.published.phase

    @property
    def stopping(self) -> bool:
        """Deleted, an orphan, or published in a stopping phase: none of its pods should run any more."""
        return not self.active or self.phase in STOPPING_PHASES

    @property
    def podgroup_exists(self) -> bool:
        return self.podgroup is not None and not self.podgroup_deleted


@dataclass(slots=True)
class State:
    jobs: dict[str, JobRecord] = field(default_factory=dict)  # by job key
    pod_owner: dict[str, str] = field(default_factory=dict)  # pod key -> job key (derived from jobs)
    queue_states: dict[str, str] = field(default_factory=dict)  # from QueueStateChanged
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    # the jobs' time-based deadlines (deadlines.py; derived from jobs, not checkpointed)
    deadlines: TimerHeap = field(default_factory=TimerHeap, compare=False)


def new_record(key: str, job: Job | None, cause: Cause) -> JobRecord:
    """A record started by the event `cause` (its seq is the incarnation)."""
    record = JobRecord(key, job, incarnation=cause[0], spec_cause=cause, last_cause=cause)
    retally(record)
    return record


def forget_if_done(state: State, record: JobRecord) -> None:
    """Drop a deleted job once its PodGroup and live pods are gone, then start its successor if any."""
    if record.active or record.podgroup_exists or record.tally.live:
        return
    del state.jobs[record.key]
    for name in record.pods:
        state.pod_owner.pop(pod_key(job_namespace(record.key), name), None)
    if record.successor is not None:
        job, cause = record.successor
        state.jobs[record.key] = new_record(record.key, job, cause)


def pod_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def job_namespace(key: str) -> str:
    return key.partition("/")[0]


# --- the tally -------------------------------------------------------------------------------------


def _replicas(record: JobRecord, task: str) -> int:
    if record.job is None:
        return 0
    return next((t.replicas for t in record.job.tasks if t.name == task), 0)


def restart_kills(record: JobRecord, pod: PodRecord) -> bool:
    """While Restarting: the pod predates the job's version and a restart target names it."""
    published = record.published
    if published is None or published.phase != "Restarting" or pod.version >= published.version:
        return False
    return any(target_names(target, pod) for target in published.restart)


def target_names(target: payloads.RestartTarget, pod: PodRecord) -> bool:
    """Whether a restart target (task "" = every task, hi -1 = no upper index) covers the pod; a finished
    pod only when the target's retain is None."""
    if target.task and target.task != pod.task:
        return False
    if pod.index < target.lo or (target.hi >= 0 and pod.index >= target.hi):
        return False
    return not pod.finished or target.retain == "None"


def to_stop(record: JobRecord, pod: PodRecord) -> bool:
    """A pod the job no longer wants (see the module docstring)."""
    if pod.gone:
        return False
    if pod.live and (pod.deletion_node is not None or record.stopping):
        return True
    return restart_kills(record, pod) or (pod.live and pod.index >= _replicas(record, pod.task))


def stop_unrequested(record: JobRecord, pod: PodRecord) -> bool:
    """To stop, not already being evicted, and not yet asked on the node it is on now."""
    return to_stop(record, pod) and not pod.evicting and pod.deletion_node != pod.node


def _count(record: JobRecord, pod: PodRecord, sign: int) -> None:
    # runs twice per pod event: the pod's properties are read once each (what counted_as, to_stop and
    # stop_unrequested would read again)
    if pod.gone:
        return  # counted nowhere, holds no slot, and nothing is left to stop
    tally = record.tally
    # counted_as, inlined (the pod is not gone)
    stopping = pod.evicting or pod.deletion_node is not None
    phase = "Terminating" if stopping and not pod.finished else pod.phase
    counts = tally.by_task.setdefault(pod.task, {})
    counts[phase] = counts.get(phase, 0) + sign
    if not counts[phase]:
        del counts[phase]
    if not counts:
        del tally.by_task[pod.task]
    # a slot is held by any pod that is not gone (a finished one is not created again unless deleted)
    replicas = _replicas(record, pod.task)
    if pod.index < replicas:
        tally.vacant -= sign
    # stop_unrequested, inlined (the pod is not gone)
    if pod.evicting or pod.deletion_node == pod.node:
        return  # being stopped, or asked on its node already
    live = not pod.finished
    if (live and (pod.deletion_node is not None or record.stopping or pod.index >= replicas)) or (
        restart_kills(record, pod)
    ):
        tally.unstopped += sign


# the fields a pod event changes (pod_lifecycle.transition's, and the cause the fold adds)
_CHANGEABLE = frozenset({"node", "phase", "evicting", "deletion_node", "ended", "end_cause"})


def changed(pod: PodRecord, change: Mapping[str, Any]) -> PodRecord:
    """dataclasses.replace(pod, **change), without its introspection of the fields on every call (this
    runs for every pod event)."""
    if not _CHANGEABLE.issuperset(change):
        raise TypeError(f"not a pod event's change: {sorted(set(change) - _CHANGEABLE)}")
    get = change.get
    return PodRecord(
        uid=pod.uid,
        task=pod.task,
        index=pod.index,
        retry=pod.retry,
        created_at=pod.created_at,
        node=get("node", pod.node),
        phase=get("phase", pod.phase),
        evicting=get("evicting", pod.evicting),
        deletion_node=get("deletion_node", pod.deletion_node),
        ended=get("ended", pod.ended),
        end_cause=get("end_cause", pod.end_cause),
        version=pod.version,
        job_retry=pod.job_retry,
    )


def put_pod(record: JobRecord, name: str, pod: PodRecord) -> None:
    previous = record.pods.get(name)
    if previous is not None:
        _count(record, previous, -1)
    record.pods[name] = pod
    _count(record, pod, 1)


def retally(record: JobRecord) -> None:
    replicas = 0 if record.job is None else sum(t.replicas for t in record.job.tasks)
    record.tally = Tally(vacant=replicas)
    for pod in record.pods.values():
        _count(record, pod, 1)
