"""Subject and stream names on the bus.

Domain events live on ``lahar.ev.<kind>.<producer>.<type>.<namespace>.<name>`` (``_`` as namespace for
cluster-scoped kinds): the object an event is about, who wrote it and what it says. So

- a consumer subscribes to exactly the event types it reads (``lahar.ev.pod.*.PodBound.>``), and the
  server, not the consumer, drops the rest;
- one object's history is one wildcard (``lahar.ev.job.*.*.default.train``);
- a writer's compare-and-set covers its own facts about an object: ``Nats-Expected-Last-Subject-Sequence``
  with ``Nats-Expected-Last-Subject-Sequence-Subject`` = ``lahar.ev.job.admission.*.default.train``;
- the broker can allow each service to publish only under its own producer token.

Object names may contain characters NATS forbids in a subject token (``.``, ``*``, ``>``, whitespace), so
every token is escaped reversibly: bytes outside ``[A-Za-z0-9_-]`` become ``%XX`` (their UTF-8 bytes in hex).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

EVENTS_STREAM = "LAHAR_EVENTS"
INTAKE_STREAM = "LAHAR_INTAKE"
PLANS_STREAM = "LAHAR_PLANS"
QUARANTINE_STREAM = "LAHAR_QUARANTINE"
DEADLETTER_STREAM = "LAHAR_DEADLETTER"

EVENTS_ROOT = "lahar.ev"
INTAKE_ROOT = "lahar.intake"
PLANS_ROOT = "lahar.plan"
QUARANTINE_ROOT = "lahar.quarantine"
DEADLETTER_ROOT = "lahar.dead"
LOGS_ROOT = "lahar.logs"
LOGS_FILTER = f"{LOGS_ROOT}.*.*"

CLUSTER_SCOPE = "_"

_SAFE = re.compile(r"[A-Za-z0-9_-]")
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")  # a token that needs no escaping: most names
_ESCAPED = re.compile(r"%([0-9A-F]{2})")
_EVENT_SUBJECT_SHAPE = re.compile(r"lahar\.ev(?:\.[A-Za-z0-9_%-]+){5}")


def encode_token(value: str) -> str:
    """Escape a string into one valid subject token; decode_token() inverts it."""
    if not value:
        raise ValueError("a subject token cannot be empty")
    # "_" alone is reserved for "cluster-scoped", so a literal "_" must not collide with it.
    if value == CLUSTER_SCOPE:
        return "%5F"
    if _PLAIN.fullmatch(value):
        return value
    return "".join(ch if _SAFE.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode()) for ch in value)


@functools.lru_cache(maxsize=4096)  # escaped tokens repeat: producers like node-agent.<agent>, namespaces
def decode_token(token: str) -> str:
    if not token:
        raise ValueError("a subject token cannot be empty")
    if token != CLUSTER_SCOPE and _PLAIN.fullmatch(token):
        return token  # nothing escaped: every event's subject takes this path
    try:
        raw = bytearray()
        pos = 0
        for match in _ESCAPED.finditer(token):
            raw += token[pos : match.start()].encode("ascii")
            raw.append(int(match.group(1), 16))
            pos = match.end()
        raw += token[pos:].encode("ascii")
        decoded = raw.decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not an escaped subject token: {token!r}") from exc
    if encode_token(decoded) != token:
        raise ValueError(f"not an escaped subject token: {token!r}")
    return decoded


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The identity of an object: its kind, namespace (None when cluster-scoped) and name."""

    kind: str
    namespace: str | None
    name: str


@dataclass(frozen=True, slots=True)
class EventSubject:
    """What an event subject says: the object (kind, namespace, name), the producer and the event type."""

    kind: str
    producer: str
    type: str
    namespace: str | None
    name: str

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.namespace, self.name)


def _object_tokens(kind: str, namespace: str | None, name: str) -> str:
    ns = CLUSTER_SCOPE if namespace is None else encode_token(namespace)
    return f"{encode_token(kind)}.{ns}.{encode_token(name)}"


def _namespace_token(namespace: str | None) -> str:
    return CLUSTER_SCOPE if namespace is None else encode_token(namespace)


def event_subject(kind: str, namespace: str | None, name: str, event_type: str, producer: str) -> str:
    """The subject of one event: about (kind, namespace, name), of event_type, written by producer."""
    tokens = (kind, producer, event_type)
    head = ".".join(encode_token(t) for t in tokens)
    return f"{EVENTS_ROOT}.{head}.{_namespace_token(namespace)}.{encode_token(name)}"


def event_filter(
    kind: str | None = None,
    namespace: str | None = None,
    *,
    event_type: str | None = None,
    producer: str | None = None,
    name: str | None = None,
) -> str:
    """A wildcard over events: any of kind, producer, type, namespace (CLUSTER_SCOPE for cluster-scoped
    objects) and name left out matches everything there."""
    if namespace is None:
        ns = "*"
    else:
        ns = CLUSTER_SCOPE if namespace == CLUSTER_SCOPE else encode_token(namespace)
    tokens = [
        "*" if kind is None else encode_token(kind),
        "*" if producer is None else encode_token(producer),
        "*" if event_type is None else encode_token(event_type),
        ns,
        "*" if name is None else encode_token(name),
    ]
    while tokens and tokens[-1] == "*":  # a trailing run of single wildcards is one ">"
        tokens.pop()
    return ".".join([EVENTS_ROOT, *tokens, ">"]) if len(tokens) < 5 else ".".join([EVENTS_ROOT, *tokens])


def guard_subject(kind: str, namespace: str | None, name: str, producer: str) -> str:
    """The events one producer wrote about one object: what its compare-and-set on the object compares."""
    prefix = f"{EVENTS_ROOT}.{encode_token(kind)}.{encode_token(producer)}.*"
    return f"{prefix}.{_namespace_token(namespace)}.{encode_token(name)}"


def parse_event_subject(subject: str) -> EventSubject:
    """Invert event_subject(); raises ValueError for any other subject."""
    if _EVENT_SUBJECT_SHAPE.fullmatch(subject):
        # the usual subject: one pattern for its shape, and only escaped tokens decoded
        tokens = subject[len(EVENTS_ROOT) + 1 :].split(".")
        if CLUSTER_SCOPE not in (tokens[0], tokens[1], tokens[2], tokens[4]):
            kind, producer, event_type, ns, name = (decode_token(t) if "%" in t else t for t in tokens)
            return EventSubject(kind, producer, event_type, None if tokens[3] == CLUSTER_SCOPE else ns, name)
    prefix = EVENTS_ROOT + "."
    tokens = subject[len(prefix) :].split(".") if subject.startswith(prefix) else []
    if len(tokens) != 5:
        raise ValueError(
            f"not an event subject ({EVENTS_ROOT}.<kind>.<producer>.<type>.<namespace>.<name>): {subject!r}"
        )
    kind, producer, event_type, ns, name = tokens
    return EventSubject(
        kind=decode_token(kind),
        producer=decode_token(producer),
        type=decode_token(event_type),
        namespace=None if ns == CLUSTER_SCOPE else decode_token(ns),
        name=decode_token(name),
    )


def intake_subject(kind: str, namespace: str | None, name: str) -> str:
    """Where an external producer publishes a manifest for admission, one subject per object."""
    return f"{INTAKE_ROOT}.{_object_tokens(kind, namespace, name)}"


def tenant_intake_subject(kind: str, namespace: str, name: str, tenant: str) -> str:
    """Where a tenant's producer publishes a manifest: the intake subject with the tenant's name as its
    last token, which the server holds the tenant's user to (shared/security/permissions.py) and admission
    authorizes the manifest by."""
    return f"{intake_subject(kind, namespace, name)}.{encode_token(tenant)}"


def plan_subject(producer: str) -> str:
    """Where a scheduler replica or the descheduler sends its plans for the binder."""
    return f"{PLANS_ROOT}.{encode_token(producer)}"


def quarantine_subject(service: str, seq: int) -> str:
    """Where a service records an event of the log it could not apply: one subject per (service, event
    sequence), so a record is written once however often the event is replayed."""
    return f"{QUARANTINE_ROOT}.{encode_token(service)}.{seq}"


def quarantine_filter(service: str | None = None) -> str:
    """The quarantine records of one service (None: of every service): one token, the event's seq."""
    return f"{QUARANTINE_ROOT}.{'*' if service is None else encode_token(service)}.*"


def reconcile_failure_subject(service: str, key_digest: str) -> str:
    """Where a service records a key whose reconcile raised (beside its quarantined events)."""
    return f"{QUARANTINE_ROOT}.{encode_token(service)}.reconcile.{encode_token(key_digest)}"


def reconcile_failure_filter(service: str | None = None) -> str:
    """The failing-reconcile records of one service (None: of every service)."""
    return f"{QUARANTINE_ROOT}.{'*' if service is None else encode_token(service)}.reconcile.*"


def dead_letter_subject(stream: str, consumer: str) -> str:
    """Where a consumer moves the messages of a stream it could not handle."""
    return f"{DEADLETTER_ROOT}.{encode_token(stream)}.{encode_token(consumer)}"


def logs_subject(namespace: str, pod: str) -> str:
    """Where a pod's logs are asked for: the agent that ran it answers (core NATS request/reply)."""
    return f"{LOGS_ROOT}.{encode_token(namespace)}.{encode_token(pod)}"


def pod_of_logs_subject(subject: str) -> str:
    """The pod key `namespace/name` of a logs subject; raises ValueError for any other subject."""
    parts = subject.split(".")
    if len(parts) != 4 or ".".join(parts[:2]) != LOGS_ROOT:
        raise ValueError(f"not a logs subject ({LOGS_ROOT}.<namespace>.<pod>): {subject!r}")
    return f"{decode_token(parts[2])}/{decode_token(parts[3])}"
