"""The event catalogue: every domain event type, the one service that may write it, and its payload.

Events are facts in the past tense. Each type has exactly one writer; a service that wants another
service's fact changed sends it a request or a plan. Payload fields are plain data (see contracts.codec
for objects). The subject of an event is `lahar.ev.<subject kind>.<namespace or _>.<name>` of the object
it is about, so the log of one object is one subject and per-object optimistic concurrency is a header.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ADMISSION = "admission"
JOB_CONTROLLER = "job-controller"
QUEUE_CONTROLLER = "queue-controller"
SCHEDULER = "scheduler"
BINDER = "binder"
NODE_AGENT = "node-agent"
DESCHEDULER = "descheduler"

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class EventType:
    name: str
    subject_kind: str  # job | podgroup | pod | queue | node | priorityclass | hypernode | command | rejection
    writer: str
    payload: tuple[str, ...]  # required payload keys
    summary: str


def _types(*items: EventType) -> Mapping[str, EventType]:
    return {item.name: item for item in items}


EVENT_TYPES: Mapping[str, EventType] = _types(
    # admission: accepted specs (payload "object" is contracts.codec.encode_object of the defaulted object)
    EventType("JobSubmitted", "job", ADMISSION, ("object",), "a Job was accepted and defaulted"),
    EventType("JobUpdated", "job", ADMISSION, ("object",), "a Job's mutable fields changed"),
    EventType("JobDeleted", "job", ADMISSION, (), "a Job was deleted; its pods and PodGroup follow"),
    EventType(
        "JobSecretCreated",
        "job",
        ADMISSION,
        ("name", "uid", "data"),
        "a Job's generated secret (the ssh plugin's key pair), written with its JobSubmitted",
    ),
    EventType(
        "PodSubmitted",
        "pod",
        ADMISSION,
        ("object", "podgroup"),
        "a plain Pod (no Job) was accepted; `podgroup` is the PodGroup it gets of its own, or None",
    ),
    EventType("PodWithdrawn", "pod", ADMISSION, (), "a plain Pod was deleted; it is stopped and forgotten"),
    EventType("PodGroupSubmitted", "podgroup", ADMISSION, ("object",), "a user's PodGroup was accepted"),
    EventType(
        "PodGroupWithdrawn", "podgroup", ADMISSION, (), "a user's PodGroup was deleted (its pods stay)"
    ),
    EventType("QueueApplied", "queue", ADMISSION, ("object",), "a Queue was created or its spec changed"),
    EventType("QueueDeleted", "queue", ADMISSION, (), "a Queue was deleted"),
    EventType("PriorityClassApplied", "priorityclass", ADMISSION, ("object",), "a PriorityClass was applied"),
    EventType("PriorityClassDeleted", "priorityclass", ADMISSION, (), "a PriorityClass was deleted"),
    EventType("HyperNodeApplied", "hypernode", ADMISSION, ("object",), "a HyperNode was applied"),
    EventType("HyperNodeDeleted", "hypernode", ADMISSION, (), "a HyperNode was deleted"),
    EventType(
        "CommandIssued",
        "command",
        ADMISSION,
        ("action", "target_kind", "target"),
        "a bus.volcano.sh Command (suspend, resume, open, close, ...) was accepted",
    ),
    EventType(
        "ManifestRejected",
        "rejection",
        ADMISSION,
        ("errors", "source"),
        "a manifest published on the intake stream was invalid; every error is listed",
    ),
    # job-controller: what a Job (or a plain Pod or PodGroup) becomes
    EventType("PodGroupCreated", "podgroup", JOB_CONTROLLER, ("object",), "a PodGroup was created"),
    EventType("PodGroupDeleted", "podgroup", JOB_CONTROLLER, (), "a PodGroup was removed"),
    EventType("PodCreated", "pod", JOB_CONTROLLER, ("object",), "a pod was created (pending)"),
    EventType(
        "PodDeletionRequested", "pod", JOB_CONTROLLER, ("reason",), "a pod is to be stopped and removed"
    ),
    EventType(
        "JobStatusChanged",
        "job",
        JOB_CONTROLLER,
        ("phase", "counts"),
        "a Job's phase or pod counts changed",
    ),
    EventType("JobCleanedUp", "job", JOB_CONTROLLER, (), "a finished Job's TTL ran out; it is deleted"),
    # queue-controller
    EventType(
        "QueueStateChanged", "queue", QUEUE_CONTROLLER, ("state",), "Open / Closing / Closed / Unknown"
    ),
    # binder: the single committer of placements (plans come from schedulers and the descheduler)
    EventType("PodBound", "pod", BINDER, ("node", "plan"), "a pod was placed on a node"),
    EventType(
        "PodEvicting", "pod", BINDER, ("node", "reason", "plan"), "a pod is to be evicted from its node"
    ),
    EventType(
        "PodGroupStatusChanged",
        "podgroup",
        BINDER,
        ("phase", "conditions"),
        "a PodGroup's scheduling phase or conditions changed (computed by its scheduler, committed here)",
    ),
    EventType(
        "PlanRejected", "podgroup", BINDER, ("reason", "checked_seq", "plan"), "a plan did not fit the ledger"
    ),
    EventType("NodeNotReady", "node", BINDER, ("last_heartbeat",), "a node's heartbeats stopped"),
    EventType("NodeReady", "node", BINDER, (), "a node's heartbeats resumed"),
    EventType("PodLost", "pod", BINDER, ("node", "reason"), "a pod's node was lost (reason NodeLost)"),
    # node agent
    EventType(
        "NodeRegistered", "node", NODE_AGENT, ("object",), "a node joined with its allocatable resources"
    ),
    EventType("PodRunning", "pod", NODE_AGENT, ("node",), "a pod's containers started"),
    EventType("PodSucceeded", "pod", NODE_AGENT, ("node", "exit_code"), "a pod's containers exited 0"),
    EventType("PodFailed", "pod", NODE_AGENT, ("node", "exit_code", "reason"), "a pod's containers failed"),
    EventType(
        "PodTerminated", "pod", NODE_AGENT, ("node", "reason"), "a pod was stopped (evicted or deleted)"
    ),
)


def writer_of(event_type: str) -> str:
    return EVENT_TYPES[event_type].writer


def event_types_written_by(service: str) -> tuple[str, ...]:
    return tuple(name for name, t in EVENT_TYPES.items() if t.writer == service)
