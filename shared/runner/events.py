"""From log records to the core's Event, and the attributes of the span that applies it."""

from __future__ import annotations

from shared.bus.envelope import Envelope
from shared.bus.subjects import ObjectRef
from shared.runner_types import Event
from shared.telemetry.tracing import JOB_ATTRIBUTE, POD_ATTRIBUTE


def to_event(seq: int, ref: ObjectRef, env: Envelope) -> Event:
    return Event(
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
        producer=env.producer,
    )


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
