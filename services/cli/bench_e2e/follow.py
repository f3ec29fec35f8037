"""What the benchmarks watch on the log while they run: the bench jobs' binds and phase changes."""

from __future__ import annotations

from collections.abc import Callable

from services.cli.bench_e2e.workload import NAMESPACE
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, event_filter


async def follow_binds_and_phases(bus: Bus, observe: Callable[[str, bytes], None], from_seq: int) -> None:
    """Hand every PodBound and JobStatusChanged of the bench namespace from `from_seq` on to `observe`
    (subject, data), until cancelled."""
    filters = [
        event_filter("pod", NAMESPACE, event_type="PodBound"),
        event_filter("job", NAMESPACE, event_type="JobStatusChanged"),
    ]
    async for records in bus.follow_batches(EVENTS_STREAM, from_seq, filters):
        for record in records:
            observe(record.subject, record.data)
