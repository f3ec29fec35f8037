"""The messages on the bus besides event payloads, as typed descriptions for producers in other languages.

Events have their payload classes (contracts/payloads.py); the envelope around them, plans, heartbeats,
the admission API's requests and replies, the logs API and the NATS headers each message carries are
written and read by codecs of their own (shared/bus/envelope.py, contracts/plans.py,
shared/bus/heartbeats.py, services/admission/api.py, services/node_agent/logs_api.py). These Structs say
what those codecs write and accept, so that contracts/schema_gen.py derives their JSON Schemas from types
as it does for events; tests/unit/contracts/test_schemas_messages.py checks every codec's real output
against the checked-in schemas, so the two cannot drift apart unnoticed. No service decodes with them,
except the poison-message records (QuarantineRecord, ReconcileFailure, DeadLetter): only lahar writes
and reads those, so shared/bus/poison.py encodes and decodes them with these very classes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from contracts.payloads import EncodedObject, PodGroupConditionPayload, RejectedField
from contracts.usage import UsageReport

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Count = Annotated[int, msgspec.Meta(ge=0)]
Uuid = Annotated[
    str,
    msgspec.Meta(
        pattern="^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        description="a UUID in its canonical form",
    ),
]
TraceParent = Annotated[
    str,
    msgspec.Meta(
        pattern="^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
        description="W3C trace context: the span this message belongs to",
    ),
]
TraceState = Annotated[str, msgspec.Meta(description="W3C trace context: vendor trace state")]
MAX_NODES_PER_HEARTBEAT = 2000  # shared.bus.heartbeats.MAX_NODES_PER_HEARTBEAT (a test keeps them equal)


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the descriptions: unknown fields are ignored, as the codecs ignore them."""


# --- the event envelope (LAHAR_EVENTS) -----------------------------------------------------------------


class Envelope(Message, frozen=True, kw_only=True):
    """Every event on LAHAR_EVENTS: this map, as MessagePack. `payload` is the event type's payload
    (schema/events/<type>.json) at `schema_version`; a producer writes its type's current version, and
    readers upcast older versions (contracts/upcasters.py) and set aside newer ones."""

    type: Annotated[NonEmpty, msgspec.Meta(description="the event type (contracts/events.py)")]
    schema_version: Annotated[
        int, msgspec.Meta(ge=1, description="the version of the payload's schema it was written at")
    ]
    id: Annotated[Uuid, msgspec.Meta(description="the event's id, also its Nats-Msg-Id header")]
    time: Annotated[float, msgspec.Meta(ge=0, description="epoch seconds when it was written")]
    producer: Annotated[NonEmpty, msgspec.Meta(description="the writer: a service, or node-agent.<agent>")]
    correlation_id: Annotated[
        NonEmpty, msgspec.Meta(description="what the event belongs to: the job's namespace/name, usually")
    ]
    payload: dict[str, Any]
    causation_id: Annotated[str, msgspec.Meta(description="the event or request that caused it")] | None = (
        None
    )
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None


class EventHeaders(Message, frozen=True, kw_only=True):
    """The NATS headers of an event's publish; only Nats-Msg-Id is always there."""

    msg_id: Uuid = msgspec.field(name="Nats-Msg-Id")
    expected_last_subject_sequence: (
        Annotated[
            str,
            msgspec.Meta(
                pattern="^[0-9]+$",
                description="publish only if the writer's last event about the object is at this sequence",
            ),
        ]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Nats-Expected-Last-Subject-Sequence")
    expected_last_subject_sequence_subject: (
        Annotated[
            str,
            msgspec.Meta(
                description="what that sequence counts: the writer's own events about the object, "
                "lahar.ev.<kind>.<producer>.*.<namespace>.<name>"
            ),
        ]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Nats-Expected-Last-Subject-Sequence-Subject")
    batch_id: (
        Annotated[str, msgspec.Meta(description="an atomic batch's id: its events are stored all or none")]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Nats-Batch-Id")
    batch_sequence: (
        Annotated[str, msgspec.Meta(pattern="^[1-9][0-9]*$", description="the event's place in its batch")]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Nats-Batch-Sequence")
    batch_commit: Literal["1"] | UnsetType = msgspec.field(default=UNSET, name="Nats-Batch-Commit")
    traceparent: TraceParent | UnsetType = UNSET
    tracestate: TraceState | UnsetType = UNSET


# --- plans (LAHAR_PLANS) -------------------------------------------------------------------------------


class PlanBind(Message, frozen=True, kw_only=True):
    pod: Annotated[NonEmpty, msgspec.Meta(description="the pod's namespace/name")]
    job: Annotated[NonEmpty, msgspec.Meta(description="its PodGroup's namespace/name")]
    node: NonEmpty


class PlanEviction(Message, frozen=True, kw_only=True):
    pod: NonEmpty
    job: NonEmpty
    node: NonEmpty
    reason: Annotated[
        NonEmpty, msgspec.Meta(description="the action that decided it (preempt, reclaim, ...), then why")
    ]


class PlanReservation(Message, frozen=True, kw_only=True):
    pod: Annotated[NonEmpty, msgspec.Meta(description="the pending pod's namespace/name")]
    job: NonEmpty
    node: Annotated[NonEmpty, msgspec.Meta(description="the node whose room is held for it")]
    reason: Annotated[str, msgspec.Meta(description="the decision and its victims, for the log")] = ""


class PlanPodGroupStatus(Message, frozen=True, kw_only=True):
    phase: NonEmpty
    conditions: tuple[PodGroupConditionPayload, ...] = ()
    running: Count = 0
    succeeded: Count = 0
    failed: Count = 0
    allocated_hypernode: str = ""


class Plan(Message, frozen=True, kw_only=True):
    """What a scheduler replica (or the descheduler) asks the binder to commit, as MessagePack: a gang's
    binds land together or not at all, and so do a preemption's evictions and the reservations (room held
    for pending pods on the nodes the evictions free). A plan holds at least one bind, eviction,
    reservation or PodGroup status."""

    plan_id: NonEmpty
    replica: Annotated[NonEmpty, msgspec.Meta(description="the replica that sent it")]
    seq: Annotated[Count, msgspec.Meta(description="the log sequence the plan was decided at")]
    binds: tuple[PlanBind, ...] = ()
    evictions: tuple[PlanEviction, ...] = ()
    podgroups: dict[NonEmpty, PlanPodGroupStatus] = {}
    reservations: tuple[PlanReservation, ...] = ()


class PlanHeaders(Message, frozen=True, kw_only=True):
    msg_id: Annotated[str, msgspec.Meta(description="the plan id: a retried send is stored once")] = (
        msgspec.field(name="Nats-Msg-Id")
    )
    published_at: (
        Annotated[str, msgspec.Meta(description="epoch seconds when the replica sent it (bind latency)")]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Lahar-Plan-Published-At")
    traceparent: TraceParent | UnsetType = UNSET
    tracestate: TraceState | UnsetType = UNSET


# --- heartbeats (core NATS) ----------------------------------------------------------------------------


class Heartbeat(Message, frozen=True, kw_only=True):
    """JSON: every node named is alive. The binder times it by its own clock on receipt."""

    agent: Annotated[NonEmpty, msgspec.Meta(description="the node agent's id")]
    time: Annotated[float, msgspec.Meta(description="epoch seconds at the sender (informative)")]
    nodes: Annotated[tuple[NonEmpty, ...], msgspec.Meta(max_length=MAX_NODES_PER_HEARTBEAT)]


# --- intake (LAHAR_INTAKE) and the admission API (core NATS request/reply) -----------------------------


class IntakeHeaders(Message, frozen=True, kw_only=True):
    msg_id: (
        Annotated[str, msgspec.Meta(description="a stable id per manifest: a retried publish is stored once")]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Nats-Msg-Id")
    validate: (
        Annotated[
            str,
            msgspec.Meta(
                description=(
                    "strict (the default), warn or ignore (also true, false; kubectl's --validate): a field "
                    "its kind's API does not know is an error, a warning (logged) or passed over"
                )
            ),
        ]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Lahar-Validate")
    traceparent: TraceParent | UnsetType = UNSET
    tracestate: TraceState | UnsetType = UNSET


class ApiHeaders(Message, frozen=True, kw_only=True):
    dry_run: (
        Annotated[str, msgspec.Meta(description="true, yes or 1: decide without writing")] | UnsetType
    ) = msgspec.field(default=UNSET, name="Lahar-Dry-Run")
    request_id: (
        Annotated[
            str, msgspec.Meta(description="makes a retried request idempotent (event ids derive from it)")
        ]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Lahar-Request-Id")
    source: (
        Annotated[str, msgspec.Meta(description="names the manifest in errors (default: request)")]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Lahar-Source")
    validate: (
        Annotated[
            str,
            msgspec.Meta(
                description=(
                    "strict (the default), warn or ignore (also true, false; kubectl's --validate): a field "
                    "its kind's API does not know is an error, a warning (in the reply) or passed over"
                )
            ),
        ]
        | UnsetType
    ) = msgspec.field(default=UNSET, name="Lahar-Validate")
    traceparent: TraceParent | UnsetType = UNSET
    tracestate: TraceState | UnsetType = UNSET


class CreateRequest(Message, frozen=True, kw_only=True):
    """lahar.api.create, JSON: the controllers' (and the operator's) create of one object."""

    object: Annotated[
        EncodedObject,
        msgspec.Meta(description="the object to create, in contracts.codec's tagged encoding {kind, object}"),
    ]


class DeleteRequest(Message, frozen=True, kw_only=True):
    """lahar.api.delete, JSON."""

    kind: Annotated[NonEmpty, msgspec.Meta(description="an API kind, any case: job, queue, ...")]
    name: NonEmpty
    namespace: Annotated[str, msgspec.Meta(description="ignored for cluster-scoped kinds")] = "default"


class CommandRequest(Message, frozen=True, kw_only=True):
    """lahar.api.command, JSON."""

    action: Annotated[
        NonEmpty,
        msgspec.Meta(
            description=(
                "suspend, abort, resume, restart, terminate, complete (a Job), open, close (a Queue), a "
                "Volcano action name (AbortJob, ...), or update (a Queue's weight)"
            )
        ),
    ]
    name: NonEmpty
    namespace: str = "default"
    target_kind: Annotated[str, msgspec.Meta(description="Job or Queue; implied by most actions")] = ""
    weight: Annotated[int, msgspec.Meta(gt=0, description="the new weight, for update")] | None = None


class TenantApplyRequest(Message, frozen=True, kw_only=True):
    """lahar.api.tenant.apply, JSON: register a tenant or replace what it is (the operator's only)."""

    name: Annotated[NonEmpty, msgspec.Meta(description="a DNS label: the last token of its intake subjects")]
    public_keys: Annotated[
        tuple[str, ...],
        msgspec.Meta(description="the nkey public keys (U...) of its users; replaces the old"),
    ]
    namespaces: Annotated[tuple[str, ...], msgspec.Meta(description="where it may write (DNS labels)")]
    queues: Annotated[
        tuple[str, ...] | None, msgspec.Meta(description="the queues it may submit to; null: every queue")
    ] = None


class TenantDeleteRequest(Message, frozen=True, kw_only=True):
    """lahar.api.tenant.delete, JSON: remove a tenant (the operator's only)."""

    name: NonEmpty


class TenantListRequest(Message, frozen=True, kw_only=True):
    """lahar.api.tenant.list, JSON (an empty object): the tenants, in the reply's `tenants`."""


class ObjectOutcome(Message, frozen=True, kw_only=True):
    kind: str
    namespace: str
    name: str
    action: Annotated[str, msgspec.Meta(description="created, configured, unchanged, deleted or issued")]


class ApiReply(Message, frozen=True, kw_only=True):
    """The JSON reply to every lahar.api.* request. A refused request wrote nothing."""

    accepted: bool
    code: Annotated[
        Literal["ok", "invalid", "forbidden", "conflict", "unavailable", "error"],
        msgspec.Meta(description="forbidden: the caller (as the server identified it) may not do this"),
    ]
    dry_run: bool
    objects: tuple[ObjectOutcome, ...]
    errors: tuple[RejectedField, ...]
    warnings: Annotated[
        tuple[RejectedField, ...],
        msgspec.Meta(description="apply with Lahar-Validate: warn: each field its kind's API does not know"),
    ] = ()
    seq: Annotated[Count, msgspec.Meta(description="the log sequence of the last event written, 0: none")]
    tenants: Annotated[
        tuple[TenantApplyRequest, ...], msgspec.Meta(description="lahar.api.tenant.list's answer")
    ] = ()


# --- the logs API (core NATS request/reply, answered by the node agent that ran the pod) ---------------


class LogsRequest(Message, frozen=True, kw_only=True):
    container: Annotated[str, msgspec.Meta(description="default: the pod's first container")] = ""
    offset: Annotated[Count, msgspec.Meta(description="bytes already read")] = 0


class LogsChunk(Message, frozen=True, kw_only=True):
    data: Annotated[str, msgspec.Meta(description="the log from offset, UTF-8, at most 256 KiB")]
    offset: Annotated[Count, msgspec.Meta(description="the offset to ask for next")]
    done: Annotated[bool, msgspec.Meta(description="the pod has finished (decided before reading)")]


class LogsError(Message, frozen=True, kw_only=True):
    error: str


# --- poison messages: quarantined events (LAHAR_QUARANTINE) and dead letters (LAHAR_DEADLETTER) -------


QuarantineReason = Literal["not_an_event", "invalid_payload", "wrong_object", "apply_error", "touched_error"]
DeadLetterReason = Literal["undecodable", "handling_failed", "retries_exhausted", "forbidden"]


class QuarantineRecord(Message, frozen=True, kw_only=True):
    """JSON on lahar.quarantine.<service>.<seq>: an event of the log a service could not apply. Written
    once per (service, seq); the event stays in the log, and every replay sets it aside again."""

    service: Annotated[NonEmpty, msgspec.Meta(description="the service that set the event aside")]
    seq: Annotated[int, msgspec.Meta(ge=1, description="the event's sequence in LAHAR_EVENTS")]
    subject: Annotated[str, msgspec.Meta(description="the event's subject")]
    type: Annotated[str, msgspec.Meta(description="the event type, when the subject names one")] = ""
    id: Annotated[str, msgspec.Meta(description="the event's id, when its envelope decodes")] = ""
    reason: Annotated[
        QuarantineReason,
        msgspec.Meta(
            description=(
                "not_an_event: no envelope or no event subject; invalid_payload: a payload its type does "
                "not allow; wrong_object: a payload about another object than its subject names "
                "(contracts/identity.py); apply_error: the service's core raised applying it (skipped); "
                "touched_error: the core raised naming the keys it touched (applied, everything reconciled)"
            )
        ),
    ]
    error_type: Annotated[str, msgspec.Meta(description="the exception's class")]
    error: Annotated[str, msgspec.Meta(description="what was wrong, as the exception said it")]
    time: Annotated[float, msgspec.Meta(description="epoch seconds when it was first set aside")]


class ReconcileFailure(Message, frozen=True, kw_only=True):
    """JSON on lahar.quarantine.<service>.reconcile.<key digest>: a key (a job, a node, a queue) whose
    reconcile raised in a service's core. The key's outputs are not written until a retry (with backoff)
    succeeds; the other keys go on. Written when a key starts failing, not at every retry."""

    service: Annotated[NonEmpty, msgspec.Meta(description="the service whose core raised")]
    key: Annotated[str, msgspec.Meta(description="the key as the core names it (its repr)")]
    seq: Annotated[Count, msgspec.Meta(description="the last event of the log applied when it failed")]
    error_type: Annotated[str, msgspec.Meta(description="the exception's class")]
    error: Annotated[str, msgspec.Meta(description="what was wrong, as the exception said it")]
    time: Annotated[float, msgspec.Meta(description="epoch seconds when the key started failing")]


class DeadLetter(Message, frozen=True, kw_only=True):
    """JSON on lahar.dead.<stream>.<consumer>: a message a consumer could not handle, moved off its work
    queue with everything needed to look at it or publish it again."""

    stream: Annotated[NonEmpty, msgspec.Meta(description="where the message was: LAHAR_INTAKE, LAHAR_PLANS")]
    consumer: Annotated[NonEmpty, msgspec.Meta(description="the durable consumer that gave up on it")]
    seq: Annotated[int, msgspec.Meta(ge=1, description="its sequence in that stream")]
    subject: Annotated[str, msgspec.Meta(description="the subject it was published on")]
    headers: dict[str, str]
    data: Annotated[bytes, msgspec.Meta(description="the message as published, base64")]
    deliveries: Annotated[Count, msgspec.Meta(description="how often it was delivered")]
    reason: Annotated[
        DeadLetterReason,
        msgspec.Meta(
            description=(
                "undecodable: it is not the message its stream carries; handling_failed: handling it "
                "raised on every try; retries_exhausted: a transient failure outlasted every redelivery; "
                "forbidden: its publisher may not make that request (an intake manifest outside its "
                "tenant's namespaces or queues; nothing was written to the log)"
            )
        ),
    ]
    error_type: Annotated[str, msgspec.Meta(description="the last exception's class")]
    error: Annotated[str, msgspec.Meta(description="the last failure, as the exception said it")]
    answer: Annotated[
        str, msgspec.Meta(description="what the sender was told: ManifestRejected, PlanRejected or nothing")
    ] = ""
    time: Annotated[float, msgspec.Meta(description="epoch seconds when it was moved")]


# a schema name -> its type, or the types one of which it is (usage reports: contracts/usage.py, which
# readers decode with)
MESSAGES: dict[str, type[msgspec.Struct] | tuple[type[msgspec.Struct], ...]] = {
    "Envelope": Envelope,
    "EventHeaders": EventHeaders,
    "Plan": Plan,
    "PlanHeaders": PlanHeaders,
    "Heartbeat": Heartbeat,
    "UsageReport": UsageReport,
    "IntakeHeaders": IntakeHeaders,
    "ApiHeaders": ApiHeaders,
    "CreateRequest": CreateRequest,
    "DeleteRequest": DeleteRequest,
    "CommandRequest": CommandRequest,
    "TenantApplyRequest": TenantApplyRequest,
    "TenantDeleteRequest": TenantDeleteRequest,
    "TenantListRequest": TenantListRequest,
    "ApiReply": ApiReply,
    "LogsRequest": LogsRequest,
    "LogsReply": (LogsChunk, LogsError),
    "QuarantineRecord": QuarantineRecord,
    "ReconcileFailure": ReconcileFailure,
    "DeadLetter": DeadLetter,
}
