"""Subject and stream names on the bus.

Domain events live on ``lahar.ev.<kind>.<namespace>.<name>`` (``_`` as namespace for cluster-scoped kinds),
one subject per object, so ``Nats-Expected-Last-Subject-Sequence`` is a per-object compare-and-set.
Object names may contain characters NATS forbids in a subject token (``.``, ``*``, ``>``, whitespace), so
every token is escaped reversibly: bytes outside ``[A-Za-z0-9_-]`` become ``%XX`` (their UTF-8 bytes in hex).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EVENTS_STREAM = "LAHAR_EVENTS"
INTAKE_STREAM = "LAHAR_INTAKE"
PLANS_STREAM = "LAHAR_PLANS"

EVENTS_ROOT = "lahar.ev"
INTAKE_ROOT = "lahar.intake"
PLANS_ROOT = "lahar.plan"

CLUSTER_SCOPE = "_"

_SAFE = re.compile(r"[A-Za-z0-9_-]")
_ESCAPED = re.compile(r"%([0-9A-F]{2})")


def encode_token(value: str) -> str:
    """Escape a string into one valid subject token; decode_token() inverts it."""
    if not value:
        raise ValueError("a subject token cannot be empty")
    # "_" alone is reserved for "cluster-scoped", so a literal "_" must not collide with it.
    if value == CLUSTER_SCOPE:
        return "%5F"
    return "".join(ch if _SAFE.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode()) for ch in value)


def decode_token(token: str) -> str:
    if not token:
        raise ValueError("a subject token cannot be empty")
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


def _object_tokens(kind: str, namespace: str | None, name: str) -> str:
    ns = CLUSTER_SCOPE if namespace is None else encode_token(namespace)
    return f"{encode_token(kind)}.{ns}.{encode_token(name)}"


def event_subject(kind: str, namespace: str | None, name: str) -> str:
    """The subject carrying every event of one object."""
    return f"{EVENTS_ROOT}.{_object_tokens(kind, namespace, name)}"


def event_filter(kind: str | None = None, namespace: str | None = None) -> str:
    """A wildcard over the events of a kind (and namespace): ``lahar.ev.job.>`` etc.

    A namespace without a kind selects that namespace across kinds; pass CLUSTER_SCOPE for cluster-scoped.
    """
    kind_tok = "*" if kind is None else encode_token(kind)
    if namespace is None:
        return f"{EVENTS_ROOT}.{kind_tok}.>" if kind is not None else f"{EVENTS_ROOT}.>"
    ns_tok = CLUSTER_SCOPE if namespace == CLUSTER_SCOPE else encode_token(namespace)
    return f"{EVENTS_ROOT}.{kind_tok}.{ns_tok}.*"


def parse_event_subject(subject: str) -> ObjectRef:
    """Invert event_subject(); raises ValueError for any other subject."""
    prefix = EVENTS_ROOT + "."
    tokens = subject[len(prefix) :].split(".") if subject.startswith(prefix) else []
    if len(tokens) != 3:
        raise ValueError(f"not an event subject ({EVENTS_ROOT}.<kind>.<namespace>.<name>): {subject!r}")
    kind, ns, name = tokens
    return ObjectRef(
        kind=decode_token(kind),
        namespace=None if ns == CLUSTER_SCOPE else decode_token(ns),
        name=decode_token(name),
    )


def intake_subject(kind: str, namespace: str | None, name: str) -> str:
    """Where an external producer publishes a manifest for admission, one subject per object."""
    return f"{INTAKE_ROOT}.{_object_tokens(kind, namespace, name)}"


def plan_subject(producer: str) -> str:
    """Where a scheduler replica or the descheduler sends its plans for the binder."""
    return f"{PLANS_ROOT}.{encode_token(producer)}"
