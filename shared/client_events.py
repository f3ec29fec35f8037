"""Reading events back from the log for the client (shared/client.py): a job's history and one object's
events, each a replay of the events stream under a subject filter."""

from __future__ import annotations

import nats.js.errors

from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, parse_event_subject
from shared.client_reads import RawEvent


async def read_events(bus: Bus, subject_filter: str) -> list[RawEvent]:
    """Every event under the filter, in log order (none when nothing was ever written)."""
    raw = []
    try:
        await bus.jsm.stream_info(EVENTS_STREAM)
    except nats.js.errors.NotFoundError:
        return []  # nothing was ever written
    async for record in bus.replay(EVENTS_STREAM, subject_filter=subject_filter):
        try:
            env, ref = record.envelope(), parse_event_subject(record.subject)
            # the plain payload is decoded from its bytes when first read: here, where a payload that
            # is not plain data (PayloadError) is skipped like any record that is not an event
            payload = dict(env.payload)
        except ValueError:  # not an event (EnvelopeError is one): the services skip it too
            continue
        raw.append(
            RawEvent(
                record.seq,
                env.time,
                env.type,
                ref.kind,
                ref.namespace,
                ref.name,
                env.producer,
                env.id,
                env.correlation_id,
                env.causation_id,
                payload,
            )
        )
    return raw
