"""The descheduler's view of the cluster, folded from the event log (pure): nodes, the pods on them,
PodGroups (their minMember), PriorityClasses, which Jobs mount volume claims, and when the descheduler
last had each pod evicted (the cool-down).

A pod is on its node from PodBound until it finishes (PodSucceeded, PodFailed, PodLost about that run)
or its run stops (PodTerminated); a pod being evicted or deleted (PodEvicting, PodDeletionRequested)
still holds its node but is `stopping`, so nobody evicts it again. PodCreated starts a new generation
(a Job's pod created again under its name after an eviction): unbound, Pending.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from contracts import payloads
from contracts.evictions import DESCHEDULE, eviction_cause
from contracts.objects import Job, Node, Pod, PodGroup, PriorityClass
from contracts.payloads import ObjectPayload
from shared.runner_types import Event

FINISHED = frozenset({"Succeeded", "Failed"})


@dataclass(slots=True)
class PodRecord:
    pod: Pod  # as created; its spec.node_name is set once bound
    phase: str = "Pending"
    stopping: bool = False  # being evicted or deleted

    @property
    def node(self) -> str:
        return self.pod.spec.node_name

    @property
    def on_node(self) -> bool:
        """Bound and not finished: it holds its node's resources (a stopping pod too, until it stops)."""
        return bool(self.node) and self.phase not in FINISHED


@dataclass(slots=True)
class ClusterView:
    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, PodRecord] = field(default_factory=dict)  # ns/name
    podgroups: dict[str, PodGroup] = field(default_factory=dict)  # ns/name
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    claim_jobs: set[str] = field(default_factory=set)  # ns/name of the Jobs whose pods mount claims
    descheduled_at: dict[str, float] = field(default_factory=dict)  # pod key -> its last eviction's time
    seq: int = 0

    def pods_on(self) -> Mapping[str, list[PodRecord]]:
        """Node name -> the pods on it (bound, not finished), in key order."""
        by_node: dict[str, list[PodRecord]] = {name: [] for name in self.nodes}
        for key in sorted(self.pods):
            record = self.pods[key]
            if record.on_node and record.node in by_node:
                by_node[record.node].append(record)
        return by_node

    def records(self) -> Iterator[PodRecord]:
        return iter(self.pods.values())


def _key(event: Event) -> str:
    return f"{event.namespace}/{event.name}" if event.namespace else event.name


def _object(event: Event, cls: type) -> object:
    obj = event.payload_as(ObjectPayload).decoded()
    if not isinstance(obj, cls):
        raise ValueError(f"{event.type} {_key(event)}: payload holds a {obj.kind}, not a {cls.__name__}")
    return obj


def _node_registered(view: ClusterView, event: Event, _: float) -> None:
    node = _object(event, Node)
    assert isinstance(node, Node)
    view.nodes[event.name] = node


def _readiness(ready: bool) -> Callable[[ClusterView, Event, float], None]:
    def handle(view: ClusterView, event: Event, _: float) -> None:
        node = view.nodes.get(event.name)
        if node is not None:
            view.nodes[event.name] = replace(node, ready=ready)

    return handle


def _priority_class(view: ClusterView, event: Event, _: float) -> None:
    pc = _object(event, PriorityClass)
    assert isinstance(pc, PriorityClass)
    view.priority_classes[event.name] = pc


def _priority_class_deleted(view: ClusterView, event: Event, _: float) -> None:
    view.priority_classes.pop(event.name, None)


def _podgroup(view: ClusterView, event: Event, _: float) -> None:
    pg = _object(event, PodGroup)
    assert isinstance(pg, PodGroup)
    view.podgroups[_key(event)] = pg


def _podgroup_deleted(view: ClusterView, event: Event, _: float) -> None:
    view.podgroups.pop(_key(event), None)


def _job(view: ClusterView, event: Event, _: float) -> None:
    job = _object(event, Job)
    assert isinstance(job, Job)
    if any(v.volume_claim_name or v.volume_claim is not None for v in job.volumes):
        view.claim_jobs.add(_key(event))
    else:
        view.claim_jobs.discard(_key(event))


def _job_gone(view: ClusterView, event: Event, _: float) -> None:
    view.claim_jobs.discard(_key(event))


def _pod_created(view: ClusterView, event: Event, _: float) -> None:
    pod = _object(event, Pod)
    assert isinstance(pod, Pod)
    view.pods[_key(event)] = PodRecord(replace(pod, spec=replace(pod.spec, node_name="")))


def _bound(view: ClusterView, event: Event, _: float) -> None:
    record = view.pods.get(_key(event))
    if record is not None:
        node = event.payload_as(payloads.PodBound).node
        record.pod = replace(record.pod, spec=replace(record.pod.spec, node_name=node))


def _report(phase: str) -> Callable[[ClusterView, Event, float], None]:
    """A report about the pod's current run (it names the node the pod is bound to, and the run has not
    ended): a late report about an earlier generation changes nothing."""

    def handle(view: ClusterView, event: Event, _: float) -> None:
        record = view.pods.get(_key(event))
        node = payloads.named_node(event.data)
        if record is not None and record.on_node and node == record.node:
            record.phase = phase

    return handle


def _stopping(view: ClusterView, event: Event, cooldown_s: float) -> None:
    key = _key(event)
    record = view.pods.get(key)
    if record is not None:
        record.stopping = True
    if event.type == "PodEvicting":
        reason = event.payload_as(payloads.PodEvicting).reason
        if eviction_cause(reason) == DESCHEDULE:
            # what has cooled down is forgotten (an eviction is rare; this walks only the recent ones)
            horizon = event.time - cooldown_s
            for old in [k for k, at in view.descheduled_at.items() if at < horizon]:
                del view.descheduled_at[old]
            view.descheduled_at[key] = event.time


def _terminated(view: ClusterView, event: Event, _: float) -> None:
    """The run stopped: the pod is gone, unless the report is about an earlier run on another node."""
    key = _key(event)
    record = view.pods.get(key)
    if record is not None and record.node == event.payload_as(payloads.PodTerminated).node:
        del view.pods[key]


Handler = Callable[[ClusterView, Event, float], None]
HANDLERS: Mapping[str, Handler] = {
    "NodeRegistered": _node_registered,
    "NodeReady": _readiness(True),
    "NodeNotReady": _readiness(False),
    "PriorityClassApplied": _priority_class,
    "PriorityClassDeleted": _priority_class_deleted,
    "PodGroupCreated": _podgroup,
    "PodGroupDeleted": _podgroup_deleted,
    "JobSubmitted": _job,
    "JobUpdated": _job,
    "JobDeleted": _job_gone,
    "JobCleanedUp": _job_gone,
    "PodCreated": _pod_created,
    "PodBound": _bound,
    "PodRunning": _report("Running"),
    "PodSucceeded": _report("Succeeded"),
    "PodFailed": _report("Failed"),
    "PodLost": _report("Failed"),
    "PodEvicting": _stopping,
    "PodDeletionRequested": _stopping,
    "PodTerminated": _terminated,
}
VIEW_EVENTS = frozenset(HANDLERS)


def fold(view: ClusterView, event: Event, cooldown_s: float) -> ClusterView:
    handler = HANDLERS.get(event.type)
    if handler is not None:
        handler(view, event, cooldown_s)
    view.seq = event.seq
    return view
