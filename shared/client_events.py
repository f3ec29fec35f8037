"""Reading events back from the log for the client (shared/client.py): a job's history and one object's
events, each a replay of the events stream under a subject filter, bundles unpacked into their events."""

from __future__ import annotations

import nats.js.errors

from shared.bus.bundles import is_bundle, unpack
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
            events = unpack(ref, env) if is_bundle(ref.type) else [(ref, env)]
        except ValueError:  # not an event (EnvelopeError is one): the services skip it too
            continue
        for event_ref, event_env in events:
            try:
                # the plain payload is decoded from its bytes when first read: here, where a payload
                # that is not plain data (PayloadError) is skipped like any record that is not an event
                payload = dict(event_env.payload)
            except ValueError:
                continue
            raw.append(
                RawEvent(
                    record.seq,
                    event_env.time,
                    event_env.type,
                    event_ref.kind,
                    event_ref.namespace,
                    event_ref.name,
                    event_env.producer,
                    event_env.id,
                    event_env.correlation_id,
                    event_env.causation_id,
                    payload,
                )
            )
    return raw
