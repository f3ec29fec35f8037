"""What the benchmarks watch on the log while they run: the bench jobs' binds and phase changes."""

from __future__ import annotations

from collections.abc import Callable

from contracts.bundles import OBJECT_BUNDLE_KIND, POD_BUNDLE_KIND
from services.cli.bench_e2e.workload import NAMESPACE
from shared.bus.bundles import is_bundle, unpack
from shared.bus.envelope import Envelope, EnvelopeError
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, EventSubject, event_filter, parse_event_subject


async def follow_binds_and_phases(
    bus: Bus, observe: Callable[[EventSubject, Envelope], None], from_seq: int
) -> None:
    """Hand every PodBound and JobStatusChanged (alone or in a bundle) of the bench namespace from
    `from_seq` on to `observe` (its subject, its envelope), until cancelled."""
    filters = [
        event_filter("pod", NAMESPACE, event_type="PodBound"),
        event_filter(POD_BUNDLE_KIND, NAMESPACE, event_type="PodsBound"),
        event_filter("job", NAMESPACE, event_type="JobStatusChanged"),
        event_filter(OBJECT_BUNDLE_KIND, NAMESPACE, event_type="JobStatusesChanged"),
    ]
    async for records in bus.follow_batches(EVENTS_STREAM, from_seq, filters):
        for record in records:
            try:
                ref, env = parse_event_subject(record.subject), Envelope.decode(record.data)
                events = unpack(ref, env) if is_bundle(ref.type) else [(ref, env)]
            except (ValueError, EnvelopeError):
                continue
            for event_ref, event_env in events:
                observe(event_ref, event_env)
