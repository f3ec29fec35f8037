"""Bundles: several events of one type, written by one writer in one publish operation, as one message.

A gang's pods are created, bound, started and finished together, by one writer, in one decision, and a
writer decides many gangs at once: the job-controller creates the pods of every job a batch admitted,
the binder commits up to 64 plans together, a node agent reports every pod that started or ended. Each
of those facts stays an event of its own, with its own id, object, job, cause and payload, but the
writer sends the ones that share a type and a namespace as one *bundle*:

- *pod bundles*, the pods' events, on ``lahar.ev.pods.<producer>.<bundle type>.<namespace>.all``;
- *object bundles*, the events about the Jobs' and PodGroups' own objects (a PodGroup created, a Job's
  or a PodGroup's status changed), on ``lahar.ev.objects.<producer>.<bundle type>.<namespace>.all``.

Every reader unpacks a bundle into its events before anything else sees them (shared/bus/bundles.py),
so cores, `lahar events` and the read models see exactly the events they saw before, in the bundle's
order, and every job's events stay in the order they were decided. What a bundle saves is per message:
the broker stores, indexes and delivers one message instead of one per event, and each reader parses one
message, one set of headers and one envelope (docs/scaling.md, "Bundles").

A bundle is written only by the writer of its event type, and only a type listed here may be bundled.
Older logs hold pod bundles of one job each, named by the job; they read the same way.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from contracts.payloads import Payload

# the subject kinds of bundles, and the name every bundle subject carries (one subject per writer, type and
# namespace)
POD_BUNDLE_KIND = "pods"
OBJECT_BUNDLE_KIND = "objects"
BUNDLE_NAME = "all"
# the bundle type -> the type of the events it carries
POD_BUNDLE_OF: dict[str, str] = {
    "PodsCreated": "PodCreated",
    "PodsBound": "PodBound",
    "PodsRunning": "PodRunning",
    "PodsSucceeded": "PodSucceeded",
}
OBJECT_BUNDLE_OF: dict[str, str] = {
    "PodGroupsCreated": "PodGroupCreated",
    "JobStatusesChanged": "JobStatusChanged",
    "PodGroupStatusesChanged": "PodGroupStatusChanged",
}
BUNDLE_OF: dict[str, str] = {**POD_BUNDLE_OF, **OBJECT_BUNDLE_OF}
# the bundle type -> its subject kind
BUNDLE_SUBJECT_KIND: dict[str, str] = {
    **dict.fromkeys(POD_BUNDLE_OF, POD_BUNDLE_KIND),
    **dict.fromkeys(OBJECT_BUNDLE_OF, OBJECT_BUNDLE_KIND),
}
BUNDLE_FOR: dict[str, str] = {item: bundle for bundle, item in BUNDLE_OF.items()}
# a bundle is cut before it grows past this (a message must stay under the bus's payload limit; a
# PodCreated carries a whole Pod)
MAX_BUNDLE_BYTES = 256 * 1024
MAX_BUNDLE_EVENTS = 512


class BundledEvent(Payload, frozen=True, kw_only=True):
    """One event of a bundle: the object of the bundle's namespace it is about (a pod, a Job or a
    PodGroup), its own id, job and cause, and its payload (the payload of the bundle's item type, checked
    as that type when the bundle is written and read)."""

    name: Annotated[str, msgspec.Meta(min_length=1, description="the object's name")]
    id: Annotated[str, msgspec.Meta(description="the event's own id (what readers and causes see)")]
    payload: Annotated[dict[str, Any], msgspec.Meta(description="the item type's payload")]
    causation_id: str | None = None
    traceparent: str | None = None
    correlation_id: Annotated[
        str | None,
        msgspec.Meta(description="the event's job, when it is not the bundle's (the first event's)"),
    ] = None


class EventBundle(Payload, frozen=True, kw_only=True):
    """The payload of every bundle type: its events, in the order they were decided, and the schema
    version their payloads were written at (older ones are upcast on reading, as a lone event's are)."""

    events: Annotated[tuple[BundledEvent, ...], msgspec.Meta(min_length=1)]
    item_version: Annotated[int, msgspec.Meta(ge=1, description="the events' schema version")] = 1


def bundle_subject_name(namespace: str | None) -> str | None:
    """The name a bundle of events about objects of `namespace` is written under; None for cluster-scoped
    objects, which are never bundled."""
    return None if namespace is None else BUNDLE_NAME
