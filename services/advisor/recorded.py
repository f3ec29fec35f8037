"""A running stack's workload, from its event log, as manifests `lahar simulate` and `lahar advise -f`
read (`lahar export workload`, `lahar advise --from-log`).

- Nodes: the last NodeRegistered of each node (name, labels, taints, capacity and allocatable).
- PriorityClasses, Queues and HyperNodes: the last applied version of each that was not deleted since,
  and every queue a workload item names, deleted or not.
- The workload: every Job, plain Pod and user PodGroup admission accepted (JobSubmitted, PodSubmitted,
  PodGroupSubmitted), as accepted and defaulted, in arrival order, each with `lahar.dev/sim-arrival` = its
  acceptance time after the first one's. A name submitted again after a deletion is a new arrival: it is
  written as `<name>-2`, `<name>-3`, ... so that both runs stay in the workload (their run times, recorded
  under the one name, are pooled). CronJobs and JobFlows
  come out as the jobs they made, when they made them.
- Run times: where pods of a task ran to success, the task's pod template gets `lahar.dev/sim-duration`
  = their mean observed run time (PodRunning to PodSucceeded), replacing any such annotation it had; a
  plain pod gets its own. Tasks that never succeeded keep what they had (the simulator's 60 s default).

Pure: events in, Kubernetes-shaped documents out. `since` keeps only the workload accepted at or after
that time (nodes, queues and classes are kept whatever their age).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from contracts.bundles import BUNDLE_FOR
from contracts.codec import decode_object
from contracts.job_shape import JOB_NAME, TASK_SPEC
from contracts.kube_shape import kube_object
from contracts.kube_values import go_duration
from contracts.objects import ApiObject, Job, ObjectMeta, Pod
from contracts.sim_annotations import SIM_ARRIVAL, SIM_DURATION
from shared.client_reads import RawEvent

Doc = dict[str, Any]

# the event types an export reads, and what each is to it
SETTINGS_APPLIED = {
    "PriorityClassApplied": "PriorityClassDeleted",
    "QueueApplied": "QueueDeleted",
    "HyperNodeApplied": "HyperNodeDeleted",
}
WORKLOAD_SUBMITTED = ("JobSubmitted", "PodSubmitted", "PodGroupSubmitted")
RUN_EVENTS = ("PodCreated", "PodRunning", "PodSucceeded")
EVENT_TYPES = (
    "NodeRegistered",
    *SETTINGS_APPLIED,
    *SETTINGS_APPLIED.values(),
    *WORKLOAD_SUBMITTED,
    *RUN_EVENTS,
    *(BUNDLE_FOR[name] for name in RUN_EVENTS),  # the same events, several pods of a job in one record
)


def _bare_meta(meta: ObjectMeta, annotations: Mapping[str, str] | None = None) -> ObjectMeta:
    """The identity a manifest gives: no uid, timestamps or generation, which the simulator assigns."""
    return ObjectMeta(
        name=meta.name,
        namespace=meta.namespace,
        labels=meta.labels,
        annotations=dict(meta.annotations if annotations is None else annotations),
    )


def _manifest(obj: ApiObject) -> Doc:
    """The object as a manifest: Kubernetes' shape without status (which the simulator makes), nodes
    keeping their capacity and allocatable."""
    doc = kube_object(obj)
    status = doc.pop("status", None)
    if obj.kind == "Node" and status:
        doc["status"] = {k: v for k, v in status.items() if k in ("capacity", "allocatable")}
    if obj.kind == "Pod":
        doc["spec"].pop("nodeName", None)
    return doc


def _run_times(events: Iterable[RawEvent]) -> dict[tuple[str, str, str], list[float]]:
    """(namespace, job, task) -> observed run times of its pods that succeeded; plain pods under
    (namespace, pod name, "")."""
    owner: dict[str, tuple[str, str, str]] = {}
    started: dict[str, float] = {}
    runs: dict[tuple[str, str, str], list[float]] = {}
    for event in events:
        key = f"{event.namespace}/{event.name}"
        if event.type == "PodCreated":
            pod = decode_object(event.payload["object"])
            annotations = pod.meta.annotations
            if JOB_NAME in annotations:
                owner[key] = (pod.meta.namespace, annotations[JOB_NAME], annotations.get(TASK_SPEC, ""))
        elif event.type == "PodRunning":
            started[key] = float(event.payload.get("started_at") or event.time)
        elif event.type == "PodSucceeded" and key in started:
            finished = float(event.payload.get("finished_at") or event.time)
            where = owner.get(key, (event.namespace or "default", event.name, ""))
            runs.setdefault(where, []).append(max(0.0, finished - started.pop(key)))
    return runs


def _duration(runs: list[float]) -> str:
    return go_duration(round(statistics.fmean(runs), 3))


def _with_run_times(obj: ApiObject, name: str, runs: Mapping[tuple[str, str, str], list[float]]) -> ApiObject:
    """The object with its observed run times (looked up by the name it ran under)."""
    namespace = obj.meta.namespace
    if isinstance(obj, Job):
        tasks = []
        for task in obj.tasks:
            observed = runs.get((namespace, name, task.name))
            if observed:
                annotations = {**task.template.annotations, SIM_DURATION: _duration(observed)}
                task = replace(task, template=replace(task.template, annotations=annotations))
            tasks.append(task)
        return replace(obj, tasks=tuple(tasks))
    if isinstance(obj, Pod):
        observed = runs.get((namespace, name, ""))
        if observed:
            annotations = {**obj.meta.annotations, SIM_DURATION: _duration(observed)}
            return replace(obj, meta=replace(obj.meta, annotations=annotations))
    return obj


def recorded_workload(events: Iterable[RawEvent], since: float | None = None) -> list[Doc]:
    """The manifests of the workload the events record (see the module's docstring), in the order a
    simulation should read them: nodes, priority classes, queues, hypernodes, then the workload by
    arrival."""
    events = sorted(events, key=lambda e: e.seq)
    nodes: dict[str, ApiObject] = {}
    settings: dict[tuple[str, str], ApiObject | None] = {}  # (kind, key) -> last applied, None: deleted
    last_applied: dict[tuple[str, str], ApiObject] = {}
    arrivals: list[tuple[float, ApiObject]] = []
    for event in events:
        key = f"{event.namespace}/{event.name}" if event.namespace else event.name
        if event.type == "NodeRegistered":
            nodes[event.name] = decode_object(event.payload["object"])
        elif event.type in SETTINGS_APPLIED:
            obj = decode_object(event.payload["object"])
            settings[(obj.kind, key)] = last_applied[(obj.kind, key)] = obj
        elif event.type in SETTINGS_APPLIED.values():
            kind = event.type.removesuffix("Deleted")
            settings[(kind, key)] = None
        elif event.type in WORKLOAD_SUBMITTED and (since is None or event.time >= since):
            arrivals.append((event.time, decode_object(event.payload["object"])))
    runs = _run_times(events)
    workload = _arrivals(arrivals, runs)
    named_queues = {doc["spec"]["queue"] for doc in workload if doc["kind"] in ("Job", "PodGroup")}
    for (kind, key), obj in last_applied.items():
        if kind == "Queue" and settings[(kind, key)] is None and key in named_queues:
            settings[(kind, key)] = obj  # deleted since, but the workload ran in it
    ordered = sorted(
        (obj for obj in settings.values() if obj is not None),
        key=lambda o: (("PriorityClass", "Queue", "HyperNode").index(o.kind), o.meta.key),
    )
    head = [_manifest(replace(n, meta=_bare_meta(n.meta))) for _, n in sorted(nodes.items())]
    head += [_manifest(replace(o, meta=_bare_meta(o.meta))) for o in ordered]
    return head + workload


def _arrivals(
    arrivals: list[tuple[float, ApiObject]], runs: Mapping[tuple[str, str, str], list[float]]
) -> list[Doc]:
    if not arrivals:
        return []
    first = min(time for time, _ in arrivals)
    seen: dict[tuple[str, str], int] = {}
    docs = []
    for time, obj in arrivals:
        identity = (obj.kind, obj.meta.key)
        seen[identity] = seen.get(identity, 0) + 1
        ran_as = obj.meta.name
        obj = _with_run_times(obj, ran_as, runs)
        name = ran_as if seen[identity] == 1 else f"{ran_as}-{seen[identity]}"
        annotations = {**obj.meta.annotations, SIM_ARRIVAL: go_duration(round(time - first, 3))}
        docs.append(_manifest(replace(obj, meta=replace(_bare_meta(obj.meta, annotations), name=name))))
    return docs
