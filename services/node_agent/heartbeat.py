"""The node agent's heartbeat loop: every `heartbeat_interval_s` (default 2 s) the agent says that all its
nodes are alive, in as few messages as shared.bus.heartbeats allows, the first at once when the agent has
caught up with the log. The binder turns them into node liveness (NodeNotReady / NodeReady).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import nats.errors
from nats.aio.client import Client as NatsClient

from shared.bus.heartbeats import encode_heartbeat, heartbeat_subject, heartbeats_for


async def send_heartbeats(
    nc: NatsClient,
    nodes: Sequence[str],
    agent: str,
    interval_s: float,
    clock: Callable[[], float],
    stopping: asyncio.Event,
    on_sent: Callable[[int], None] = lambda count: None,
) -> None:
    """Publish heartbeats for every node every interval_s until stopping is set; on_sent gets the number
    of nodes covered. A publish that fails (the connection is down and its buffer full, or closed) is
    skipped: the next round says the same thing."""
    subject = heartbeat_subject(agent)
    while not stopping.is_set():
        sent = 0
        for heartbeat in heartbeats_for(agent, nodes, clock()):
            try:
                await nc.publish(subject, encode_heartbeat(heartbeat))
                sent += len(heartbeat.nodes)
            except (nats.errors.OutboundBufferLimitError, nats.errors.ConnectionClosedError):
                break  # disconnected: liveness tolerates a gap
        on_sent(sent)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), interval_s)
