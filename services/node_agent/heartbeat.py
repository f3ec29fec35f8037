"""The node agent's heartbeat loop: every `heartbeat_interval_s` (default 2 s) one heartbeat per hosted node,
the first at once when the agent has caught up with the log (format: shared.bus.heartbeats). The binder
turns them into node liveness (NodeNotReady / NodeReady).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import nats.errors
from nats.aio.client import Client as NatsClient

from shared.bus.heartbeats import Heartbeat, encode_heartbeat, heartbeat_subject


async def send_heartbeats(
    nc: NatsClient,
    nodes: Sequence[str],
    agent: str,
    interval_s: float,
    clock: Callable[[], float],
    stopping: asyncio.Event,
    on_sent: Callable[[int], None] = lambda count: None,
) -> None:
    """Publish a heartbeat for every node every interval_s until stopping is set. A publish that fails
    (the connection is down and its buffer full, or closed) is skipped: the next round says the same thing."""
    subjects = [(node, heartbeat_subject(node)) for node in nodes]
    while not stopping.is_set():
        now = clock()
        sent = 0
        for node, subject in subjects:
            try:
                await nc.publish(subject, encode_heartbeat(Heartbeat(node, now, agent)))
                sent += 1
            except (nats.errors.OutboundBufferLimitError, nats.errors.ConnectionClosedError):
                break  # disconnected: liveness tolerates a gap
        on_sent(sent)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), interval_s)
