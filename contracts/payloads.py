"""One frozen, typed payload class per event type: what each event carries, as consumers read it.

Payloads are msgspec Structs: the edge of every service (shared.runner) turns an event's plain payload
into its class in one C-level pass that checks every field's type, and a core reads attributes, never
keys. msgspec measured 5x faster than the hand-written envelope checks it replaced (docs/benchmarks.md,
"Typed events"). Field names are the wire names (snake_case), so the plain form of a payload is exactly
what producers in other languages write (contracts/schema/, contracts/asyncapi.yaml).

An API object inside a payload (`object`) travels in `contracts.codec`'s tagged form, {"kind", "object"}.
The edge checks its kind; the object itself is decoded by the consumers that need it
(`decode_as`), which is also where a malformed object is found. Fields added to a type later get
defaults, so older events of the same version still decode; a change that cannot be expressed so bumps
the type's version and adds an upcaster (contracts/upcasters.py).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import msgspec

from contracts.codec import KINDS, decode_object

T = TypeVar("T")

# An API object in contracts.codec's tagged form: {"kind": "Pod", "object": {...the Pod's fields...}}.
EncodedObject = Annotated[
    dict[str, Any],
    msgspec.Meta(description="An API object as contracts.codec encodes it: {kind, object}"),
]


def _about(text: str) -> msgspec.Meta:
    """A field's description, as the JSON Schemas for other languages show it."""
    return msgspec.Meta(description=text)


NodeName = Annotated[str, msgspec.Meta(min_length=1, description="a node's name")]
PlanId = Annotated[str, msgspec.Meta(description="the id of the plan (scheduler or descheduler) committed")]
EpochSeconds = Annotated[float, msgspec.Meta(ge=0, description="seconds since the epoch")]


class PayloadError(ValueError):
    """A payload that is not what its event type promises; the message names every offending field."""


class Payload(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every payload. Unknown fields are ignored (a newer writer may add some)."""


class ObjectPayload(Payload, frozen=True, kw_only=True, dict=True):
    """A payload that carries one API object of the kind `expected_kind()` names.

    `dict=True` gives each payload a place for its decoded object (not a field: never encoded nor
    compared), so that the cores of one service that read the same event (the job-controller's Jobs and
    workloads) decode its object once."""

    object: EncodedObject

    def __post_init__(self) -> None:
        _check_kind(self.object, self.expected_kind(), "object")

    @classmethod
    def expected_kind(cls) -> str:
        return _OBJECT_KINDS[cls.__name__]

    def decoded(self) -> Any:
        """The object (contracts.objects), decoded by contracts.codec once per payload; it is frozen, as
        every decoded object is, so its readers share it."""
        kept = self.__dict__
        obj = kept.get("_decoded")
        if obj is None:
            obj = kept["_decoded"] = decode_object(self.object)
        return obj


def _check_kind(value: Any, kind: str, field: str) -> None:
    if not isinstance(value, dict) or value.get("kind") != kind or not isinstance(value.get("object"), dict):
        found = value.get("kind") if isinstance(value, dict) else type(value).__name__
        raise ValueError(f"{field}: expected an encoded {kind} ({{kind, object}}), got {found!r}")


def named_node(data: Payload) -> str:
    """The node a pod event names: where it was bound, runs, ran or was lost ("" if it names none)."""
    node = getattr(data, "node", None)
    return node if isinstance(node, str) else ""


def decode_as(encoded: dict[str, Any], cls: type[T]) -> T:
    """An encoded object as `cls`, or a DecodeError naming what is wrong."""
    obj = decode_object(encoded)
    if not isinstance(obj, cls):
        raise TypeError(f"expected a {cls.__name__}, got a {type(obj).__name__}")
    return obj


class Empty(Payload, frozen=True, kw_only=True):
    """Events whose subject says it all (a deletion, a node back to Ready)."""


class Uncatalogued(Payload, frozen=True, kw_only=True):
    """The typed payload of an event type contracts/events.py does not list. No lahar core reads one (a
    service's subject filters deliver catalogued types only); a core that reads every type, like the
    runner's test service, reads such an event's plain `payload`."""


# --- admission -------------------------------------------------------------------------------------


class JobSubmitted(ObjectPayload, frozen=True, kw_only=True):
    pass


class JobUpdated(ObjectPayload, frozen=True, kw_only=True):
    pass


class SealedSecret(msgspec.Struct, frozen=True, kw_only=True):
    """A secret sealed to one X25519 public key (shared/security/sealing.py): an ephemeral X25519 key
    agreement with the recipient, HKDF-SHA256, AES-256-GCM over the secret's identity as associated data.
    Only the holder of the recipient's private key opens it, and only for the object it was sealed for."""

    algorithm: Annotated[str, _about("the construction; X25519-HKDF-SHA256-AES256GCM is the only one")]
    key_id: Annotated[str, _about("fingerprint of the recipient's public key (sha256 of its raw bytes)")]
    ephemeral_key: Annotated[str, _about("the sender's one-time X25519 public key, base64")]
    nonce: Annotated[str, _about("the AES-GCM nonce, base64")]
    ciphertext: Annotated[str, _about("the sealed data with its authentication tag, base64")]


class JobSecretCreated(Payload, frozen=True, kw_only=True):
    """Version 2: the secret's data is `sealed` to the node agents' key; `data` holds it in plain text
    only on an open stack (no key configured) and in version 1 events."""

    name: str
    uid: str
    data: Annotated[
        dict[str, str], _about("file name -> text (the ssh plugin's key pair), when not sealed")
    ] = msgspec.field(default_factory=dict)
    sealed: Annotated[
        SealedSecret | None, _about("the data, a JSON object file name -> text, sealed to the node agents")
    ] = None

    def __post_init__(self) -> None:
        if self.sealed is not None and self.data:
            raise ValueError("data: must be empty when the secret is sealed (the plain data would leak it)")


class PodSubmitted(ObjectPayload, frozen=True, kw_only=True):
    podgroup: EncodedObject | None = None  # the PodGroup of its own the pod gets, if any

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.podgroup is not None:
            _check_kind(self.podgroup, "PodGroup", "podgroup")


class PodGroupSubmitted(ObjectPayload, frozen=True, kw_only=True):
    pass


class QueueApplied(ObjectPayload, frozen=True, kw_only=True):
    pass


class PriorityClassApplied(ObjectPayload, frozen=True, kw_only=True):
    pass


class HyperNodeApplied(ObjectPayload, frozen=True, kw_only=True):
    pass


class CronJobApplied(ObjectPayload, frozen=True, kw_only=True):
    pass


class JobTemplateApplied(ObjectPayload, frozen=True, kw_only=True):
    pass


class JobFlowApplied(ObjectPayload, frozen=True, kw_only=True):
    pass


class CommandIssued(Payload, frozen=True, kw_only=True):
    action: Annotated[str, _about("AbortJob, RestartJob, ResumeJob, ... (bus.volcano.sh actions)")]
    target_kind: Annotated[str, _about("Job | Queue")]
    target: Annotated[str, _about("the target's key: namespace/name for a Job, name for a Queue")]


class RejectedField(Payload, frozen=True, kw_only=True):
    document: str
    path: str
    message: str


class ManifestRejected(Payload, frozen=True, kw_only=True):
    errors: tuple[RejectedField, ...]
    source: str


class TenantApplied(Payload, frozen=True, kw_only=True):
    """A tenant as the operator registered it: who it is on the bus, where it may write."""

    name: Annotated[str, _about("the tenant's name (its intake subjects' last token)")]
    public_keys: Annotated[
        tuple[str, ...],
        _about("the nkey public keys (U...) of its users; a request from one is the tenant's"),
    ]
    namespaces: Annotated[tuple[str, ...], _about("the namespaces it may create, change and delete in")]
    queues: Annotated[tuple[str, ...] | None, _about("the queues it may submit to; null: every queue")] = None


# --- job-controller --------------------------------------------------------------------------------


class PodGroupCreated(ObjectPayload, frozen=True, kw_only=True):
    pass


class PodCreated(ObjectPayload, frozen=True, kw_only=True):
    pass


class PodDeletionRequested(Payload, frozen=True, kw_only=True):
    reason: str
    node: Annotated[
        str | None, _about("the node the pod was bound to when asked, so that its agent stops it")
    ] = None


class RestartTarget(Payload, frozen=True, kw_only=True):
    """A restart the job's lifecycle decided: which pods it kills (task "" = all, index range lo..hi)."""

    action: str
    task: str = ""
    lo: int = -1
    hi: Annotated[int, _about("the last index restarted; -1: no bound")] = -1
    retain: str | None = None


class JobCondition(Payload, frozen=True, kw_only=True):
    status: Annotated[str, _about("the phase entered")]
    last_transition_time: EpochSeconds | None = None


class JobStatusChanged(Payload, frozen=True, kw_only=True):
    """A job's lifecycle as it stood at a transition (version 2: the lifecycle fields are required;
    version 1 payloads without them are upcast with their defaults)."""

    phase: str
    counts: Annotated[dict[str, int], _about("pods by phase (lower-case) at the transition")]
    task_status_count: dict[str, dict[str, int]]
    min_available: int
    retry_count: int
    version: int
    restart: tuple[RestartTarget, ...]
    handled: Annotated[tuple[str, ...], _about("the pending actions this transition ran or cancelled")]
    last_transition_time: EpochSeconds | None
    conditions: tuple[JobCondition, ...]


class JobCleanedUp(Payload, frozen=True, kw_only=True):
    incarnation: int = 0


# --- queue-controller ------------------------------------------------------------------------------


class QueueStateChanged(Payload, frozen=True, kw_only=True):
    state: Annotated[str, _about("Open | Closing | Closed | Unknown")]


# --- binder ----------------------------------------------------------------------------------------


class PodBound(Payload, frozen=True, kw_only=True):
    node: NodeName
    plan: PlanId


class PodEvicting(Payload, frozen=True, kw_only=True):
    node: NodeName
    reason: Annotated[
        str, _about("the decision, then what it says: `preempt: for default/high-0 (priority 100 > 10)`")
    ]
    plan: PlanId


class PodNominated(Payload, frozen=True, kw_only=True):
    """Room on a node is reserved for a pending pod (Kubernetes' nominatedNodeName): committed in the same
    plan as the evictions that free it, held against every other pod until the pod is bound."""

    node: NodeName
    reason: Annotated[
        str, _about("the decision, then what it says: `preempt: evicting default/low-0 on node-1`")
    ]
    plan: PlanId


class PodGroupConditionPayload(Payload, frozen=True, kw_only=True):
    type: Annotated[str, _about("Unschedulable | Scheduled")]
    status: str = "True"
    transition_id: str = ""
    last_transition_time: EpochSeconds | None = None
    reason: str = ""
    message: str = ""


class PodGroupStatusChanged(Payload, frozen=True, kw_only=True):
    """The scheduling status a session computed for a PodGroup. Counts left out (None) keep the group's
    current ones: the first writers sent only the phase and conditions."""

    phase: str
    conditions: tuple[PodGroupConditionPayload, ...]
    running: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    allocated_hypernode: str = ""
    plan: str = ""


class PlanRejected(Payload, frozen=True, kw_only=True):
    reason: str
    checked_seq: Annotated[int, _about("the ledger's log position the plan was checked at")]
    plan: PlanId
    replica: Annotated[str, _about("the replica that sent it")] = ""


class NodeNotReady(Payload, frozen=True, kw_only=True):
    last_heartbeat: EpochSeconds


class PodLost(Payload, frozen=True, kw_only=True):
    node: NodeName
    reason: str


# --- node agent ------------------------------------------------------------------------------------


class NodeRegistered(ObjectPayload, frozen=True, kw_only=True):
    pass


class PodRunning(Payload, frozen=True, kw_only=True):
    node: NodeName
    started_at: EpochSeconds | None = None


class PodSucceeded(Payload, frozen=True, kw_only=True):
    node: NodeName
    exit_code: int = 0
    finished_at: EpochSeconds | None = None


class PodFailed(Payload, frozen=True, kw_only=True):
    node: NodeName
    exit_code: Annotated[int | None, _about("the containers' exit code; null: they never ran")] = None
    reason: str = "Error"
    message: str = ""
    finished_at: EpochSeconds | None = None


class PodTerminated(Payload, frozen=True, kw_only=True):
    node: NodeName
    reason: str = "Terminated"
    finished_at: EpochSeconds | None = None


# the kind each object-carrying payload holds
_OBJECT_KINDS = {
    "JobSubmitted": "Job",
    "JobUpdated": "Job",
    "PodSubmitted": "Pod",
    "PodGroupSubmitted": "PodGroup",
    "QueueApplied": "Queue",
    "PriorityClassApplied": "PriorityClass",
    "HyperNodeApplied": "HyperNode",
    "CronJobApplied": "CronJob",
    "JobTemplateApplied": "JobTemplate",
    "JobFlowApplied": "JobFlow",
    "PodGroupCreated": "PodGroup",
    "PodCreated": "Pod",
    "NodeRegistered": "Node",
}
assert set(_OBJECT_KINDS.values()) <= set(KINDS)
