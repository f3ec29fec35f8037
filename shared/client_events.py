"""Reading events back from the log for the client (shared/client.py): a job's history and one object's
events, each a replay of the events stream under a subject filter, bundles unpacked into their events
(and, for one object, its own picked out of its namespace's bundles)."""

from __future__ import annotations

import nats.js.errors

from contracts.bundles import OBJECT_BUNDLE_KIND, POD_BUNDLE_KIND
from shared.bus.bundles import is_bundle, unpack
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, event_filter, parse_event_subject
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


async def bundled_events(
    bus: Bus, kind: str, namespace: str, name: str, jobs: set[str] | None = None
) -> list[RawEvent]:
    """The events about one pod or PodGroup that came in its namespace's bundles (contracts/bundles.py),
    in log order; a pod's only those its writers correlated with one of `jobs` (None: any job)."""
    bundle_kind = POD_BUNDLE_KIND if kind == "pod" else OBJECT_BUNDLE_KIND
    return [
        e
        for e in await read_events(bus, event_filter(bundle_kind, namespace))
        if e.kind == kind and e.name == name and (jobs is None or e.correlation_id in jobs)
    ]
