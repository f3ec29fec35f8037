"""Node heartbeats: how a node agent says its nodes are alive (core NATS, not events).

Subject: `lahar.hb.<node>`, one per node (the node name escaped as one subject token by
shared.bus.subjects.encode_token, which leaves names of letters, digits, '-' and '_' unchanged); a
listener subscribes to `lahar.hb.*`.
Payload: JSON `{"node": "<node name>", "time": <epoch seconds, float>, "agent": "<agent id>"}`.
Cadence: every `heartbeat_interval_s` (default 2 s) for each node the agent hosts, the first at once when
the agent has caught up with the log. The binder turns them into node liveness (NodeNotReady / NodeReady).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import nats.errors
from nats.aio.client import Client as NatsClient

from shared.bus.subjects import decode_token, encode_token

HEARTBEAT_ROOT = "lahar.hb"
HEARTBEAT_FILTER = f"{HEARTBEAT_ROOT}.*"


@dataclass(frozen=True, slots=True)
class Heartbeat:
    node: str
    time: float  # epoch seconds, the agent's clock
    agent: str


def heartbeat_subject(node: str) -> str:
    return f"{HEARTBEAT_ROOT}.{encode_token(node)}"


def node_of_subject(subject: str) -> str:
    """Invert heartbeat_subject(); raises ValueError for any other subject."""
    root, _, token = subject.rpartition(".")
    if root != HEARTBEAT_ROOT:
        raise ValueError(f"not a heartbeat subject ({HEARTBEAT_ROOT}.<node>): {subject!r}")
    return decode_token(token)


def encode_heartbeat(beat: Heartbeat) -> bytes:
    return json.dumps({"node": beat.node, "time": beat.time, "agent": beat.agent}).encode()


def decode_heartbeat(data: bytes) -> Heartbeat:
    """Raises ValueError for anything but a heartbeat payload."""
    try:
        raw = json.loads(data)
        return Heartbeat(node=str(raw["node"]), time=float(raw["time"]), agent=str(raw["agent"]))
    except (KeyError, TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"not a heartbeat: {data[:200]!r}") from exc


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
