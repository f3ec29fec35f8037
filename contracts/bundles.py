"""Bundles: several events of one type, written by one writer in one publish operation, as one message.

A gang's pods are created, bound, started and finished together, by one writer, in one decision. Each of
those facts stays an event of its own, with its own id, its pod, its cause and its payload, but the writer
may send the ones that share a type, a namespace and a job as one *pod bundle* on the job's bundle
subject, ``lahar.ev.pods.<producer>.<bundle type>.<namespace>.<job>``.

Status changes are one per object (a Job's phase, a PodGroup's phase and conditions), but they too are
decided many at a time: the binder commits the statuses of up to 64 plans together, the job-controller
moves every job a batch touched. Those of one type in one namespace travel as a *status bundle* on
``lahar.ev.statuses.<producer>.<bundle type>.<namespace>.all``, each event naming its own object and job.

Every reader unpacks a bundle into its events before anything else sees them (shared/bus/bundles.py), so
cores, `lahar events` and the read models see exactly the events they saw before, in the bundle's order.
What a bundle saves is per message: the broker stores, indexes and delivers one message instead of one
per event, and each reader parses one message, one set of headers and one envelope (docs/scaling.md,
"Bundles").

A bundle is written only by the writer of its event type, and only a type listed here may be bundled.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from contracts.payloads import Payload

# the subject kind of a pod bundle: its name is the job (the correlation) its pods belong to
BUNDLE_KIND = "pods"
# the subject kind of a status bundle: one subject per writer, type and namespace, named STATUS_BUNDLE_NAME
STATUS_BUNDLE_KIND = "statuses"
STATUS_BUNDLE_NAME = "all"
# the bundle type -> the type of the events it carries
POD_BUNDLE_OF: dict[str, str] = {
    "PodsCreated": "PodCreated",
    "PodsBound": "PodBound",
    "PodsRunning": "PodRunning",
    "PodsSucceeded": "PodSucceeded",
}
STATUS_BUNDLE_OF: dict[str, str] = {
    "JobStatusesChanged": "JobStatusChanged",
    "PodGroupStatusesChanged": "PodGroupStatusChanged",
}
BUNDLE_OF: dict[str, str] = {**POD_BUNDLE_OF, **STATUS_BUNDLE_OF}
# the bundle type -> its subject kind
BUNDLE_SUBJECT_KIND: dict[str, str] = {
    **dict.fromkeys(POD_BUNDLE_OF, BUNDLE_KIND),
    **dict.fromkeys(STATUS_BUNDLE_OF, STATUS_BUNDLE_KIND),
}
BUNDLE_FOR: dict[str, str] = {item: bundle for bundle, item in BUNDLE_OF.items()}
# A pod's bundles are named by the job its writer correlates it with: its Volcano Job, else its PodGroup,
# else itself; a reader looking for one pod's events looks under these annotations' values.
JOB_NAME_ANNOTATION = "volcano.sh/job-name"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
# a bundle is cut before it grows past this (a message must stay under the bus's payload limit; a
# PodCreated carries a whole Pod)
MAX_BUNDLE_BYTES = 256 * 1024
MAX_BUNDLE_EVENTS = 512


class BundledEvent(Payload, frozen=True, kw_only=True):
    """One event of a bundle: the object it is about (a pod, or in a status bundle a Job or PodGroup of
    the bundle's namespace), its own id and cause, and its payload (the payload of the bundle's item
    type, checked as that type when the bundle is written and read)."""

    name: Annotated[str, msgspec.Meta(min_length=1, description="the object's name")]
    id: Annotated[str, msgspec.Meta(description="the event's own id (what readers and causes see)")]
    payload: Annotated[dict[str, Any], msgspec.Meta(description="the item type's payload")]
    causation_id: str | None = None
    traceparent: str | None = None
    correlation_id: Annotated[
        str | None,
        msgspec.Meta(description="the event's job, when it is not the bundle's (a status bundle's)"),
    ] = None


class EventBundle(Payload, frozen=True, kw_only=True):
    """The payload of every bundle type: its events, in the order they were decided, and the schema
    version their payloads were written at (older ones are upcast on reading, as a lone event's are)."""

    events: Annotated[tuple[BundledEvent, ...], msgspec.Meta(min_length=1)]
    item_version: Annotated[int, msgspec.Meta(ge=1, description="the events' schema version")] = 1


def bundle_subject_name(bundle_type: str, correlation_id: str, namespace: str | None) -> str | None:
    """The name a bundle of `bundle_type` holding an event of the job `correlation_id` (`namespace/name`)
    is written under, or None when that event cannot be bundled: a pod bundle's is its job's name, when
    the correlation is a job of the pod's namespace; a status bundle's is STATUS_BUNDLE_NAME in any
    namespace. Cluster-scoped objects are never bundled."""
    if namespace is None:
        return None
    if bundle_type in STATUS_BUNDLE_OF:
        return STATUS_BUNDLE_NAME
    prefix, slash, name = correlation_id.partition("/")
    if not slash or prefix != namespace or not name:
        return None
    return name
