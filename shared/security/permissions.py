"""Who may publish and subscribe to what on the bus: each role's NATS permissions, derived from the event
catalogue (contracts/events.py), so the broker itself enforces that every fact has one writer.

A service's user may publish exactly the event types it owns, under its own producer token
(``lahar.ev.<kind>.<producer>.<type>.>``); its plans, heartbeats, usage samples, quarantine records and
dead letters under its own name; and use only the JetStream API calls its job needs, on the streams it
reads. Clients (the operator's ``admin`` and, later, tenants) may send API requests, intake messages and
log requests, and read the log; nobody but the writer can publish an event type, a plan, a heartbeat or
a usage sample.

Three rules close the ways around subject permissions, since JetStream answers on whatever subject a
request names and stores what lands on a stream's subjects:

- nobody gets ``$JS.API.DIRECT.GET``: it sends a stored message, raw, to the requester's reply subject,
  which could be another writer's event subject (an intake manifest replayed as a ``PodBound``);
- only ``provisioner`` (the supervisor, at start) may create or change streams: a stream's
  ``republish``, ``sources`` or subject transforms would copy a message onto any subject;
- a work queue's consumers (intake, plans) are created and read only by the service that consumes it:
  its messages are written by others, and a consumer's deliveries go where its creator says.

Every user gets its own inbox prefix (``_INBOX.<public key>``, see shared/security/credentials.py): a
shared ``_INBOX.>`` would let any user read everyone's replies and deliveries.

Clients live in an account of their own (CLIENTS; the services and the streams in LAHAR) that imports
what clients may call as services: an import maps the reply subject, so an answer (a JetStream ack, an
API answer) can only go back to the requester, never onto a subject a client names as its reply (such as
another writer's event subject, which the stream would store). Their JetStream calls go through the
prefix ``lahar.js`` (CLIENTS' own ``$JS.API`` is not LAHAR's), and consumer deliveries to them through
the exported ``_CLIENT_INBOX.>``.

Reads of the event log are granted per stream, not per event type: a service replays the whole stream
(faster than a filtered consumer, shared/runner/service.py), and a consumer with several filters does
not name them in its API subject, so the server cannot check them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contracts.events import (
    ADMISSION,
    BINDER,
    DESCHEDULER,
    EVENT_TYPES,
    JOB_CONTROLLER,
    NODE_AGENT,
    QUEUE_CONTROLLER,
    SCHEDULER,
    event_types_written_by,
)
from shared.bus.heartbeats import HEARTBEAT_FILTER, heartbeat_subject
from shared.bus.subjects import (
    DEADLETTER_STREAM,
    EVENTS_ROOT,
    EVENTS_STREAM,
    INTAKE_ROOT,
    INTAKE_STREAM,
    LOGS_FILTER,
    LOGS_ROOT,
    PLANS_STREAM,
    QUARANTINE_STREAM,
    dead_letter_subject,
    encode_token,
    plan_subject,
    quarantine_filter,
    reconcile_failure_filter,
)
from shared.usage.wire import USAGE_FILTER, usage_subject

# The roles that are not services.
ADMIN = "admin"  # the operator's client identity: every namespace, queue and cluster-scoped kind
TENANT = "tenant"  # a client limited to its namespaces and queues (issued by `lahar tenant add`)
PROVISIONER = "provisioner"  # creates and updates the streams; used by the supervisor only
SERVICE_ROLES = (ADMISSION, JOB_CONTROLLER, QUEUE_CONTROLLER, SCHEDULER, BINDER, NODE_AGENT, DESCHEDULER)
ROLES = (*SERVICE_ROLES, ADMIN, TENANT, PROVISIONER)

# The durable consumers of the work queues (services/admission/intake.py, services/binder/service.py).
INTAKE_CONSUMER = "admission"
PLANS_CONSUMER = "binder"
API_ROOT = "lahar.api"
INBOX_ROOT = "_INBOX"
JS_API = "$JS.API"
SERVICES_ACCOUNT = "LAHAR"  # the services, the provisioner and the streams
CLIENTS_ACCOUNT = "CLIENTS"  # the operator and tenants: what they may call is imported from LAHAR
CLIENT_JS_PREFIX = "lahar.js"  # where a client reaches the JetStream API calls imported from LAHAR
CLIENT_INBOX_ROOT = "_CLIENT_INBOX"  # LAHAR exports it: consumer deliveries to clients
CLIENT_READS = (EVENTS_STREAM, QUARANTINE_STREAM, DEADLETTER_STREAM)  # the streams clients may read
# streams the benchmark creates and removes (services/cli/bench_e2e/rawpub.py) on the provisioner's user
BENCH_STREAM = "LAHAR_BENCH_RAW"
BENCH_ROOT = "lahar.benchraw"
STANDARD_STREAMS = (EVENTS_STREAM, INTAKE_STREAM, PLANS_STREAM, QUARANTINE_STREAM, DEADLETTER_STREAM)


@dataclass(frozen=True, slots=True)
class Identity:
    """One user on the bus: its unique name (a stack process name: `binder-2`, `scheduler-0`, `admin`),
    its role, and for a service the producer token it writes under (its core's name)."""

    user: str
    role: str
    producer: str = ""
    namespaces: tuple[str, ...] = ()  # a tenant's namespaces

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; known: {', '.join(ROLES)}")
        if self.role in SERVICE_ROLES and not self.producer:
            raise ValueError(f"a {self.role} identity needs its producer token")
        if self.role == TENANT and not self.namespaces:
            raise ValueError("a tenant identity needs at least one namespace")


@dataclass(frozen=True, slots=True)
class Permissions:
    """What one user may publish and subscribe to (NATS subjects, wildcards allowed); allow_responses
    lets it answer requests it received on their reply subjects (and nothing else there)."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    allow_responses: bool = False


def account_of(role: str) -> str:
    return CLIENTS_ACCOUNT if role in (ADMIN, TENANT) else SERVICES_ACCOUNT


def inbox_prefix(account: str, public_key: str) -> str:
    """The user's own inbox prefix: replies and consumer deliveries to it come only to it."""
    root = CLIENT_INBOX_ROOT if account == CLIENTS_ACCOUNT else INBOX_ROOT
    return f"{root}.{public_key}"


def js_api_prefix(account: str) -> str | None:
    """The JetStream API prefix a user of `account` calls (None: the default `$JS.API`)."""
    return CLIENT_JS_PREFIX if account == CLIENTS_ACCOUNT else None


def event_publish_subjects(role: str, producer: str) -> tuple[str, ...]:
    """The event subjects a service may publish: each type it owns, under its own producer token."""
    token = encode_token(producer)
    return tuple(
        f"{EVENTS_ROOT}.{encode_token(EVENT_TYPES[name].subject_kind)}.{token}.{encode_token(name)}.>"
        for name in event_types_written_by(role)
    )


def _stream_read_calls(stream: str) -> tuple[str, ...]:
    """The JetStream API calls (after the API prefix) that read a stream: its info and messages by
    sequence or subject (the reply is JSON, never a raw stored message), ordered consumers (created,
    looked at, removed)."""
    return (
        f"STREAM.INFO.{stream}",
        f"STREAM.MSG.GET.{stream}",
        f"CONSUMER.CREATE.{stream}",
        f"CONSUMER.CREATE.{stream}.>",
        f"CONSUMER.INFO.{stream}.>",
        f"CONSUMER.DELETE.{stream}.>",
    )


def stream_reader(stream: str, api: str = JS_API) -> tuple[str, ...]:
    """Reading a stream: its read calls under the API prefix `api`, and its consumers' flow control."""
    return (*(f"{api}.{call}" for call in _stream_read_calls(stream)), f"$JS.FC.{stream}.>")


def client_js_calls() -> tuple[str, ...]:
    """The JetStream API calls (after the prefix) clients may make: LAHAR exports exactly these."""
    reads = (call for stream in CLIENT_READS for call in _stream_read_calls(stream))
    return ("STREAM.NAMES", f"STREAM.INFO.{INTAKE_STREAM}", *reads)


def client_services() -> tuple[str, ...]:
    """The subjects LAHAR exports to clients as services (besides the JetStream calls): the API,
    intake, log requests, and the flow control of the consumers they read with."""
    return (f"{API_ROOT}.>", f"{INTAKE_ROOT}.>", f"{LOGS_ROOT}.>", *(f"$JS.FC.{s}.>" for s in CLIENT_READS))


def work_queue_consumer(stream: str, consumer: str) -> tuple[str, ...]:
    """A durable pull consumer of a work queue: its creation, fetches and acknowledgements."""
    return (
        f"{JS_API}.STREAM.INFO.{stream}",
        f"{JS_API}.CONSUMER.CREATE.{stream}.{consumer}",
        f"{JS_API}.CONSUMER.CREATE.{stream}.{consumer}.>",
        f"{JS_API}.CONSUMER.DURABLE.CREATE.{stream}.{consumer}",
        f"{JS_API}.CONSUMER.INFO.{stream}.{consumer}",
        f"{JS_API}.CONSUMER.MSG.NEXT.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
    )


def _stream_info(*streams: str) -> tuple[str, ...]:
    # a service checks at start that the streams it writes exist as specified (shared/bus/streams.py)
    return tuple(f"{JS_API}.STREAM.INFO.{stream}" for stream in streams)


def _log_writer(role: str, producer: str) -> tuple[str, ...]:
    """What every event-sourced service publishes: its events, its quarantine records (events it could
    not apply, keys whose reconcile failed), and the lookups of a compare-and-set (the stream holding a
    subject, the last message on it)."""
    return (
        *event_publish_subjects(role, producer),
        quarantine_filter(producer),
        reconcile_failure_filter(producer),
        f"{JS_API}.STREAM.NAMES",
        *stream_reader(EVENTS_STREAM),
        *_stream_info(QUARANTINE_STREAM),
    )


def permissions(identity: Identity, public_key: str) -> Permissions:
    """The permissions of one user, whose nkey is public_key (its inbox prefix derives from it)."""
    role, producer = identity.role, identity.producer
    inbox = f"{inbox_prefix(account_of(role), public_key)}.>"
    if role == ADMISSION:
        return Permissions(
            publish=(
                *_log_writer(role, producer),
                *work_queue_consumer(INTAKE_STREAM, INTAKE_CONSUMER),
                dead_letter_subject(INTAKE_STREAM, INTAKE_CONSUMER),
                *_stream_info(DEADLETTER_STREAM),
            ),
            subscribe=(inbox, f"{API_ROOT}.>"),
            allow_responses=True,  # the API's answers
        )
    if role == JOB_CONTROLLER:
        # it asks admission to create and delete the jobs of CronJobs and JobFlows, from inside the
        # services' account: the only such caller admission lets create from an object's encoding
        api = (f"{API_ROOT}.create", f"{API_ROOT}.delete")
        return Permissions(publish=(*_log_writer(role, producer), *api), subscribe=(inbox,))
    if role == QUEUE_CONTROLLER:
        return Permissions(publish=_log_writer(role, producer), subscribe=(inbox,))
    if role == SCHEDULER:
        return Permissions(
            publish=(*_log_writer(role, producer), plan_subject(producer), *_stream_info(PLANS_STREAM)),
            subscribe=(inbox, USAGE_FILTER),  # every agent's usage samples (the usage plugin)
        )
    if role == DESCHEDULER:
        # writes no event: its evictions are plans, committed by the binder
        return Permissions(
            publish=(*_log_writer(role, producer), plan_subject(producer), *_stream_info(PLANS_STREAM)),
            subscribe=(inbox, USAGE_FILTER),  # LoadAware with metrics type Lahar: the agents' samples
        )
    if role == BINDER:
        return Permissions(
            publish=(
                *_log_writer(role, producer),
                *work_queue_consumer(PLANS_STREAM, PLANS_CONSUMER),
                dead_letter_subject(PLANS_STREAM, PLANS_CONSUMER),
                *_stream_info(DEADLETTER_STREAM),
            ),
            subscribe=(inbox, HEARTBEAT_FILTER),
        )
    if role == NODE_AGENT:
        agent = producer.removeprefix(f"{NODE_AGENT}.")
        return Permissions(
            publish=(*_log_writer(role, producer), heartbeat_subject(agent), usage_subject(agent)),
            subscribe=(inbox, LOGS_FILTER),
            allow_responses=True,  # the logs API's answers
        )
    if role == ADMIN:
        # in CLIENTS: every subject here is one of client_services() or client_js_calls() imported
        return Permissions(
            publish=(
                f"{API_ROOT}.>",
                f"{INTAKE_ROOT}.>",
                f"{LOGS_ROOT}.>",
                f"{CLIENT_JS_PREFIX}.STREAM.NAMES",
                f"{CLIENT_JS_PREFIX}.STREAM.INFO.{INTAKE_STREAM}",
                *(p for stream in CLIENT_READS for p in stream_reader(stream, CLIENT_JS_PREFIX)),
            ),
            subscribe=(inbox,),
        )
    if role == TENANT:
        # Its namespaces only where the subject names one (intake, logs); API requests carry theirs in
        # the body, which admission checks against the caller's key (the server's Nats-Request-Info).
        # JetStream does not keep that header on a stored intake message, so the intake subject names the
        # publishing tenant (its last token, intake_tenant_subject) and the server holds the tenant to
        # its own name there. No reads of the log: an ordered consumer does not name its filter in the
        # API subject, so the server cannot keep a tenant to its namespaces there.
        spaces = [encode_token(ns) for ns in identity.namespaces]
        me = encode_token(identity.user)
        return Permissions(
            publish=(
                f"{API_ROOT}.>",
                *(f"{INTAKE_ROOT}.*.{ns}.*.{me}" for ns in spaces),
                *(f"{LOGS_ROOT}.{ns}.*" for ns in spaces),
                f"{CLIENT_JS_PREFIX}.STREAM.INFO.{INTAKE_STREAM}",
            ),
            subscribe=(inbox,),
        )
    # provisioner
    return Permissions(
        publish=(
            f"{JS_API}.INFO",
            f"{JS_API}.STREAM.NAMES",
            *(
                f"{JS_API}.STREAM.{verb}.{stream}"
                for stream in (*STANDARD_STREAMS, BENCH_STREAM)
                for verb in ("INFO", "CREATE", "UPDATE")
            ),
            f"{JS_API}.STREAM.DELETE.{BENCH_STREAM}",
            f"{BENCH_ROOT}.>",
        ),
        subscribe=(inbox,),
    )


def event_writers(identities: Iterable[tuple[Identity, str]]) -> dict[str, set[tuple[str, str]]]:
    """For each catalogued event type, every (user, producer token) under which some user's permissions
    let it publish that type: the catalogue's one writer under its own token, nobody else (what the
    unit tests and docs/security.md check). identities are (identity, public key) pairs."""
    pairs = list(identities)
    tokens = {encode_token(i.producer) for i, _ in pairs if i.producer} | {"intruder"}
    granted: dict[str, set[tuple[str, str]]] = {name: set() for name in EVENT_TYPES}
    for identity, key in pairs:
        publish = permissions(identity, key).publish
        for name, event_type in EVENT_TYPES.items():
            kind = encode_token(event_type.subject_kind)
            for token in tokens:
                probe = f"{EVENTS_ROOT}.{kind}.{token}.{encode_token(name)}.ns.obj"
                if any(subject_matches(pattern, probe) for pattern in publish):
                    granted[name].add((identity.user, token))
    return granted


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS wildcard matching: `*` one token, `>` one or more trailing tokens."""
    want, have = pattern.split("."), subject.split(".")
    for index, token in enumerate(want):
        if token == ">":
            return len(have) > index
        if index >= len(have) or (token != "*" and token != have[index]):
            return False
    return len(want) == len(have)
