"""The read-model values of a Job's objects and the pods it creates, encoded straight to plain data:
exactly what `codec.encode_object` gives for objects.py's `job_object`, `podgroup_object`, `pod_object`
and expand.py's `pod_for`, without building those objects.

Why: the read model renders a job's pods and its Job and PodGroup again on nearly every pod event (a
pod's phase, the counts), and building a whole Pod (`pod_for`, three `replace`s) and encoding it cost
most of the job-controller's CPU per pod. Everything that follows from the spec alone — the Job without
its status, its PodGroup without its status, each task's pod — is encoded once per Job value and kept in
a memo; a render copies the few dicts it changes and sets what varies: the statuses, and a pod's name,
index, generation, node and times. `tests/unit/job_controller/test_render.py` holds every value equal to
the objects' encoding.

The memo is keyed by the job's key and checked by the Job value's identity (the record holds a new Job
value once its spec changes, and the memo keeps the old one alive, so an identity is never reused while
it is checked). It is bounded: beyond `MEMO_JOBS` the job rendered least recently is dropped (a job
that is still running keeps being rendered, a finished one is not: dropping the oldest inserted instead
re-encoded every job of a burst larger than the bound over and over). It is a cache of a pure function
of the state, so nothing a render or a reconcile decides depends on what it holds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts import codec, payloads
from contracts.job_shape import JOB_RETRY_COUNT, JOB_VERSION, PARTITION_ID, POD_GENERATION, TASK_INDEX
from contracts.objects import Job, JobState, PodGroupCondition, PodStatus, PriorityClass, TaskSpec
from services.job_controller.core.expand import partition_id, pod_for, podgroup_for
from services.job_controller.core.state import POD_PHASES, JobRecord

Doc = dict[str, Any]
MEMO_JOBS = 4096  # jobs whose encoded spec parts are kept (about 12 kB each with a few tasks)
_PENDING = codec.encode(PodStatus())
_PENDING_JOB = codec.encode(JobState(phase="Pending"))


@dataclass(slots=True)
class _Encoded:
    """The encoded parts of one Job value."""

    job: Job
    job_object: Doc  # the Job's encoding, its status as the spec carries it
    pods: dict[str, Doc] = field(default_factory=dict)  # task -> pod 0 of generation 0 (`_pod_template`)
    podgroup: tuple[tuple[int, ...], Doc] | None = None  # the task priorities it was computed for
    tasks: dict[str, TaskSpec] = field(default_factory=dict)  # by name, filled as pods are rendered
    # the PodGroup's conditions last encoded (by identity: the projection keeps one tuple per change)
    conditions: tuple[tuple[PodGroupCondition, ...], list[Doc]] = ((), [])


class _Memo:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        # least recently used first; an OrderedDict moves and drops its ends in O(1), where a dict's
        # first key is found by skipping every slot deleted before it
        self.jobs: OrderedDict[str, _Encoded] = OrderedDict()

    def of(self, key: str, job: Job) -> _Encoded:
        encoded = self.jobs.get(key)
        if encoded is None or encoded.job is not job:
            if encoded is None and len(self.jobs) >= self.limit:
                self.jobs.popitem(last=False)
            encoded = self.jobs[key] = _Encoded(job, codec.encode(job))
        self.jobs.move_to_end(key)
        return encoded


_MEMO = _Memo(MEMO_JOBS)


# --- pods ------------------------------------------------------------------------------------------


def _task(encoded: _Encoded, name: str) -> TaskSpec | None:
    task = encoded.tasks.get(name)
    if task is None:
        task = next((t for t in encoded.job.tasks if t.name == name), None)
        if task is not None:
            encoded.tasks[name] = task
    return task


def _pod_template(encoded: _Encoded, task: TaskSpec) -> Doc:
    template = encoded.pods.get(task.name)
    if template is None:
        pod = pod_for(encoded.job, task, 0, created_at=0.0)
        template = encoded.pods[task.name] = codec.encode(pod)
    return template


def pod_doc(
    key: str,
    job: Job,
    task: TaskSpec,
    index: int,
    *,
    created_at: float,
    generation: int = 0,
    retry_count: int = 0,
    version: int = 0,
) -> Doc:
    """`codec.encode(pod_for(job, task, index, ...))` of the job at `key` (its PodCreated object)."""
    template = _pod_template(_MEMO.of(key, job), task)
    meta = template["meta"].copy()
    name = f"{job.meta.name}-{task.name}-{index}"
    meta["name"] = name
    meta["uid"] = f"{job.meta.namespace}-{name}-{generation}"
    labels = meta["labels"] = meta["labels"].copy()
    labels[TASK_INDEX] = str(index)
    partition = partition_id(task, index)
    if partition is not None:
        labels[PARTITION_ID] = str(partition)
    annotations = meta["annotations"] = meta["annotations"].copy()
    annotations[TASK_INDEX] = str(index)
    annotations[JOB_VERSION] = str(version)
    annotations[JOB_RETRY_COUNT] = str(retry_count)
    annotations[POD_GENERATION] = str(generation)
    meta["creation_timestamp"] = created_at
    return {"meta": meta, "spec": template["spec"].copy(), "status": _PENDING.copy()}


def pod_value(
    record: JobRecord | None, name: str, details: PodStatus | None, deletion_time: float | None
) -> Doc | None:
    """The read-model value of `objects.pod_object(record, name, details, deletion_time)`."""
    if record is None or record.job is None:
        return None
    pod = record.pods.get(name)
    if pod is None or pod.gone:
        return None
    task = _task(_MEMO.of(record.key, record.job), pod.task)
    if task is None:
        return None
    obj = pod_doc(
        record.key,
        record.job,
        task,
        pod.index,
        created_at=pod.created_at,
        generation=pod.retry,
        retry_count=pod.job_retry,
        version=pod.version,
    )
    if pod.evicting or pod.deletion_node is not None:
        obj["meta"]["deletion_timestamp"] = deletion_time
    obj["spec"]["node_name"] = pod.node
    status = obj["status"] if details is None else codec.encode(details)
    status["phase"] = pod.phase
    obj["status"] = status
    return {"kind": "Pod", "object": obj}


# --- the Job ---------------------------------------------------------------------------------------


def job_value(record: JobRecord | None) -> Doc | None:
    """The read-model value of `objects.job_object(record)`."""
    if record is None or record.job is None or not record.active:
        return None
    job = record.job
    base = _MEMO.of(record.key, job).job_object
    status = base["status"].copy()
    by_task = record.tally.by_task
    status["task_status_count"] = {task: dict(counts) for task, counts in by_task.items()}
    for phase in POD_PHASES:
        status[phase.lower()] = sum(c.get(phase, 0) for c in by_task.values())
    published = record.published
    if published is None:
        status["state"] = _PENDING_JOB.copy()
        status["min_available"] = job.min_available or 0
    else:
        # codec.encode(JobState(phase=..., last_transition_time=...)), without building it
        state = status["state"] = _PENDING_JOB.copy()
        state["phase"] = published.phase
        state["last_transition_time"] = published.last_transition_time
        status["min_available"] = published.min_available
        status["retry_count"] = published.retry_count
        status["version"] = published.version
        status["conditions"] = [_condition(c) for c in published.conditions]
    return {"kind": "Job", "object": {**base, "status": status}}


def _condition(c: payloads.JobCondition) -> Doc:
    return {"status": c.status, "last_transition_time": c.last_transition_time}


# --- the PodGroup ----------------------------------------------------------------------------------


def podgroup_doc(key: str, job: Job, classes: Mapping[str, PriorityClass]) -> Doc:
    """`codec.encode(expand.podgroup_for(job, classes))` of the job at `key`: its PodGroupCreated object
    and the read model's PodGroup without its status, encoded once per Job value and priorities."""
    encoded = _MEMO.of(key, job)
    # the PodGroup's minResources take tasks by their priority class's value: all that classes change
    priorities = tuple(
        pc.value if (pc := classes.get(t.template.spec.priority_class_name)) else 0 for t in job.tasks
    )
    if encoded.podgroup is None or encoded.podgroup[0] != priorities:
        encoded.podgroup = (priorities, codec.encode(podgroup_for(job, dict(classes))))
    return encoded.podgroup[1]


def podgroup_value(
    record: JobRecord | None,
    conditions: tuple[PodGroupCondition, ...],
    classes: Mapping[str, PriorityClass],
) -> Doc | None:
    """The read-model value of `objects.podgroup_object(record, conditions, classes)`."""
    if record is None or record.job is None or not record.podgroup_exists:
        return None
    encoded = _MEMO.of(record.key, record.job)
    base = podgroup_doc(record.key, record.job, classes)
    running = succeeded = failed = 0
    for counts in record.tally.by_task.values():
        running += counts.get("Running", 0)
        succeeded += counts.get("Succeeded", 0)
        failed += counts.get("Failed", 0)
    if encoded.conditions[0] is not conditions:
        encoded.conditions = (conditions, [codec.encode(c) for c in conditions])
    status = {
        "phase": record.podgroup or "Pending",
        "conditions": encoded.conditions[1].copy(),
        "running": running,
        "succeeded": succeeded,
        "failed": failed,
    }
    return {"kind": "PodGroup", "object": {**base, "status": status}}
