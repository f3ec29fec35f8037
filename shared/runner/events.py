"""From log records to the core's Event, and the attributes of the span that applies it."""

from __future__ import annotations

from collections.abc import Collection

from contracts.bundles import BUNDLE_FOR
from contracts.events import EVENT_TYPES
from contracts.identity import OBJECT_EVENT_TYPES, WrongObject, identity_problem
from contracts.typed_events import RawPayload
from shared.bus.bundles import BUNDLE_OF, BundleItem, BundleRead, read_bundle
from shared.bus.envelope import Envelope
from shared.bus.subjects import EventSubject, event_filter
from shared.runner_types import Event
from shared.telemetry.tracing import JOB_ATTRIBUTE, POD_ATTRIBUTE


def to_event(seq: int, ref: EventSubject, env: Envelope) -> Event:
    """The core's view of a log record. The producer is the subject's, which the broker can restrict per
    service (the envelope's field is whatever the writer put there). Raises PayloadError for a payload
    its type does not allow, WrongObject for one about another object than the subject's."""
    return _checked(
        Event(
            seq=seq,
            type=env.type,
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            payload=env.payload,
            id=env.id,
            time=env.time,
            correlation_id=env.correlation_id,
            causation_id=env.causation_id,
            traceparent=env.traceparent,
            producer=ref.producer,
            version=env.schema_version,
        )
    )


def bundled_event(seq: int, bundle: BundleRead, item: BundleItem) -> Event:
    """`to_event` of one of a bundle's events (`bundle.subject(item)`, `bundle.envelope(item)`), made
    straight from the fields the bundle checked (shared/bus/bundles.py, `read_bundle`)."""
    env = bundle.env
    return _checked(
        Event(
            seq=seq,
            type=bundle.item_type,
            kind=bundle.item_kind,
            namespace=bundle.ref.namespace,
            name=item.name,
            payload=RawPayload(item.payload),
            id=item.id,
            time=env.time,
            correlation_id=item.correlation_id or env.correlation_id,
            causation_id=item.causation_id if item.causation_id is not None else env.causation_id,
            traceparent=item.traceparent if item.traceparent is not None else env.traceparent,
            producer=bundle.ref.producer,
            version=bundle.version,
        )
    )


def record_to_events(seq: int, ref: EventSubject, env: Envelope) -> list[Event]:
    """The events one record holds, made as the service loop makes them (itself, or its bundle's
    events); raises on the first that cannot be read. For readers that fold a log as the loop does
    without setting anything aside (the benchmarks, the tests)."""
    if ref.type not in BUNDLE_OF:
        return [to_event(seq, ref, env)]
    bundle = read_bundle(ref, env)
    return [bundled_event(seq, bundle, item) for item in bundle.events]


def _checked(event: Event) -> Event:
    if event.type in OBJECT_EVENT_TYPES:  # the others carry no object: one set lookup per event
        problem = identity_problem(event.type, event.data, event.namespace, event.name)
        if problem is not None:
            raise WrongObject(problem)
    return event


def span_attributes(event: Event) -> dict[str, str | int]:
    attributes: dict[str, str | int] = {
        "messaging.system": "nats",
        "lahar.event.type": event.type,
        "lahar.event.id": event.id,
        "lahar.event.seq": event.seq,
        JOB_ATTRIBUTE: event.correlation_id,
    }
    if event.kind == "pod":
        attributes[POD_ATTRIBUTE] = f"{event.namespace or ''}/{event.name}"
    return attributes


def read_filters(reads: Collection[str] | None) -> list[str] | None:
    """The subject filters that deliver exactly the catalogued event types `reads` (None: everything)."""
    if reads is None:
        return None
    unknown = sorted(set(reads) - EVENT_TYPES.keys())
    if unknown:
        raise ValueError(f"not catalogued event types (contracts/events.py): {', '.join(unknown)}")
    # a type that may come in bundles comes on the bundle's subject too (contracts/bundles.py)
    wanted = set(reads) | {BUNDLE_FOR[name] for name in reads if name in BUNDLE_FOR}
    return [event_filter(EVENT_TYPES[name].subject_kind, event_type=name) for name in sorted(wanted)]
