"""The raw JetStream publish rate of a nats-server: the yardstick the e2e figures are divided by, so that a
result measured on a busy or a slow machine can be compared with one from another (the ratio survives
what the absolute rate does not).

Small messages to a scratch file-backed stream, many in flight (as the services publish), with the same
message-id header the services send; the stream is removed afterwards.
"""

from __future__ import annotations

import time
import uuid

from shared.bus.jetstream import Bus
from shared.bus.streams import StreamSpec, ensure_stream

_STREAM = "LAHAR_BENCH_RAW"
_SUBJECT = "lahar.benchraw"
_PAYLOAD = b"x" * 128


async def raw_publish_rate(bus: Bus, *, messages: int = 20_000) -> float:
    """Messages stored per second."""
    spec = StreamSpec(_STREAM, (f"{_SUBJECT}.>",), description="e2e benchmark scratch stream")
    await ensure_stream(bus.jsm, spec, atomic_supported=bus.server_supports_atomic)
    try:
        prefix = uuid.uuid4().hex
        started = time.perf_counter()
        for index in range(messages):
            await bus.js.publish_async(
                f"{_SUBJECT}.{index % 64}", _PAYLOAD, headers={"Nats-Msg-Id": f"{prefix}-{index}"}
            )
        await bus.js.publish_async_completed()
        elapsed = time.perf_counter() - started
    finally:
        await bus.jsm.delete_stream(_STREAM)
    return messages / elapsed
