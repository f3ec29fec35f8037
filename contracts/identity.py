"""One rule for every writer and reader: an event's payload is about the object its subject names.

An event lives on lahar.ev.<kind>.<producer>.<type>.<namespace>.<name>, and readers key their state by
the subject's object. A payload that carries an API object (every ObjectPayload: JobSubmitted,
JobUpdated, PodSubmitted, PodGroupSubmitted, QueueApplied, PriorityClassApplied, HyperNodeApplied,
CronJobApplied, JobTemplateApplied, JobFlowApplied, PodGroupCreated, PodCreated, NodeRegistered) names it
again in its metadata; a forged or buggy event
whose two names differ once reached the job-controller's plain-pod fold keyed one way and read the
other, and raised. So:

- the object's metadata.name must be the subject's name, and for a namespaced subject its
  metadata.namespace the subject's namespace (cluster-scoped subjects carry no namespace to compare);
- PodSubmitted's own PodGroup (`podgroup`) must be in the pod's namespace (its name is its own).

Other payloads carry no object identity: node names in PodBound/PodLost/... name another object (the
node), CommandIssued's `target` is the command's target, JobSecretCreated's `name` the secret's.

Writers are refused (shared/bus/jetstream.py), readers set such an event aside before any core sees it
(shared/runner/events.py). The read side runs for every event: a non-object payload costs one isinstance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.events import EVENT_TYPES
from contracts.payloads import ObjectPayload, Payload, PayloadError, PodSubmitted

# the event types whose payload carries an object, for writers holding the plain payload
OBJECT_EVENT_TYPES: frozenset[str] = frozenset(
    name for name, event_type in EVENT_TYPES.items() if issubclass(event_type.payload_class, ObjectPayload)
)


class WrongObject(PayloadError):
    """An event whose payload is about another object than its subject names."""


def identity_problem(
    event_type: str, payload: Payload | Mapping[str, Any], namespace: str | None, name: str
) -> str | None:
    """Why the payload is about another object than (namespace, name), the subject's; None when it is
    not (or carries no object). `payload` is typed (a reader's) or plain (a writer's)."""
    # concrete classes first: an isinstance against the Mapping ABC costs more than the whole check
    if isinstance(payload, ObjectPayload):
        encoded: Any = payload.object
        podgroup: Any = payload.podgroup if type(payload) is PodSubmitted else None
    elif isinstance(payload, Payload) or event_type not in OBJECT_EVENT_TYPES:
        return None
    elif isinstance(payload, Mapping):
        encoded, podgroup = payload.get("object"), payload.get("podgroup")
    else:
        return None
    found_ns, found_name = _meta(encoded)
    if found_name != name or (namespace is not None and found_ns != namespace):
        where = name if namespace is None else f"{namespace}/{name}"
        found = found_name if namespace is None else f"{found_ns}/{found_name}"
        return f"{event_type}: its object is {found!r}, its subject names {where!r}"
    if podgroup is not None and namespace is not None and _meta(podgroup)[0] != namespace:
        return f"{event_type}: its podgroup is in namespace {_meta(podgroup)[0]!r}, the pod in {namespace!r}"
    return None


def _meta(encoded: Any) -> tuple[Any, Any]:
    """(namespace, name) of an encoded object ({kind, object: {meta: ...}}), None where it has none."""
    # plain data decoded from MessagePack (or written by contracts.codec): dicts, not other mappings
    obj = encoded.get("object") if type(encoded) is dict else None
    meta = obj.get("meta") if type(obj) is dict else None
    if type(meta) is not dict:
        return None, None
    # an encoded object always has both (contracts.codec writes every field); the decoder's default
    # namespace is "default"
    return meta.get("namespace", "default"), meta.get("name")
