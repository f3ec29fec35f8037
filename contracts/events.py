"""The event catalogue: every domain event type, the one service that may write it, and its payload.

Events are facts in the past tense. Each type has exactly one writer; a service that wants another
service's fact changed sends it a request or a plan. Payload fields are plain data (see contracts.codec
for objects). The subject of an event is `lahar.ev.<subject kind>.<namespace or _>.<name>` of the object
it is about, so the log of one object is one subject and per-object optimistic concurrency is a header.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from contracts import bundles, payloads

ADMISSION = "admission"
JOB_CONTROLLER = "job-controller"
QUEUE_CONTROLLER = "queue-controller"
SCHEDULER = "scheduler"
BINDER = "binder"
NODE_AGENT = "node-agent"
DESCHEDULER = "descheduler"


@dataclass(frozen=True, slots=True)
class EventType:
    name: str
    # job | podgroup | pod | queue | node | priorityclass | hypernode | command | rejection | tenant |
    # cronjob | jobtemplate | jobflow | pods | objects (bundles: contracts/bundles.py)
    subject_kind: str
    writer: str
    payload_class: type[payloads.Payload]  # what the payload holds (contracts/payloads.py)
    summary: str
    # the payload's schema version; events of older versions are upcast on reading (contracts/upcasters.py)
    version: int = 1

    @property
    def payload(self) -> tuple[str, ...]:
        """The payload's required fields."""
        return payload_fields(self.payload_class, required=True)


def payload_fields(cls: type[payloads.Payload], *, required: bool = False) -> tuple[str, ...]:
    return tuple(f.encode_name for f in msgspec.structs.fields(cls) if not required or f.required)


def _types(*items: EventType) -> Mapping[str, EventType]:
    return {item.name: item for item in items}


EVENT_TYPES: Mapping[str, EventType] = _types(
    # admission: accepted specs (payload "object" is contracts.codec.encode_object of the defaulted object)
    EventType("JobSubmitted", "job", ADMISSION, payloads.JobSubmitted, "a Job was accepted and defaulted"),
    EventType("JobUpdated", "job", ADMISSION, payloads.JobUpdated, "a Job's mutable fields changed"),
    EventType(
        "JobDeleted", "job", ADMISSION, payloads.Empty, "a Job was deleted; its pods and PodGroup follow"
    ),
    EventType(
        "JobSecretCreated",
        "job",
        ADMISSION,
        payloads.JobSecretCreated,
        "a Job's generated secret (the ssh plugin's key pair), written with its JobSubmitted, sealed to "
        "the node agents",
        version=2,
    ),
    EventType(
        "PodSubmitted",
        "pod",
        ADMISSION,
        payloads.PodSubmitted,
        "a plain Pod (no Job) was accepted; `podgroup` is the PodGroup it gets of its own, or None",
    ),
    EventType(
        "PodWithdrawn",
        "pod",
        ADMISSION,
        payloads.Empty,
        "a plain Pod was deleted; it is stopped and forgotten",
    ),
    EventType(
        "PodGroupSubmitted",
        "podgroup",
        ADMISSION,
        payloads.PodGroupSubmitted,
        "a user's PodGroup was accepted",
    ),
    EventType(
        "PodGroupWithdrawn",
        "podgroup",
        ADMISSION,
        payloads.Empty,
        "a user's PodGroup was deleted (its pods stay)",
    ),
    EventType(
        "QueueApplied", "queue", ADMISSION, payloads.QueueApplied, "a Queue was created or its spec changed"
    ),
    EventType("QueueDeleted", "queue", ADMISSION, payloads.Empty, "a Queue was deleted"),
    EventType(
        "PriorityClassApplied",
        "priorityclass",
        ADMISSION,
        payloads.PriorityClassApplied,
        "a PriorityClass was applied",
    ),
    EventType(
        "PriorityClassDeleted", "priorityclass", ADMISSION, payloads.Empty, "a PriorityClass was deleted"
    ),
    EventType(
        "HyperNodeApplied", "hypernode", ADMISSION, payloads.HyperNodeApplied, "a HyperNode was applied"
    ),
    EventType("HyperNodeDeleted", "hypernode", ADMISSION, payloads.Empty, "a HyperNode was deleted"),
    EventType(
        "CronJobApplied",
        "cronjob",
        ADMISSION,
        payloads.CronJobApplied,
        "a CronJob was created or its spec changed (the job-controller makes its scheduled jobs)",
    ),
    EventType(
        "CronJobDeleted",
        "cronjob",
        ADMISSION,
        payloads.Empty,
        "a CronJob was deleted; the job-controller has its jobs deleted",
    ),
    EventType(
        "JobTemplateApplied",
        "jobtemplate",
        ADMISSION,
        payloads.JobTemplateApplied,
        "a JobTemplate (a Job spec JobFlows make jobs of) was created or changed",
    ),
    EventType("JobTemplateDeleted", "jobtemplate", ADMISSION, payloads.Empty, "a JobTemplate was deleted"),
    EventType(
        "JobFlowApplied",
        "jobflow",
        ADMISSION,
        payloads.JobFlowApplied,
        "a JobFlow (a DAG of jobs made from JobTemplates) was created or its spec changed",
    ),
    EventType(
        "JobFlowDeleted",
        "jobflow",
        ADMISSION,
        payloads.Empty,
        "a JobFlow was deleted; the job-controller has its jobs deleted unless its jobRetainPolicy is retain",
    ),
    EventType(
        "CommandIssued",
        "command",
        ADMISSION,
        payloads.CommandIssued,
        "a bus.volcano.sh Command (suspend, resume, open, close, ...) was accepted",
    ),
    EventType(
        "ManifestRejected",
        "rejection",
        ADMISSION,
        payloads.ManifestRejected,
        "a manifest published on the intake stream was invalid; every error is listed",
    ),
    # admission: the tenant registry (operator-only API calls; services/admission/tenant_api.py)
    EventType(
        "TenantApplied",
        "tenant",
        ADMISSION,
        payloads.TenantApplied,
        "a tenant was registered or changed: its bus keys, namespaces and queues (docs/security.md)",
    ),
    EventType(
        "TenantDeleted", "tenant", ADMISSION, payloads.Empty, "a tenant was removed; its keys are void"
    ),
    # job-controller: what a Job (or a plain Pod or PodGroup) becomes
    EventType(
        "PodGroupCreated", "podgroup", JOB_CONTROLLER, payloads.PodGroupCreated, "a PodGroup was created"
    ),
    EventType("PodGroupDeleted", "podgroup", JOB_CONTROLLER, payloads.Empty, "a PodGroup was removed"),
    EventType("PodCreated", "pod", JOB_CONTROLLER, payloads.PodCreated, "a pod was created (pending)"),
    EventType(
        "PodDeletionRequested",
        "pod",
        JOB_CONTROLLER,
        payloads.PodDeletionRequested,
        "a pod is to be stopped and removed",
    ),
    EventType(
        "JobStatusChanged",
        "job",
        JOB_CONTROLLER,
        payloads.JobStatusChanged,
        "a Job's lifecycle moved (phase, retries, restarts); pod counts as they stood then",
        version=2,
    ),
    EventType(
        "JobCleanedUp",
        "job",
        JOB_CONTROLLER,
        payloads.JobCleanedUp,
        "a finished Job's TTL ran out; it is deleted",
    ),
    # queue-controller
    EventType(
        "QueueStateChanged",
        "queue",
        QUEUE_CONTROLLER,
        payloads.QueueStateChanged,
        "Open / Closing / Closed / Unknown",
    ),
    # binder: the single committer of placements (plans come from schedulers and the descheduler)
    EventType("PodBound", "pod", BINDER, payloads.PodBound, "a pod was placed on a node"),
    EventType("PodEvicting", "pod", BINDER, payloads.PodEvicting, "a pod is to be evicted from its node"),
    EventType(
        "PodNominated",
        "pod",
        BINDER,
        payloads.PodNominated,
        "room on a node is reserved for a pending pod, in the plan whose evictions free it",
    ),
    EventType(
        "PodGroupStatusChanged",
        "podgroup",
        BINDER,
        payloads.PodGroupStatusChanged,
        "a PodGroup's scheduling phase or conditions changed (computed by its scheduler, committed here)",
    ),
    EventType("PlanRejected", "podgroup", BINDER, payloads.PlanRejected, "a plan did not fit the ledger"),
    EventType("NodeNotReady", "node", BINDER, payloads.NodeNotReady, "a node's heartbeats stopped"),
    EventType("NodeReady", "node", BINDER, payloads.Empty, "a node's heartbeats resumed"),
    EventType("PodLost", "pod", BINDER, payloads.PodLost, "a pod's node was lost (reason NodeLost)"),
    # node agent
    EventType(
        "NodeRegistered",
        "node",
        NODE_AGENT,
        payloads.NodeRegistered,
        "a node joined with its allocatable resources",
    ),
    EventType("PodRunning", "pod", NODE_AGENT, payloads.PodRunning, "a pod's containers started"),
    EventType("PodSucceeded", "pod", NODE_AGENT, payloads.PodSucceeded, "a pod's containers exited 0"),
    EventType("PodFailed", "pod", NODE_AGENT, payloads.PodFailed, "a pod's containers failed"),
    EventType(
        "PodTerminated", "pod", NODE_AGENT, payloads.PodTerminated, "a pod was stopped (evicted or deleted)"
    ),
    # bundles: events of one type about objects of one namespace, one message (contracts/bundles.py)
    EventType(
        "PodsCreated",
        bundles.POD_BUNDLE_KIND,
        JOB_CONTROLLER,
        bundles.EventBundle,
        "PodCreated events together",
    ),
    EventType("PodsBound", bundles.POD_BUNDLE_KIND, BINDER, bundles.EventBundle, "PodBound events together"),
    EventType(
        "PodsRunning", bundles.POD_BUNDLE_KIND, NODE_AGENT, bundles.EventBundle, "PodRunning events together"
    ),
    EventType(
        "PodsSucceeded",
        bundles.POD_BUNDLE_KIND,
        NODE_AGENT,
        bundles.EventBundle,
        "PodSucceeded events together",
    ),
    EventType(
        "PodGroupsCreated",
        bundles.OBJECT_BUNDLE_KIND,
        JOB_CONTROLLER,
        bundles.EventBundle,
        "PodGroupCreated events together",
    ),
    EventType(
        "JobStatusesChanged",
        bundles.OBJECT_BUNDLE_KIND,
        JOB_CONTROLLER,
        bundles.EventBundle,
        "JobStatusChanged events together",
    ),
    EventType(
        "PodGroupStatusesChanged",
        bundles.OBJECT_BUNDLE_KIND,
        BINDER,
        bundles.EventBundle,
        "PodGroupStatusChanged events committed together",
    ),
)

# every bundle type is catalogued on its bundle subject kind, and written by the writer of the events it
# carries: pods' events in pod bundles, the Jobs' and PodGroups' in object bundles
assert all(
    EVENT_TYPES[bundle].writer == EVENT_TYPES[item].writer
    and EVENT_TYPES[bundle].subject_kind == bundles.BUNDLE_SUBJECT_KIND[bundle]
    and (EVENT_TYPES[item].subject_kind == "pod") == (bundle in bundles.POD_BUNDLE_OF)
    for bundle, item in bundles.BUNDLE_OF.items()
)


def writer_of(event_type: str) -> str:
    return EVENT_TYPES[event_type].writer


def event_types_written_by(service: str) -> tuple[str, ...]:
    return tuple(name for name, t in EVENT_TYPES.items() if t.writer == service)
