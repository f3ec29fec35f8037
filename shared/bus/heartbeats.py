"""Node heartbeats on core NATS (not in the log): the one definition of their subject and payload, shared
by the node agent (sender) and the binder (liveness).

One message speaks for many nodes: an agent hosting thousands of hollow nodes would otherwise send
thousands of messages every interval, and the binder would decode each of them. Subject
`lahar.hb.<agent>` (the agent id escaped as one subject token, shared.bus.subjects.encode_token, which
leaves names of letters, digits, '-' and '_' unchanged); a listener subscribes to `lahar.hb.*`. Payload
JSON `{"agent": <agent id>, "time": <epoch seconds at the sender>, "nodes": [<node name>, ...]}`; an agent
with more than MAX_NODES_PER_HEARTBEAT nodes sends several messages, so each stays far below NATS's
maximum payload. The binder times a heartbeat by its own clock on receipt: the sender's time is
informative, since the clocks of different hosts need not agree and liveness is judged by one clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from shared.bus.subjects import encode_token

HEARTBEAT_ROOT = "lahar.hb"
HEARTBEAT_FILTER = f"{HEARTBEAT_ROOT}.*"
MAX_NODES_PER_HEARTBEAT = 2000  # node names of up to 253 bytes: well inside a 1 MiB payload


class HeartbeatError(ValueError):
    """A heartbeat message that does not decode; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    agent: str
    time: float
    nodes: tuple[str, ...]


def heartbeat_subject(agent: str) -> str:
    return f"{HEARTBEAT_ROOT}.{encode_token(agent)}"


def heartbeats_for(agent: str, nodes: Sequence[str], time: float) -> list[Heartbeat]:
    """The messages that say every node of an agent is alive at `time`."""
    step = MAX_NODES_PER_HEARTBEAT
    return [Heartbeat(agent, time, tuple(nodes[i : i + step])) for i in range(0, len(nodes), step)]


def encode_heartbeat(heartbeat: Heartbeat) -> bytes:
    return orjson.dumps({"agent": heartbeat.agent, "time": heartbeat.time, "nodes": heartbeat.nodes})


def decode_heartbeat(data: bytes) -> Heartbeat:
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise HeartbeatError(f"heartbeat: not a JSON document ({exc})") from exc
    if not isinstance(raw, dict):
        raise HeartbeatError(f"heartbeat: expected an object, got {type(raw).__name__}")
    agent, sent, nodes = raw.get("agent"), raw.get("time"), raw.get("nodes")
    problems = []
    if not isinstance(agent, str) or not agent:
        problems.append(f"agent: expected a non-empty string, got {agent!r}")
    if isinstance(sent, bool) or not isinstance(sent, int | float) or not math.isfinite(sent):
        problems.append(f"time: expected epoch seconds, got {sent!r}")
    if not isinstance(nodes, list) or len(nodes) > MAX_NODES_PER_HEARTBEAT:
        problems.append(f"nodes: expected a list of at most {MAX_NODES_PER_HEARTBEAT} node names")
    elif not all(isinstance(node, str) and node for node in nodes):
        bad = next(node for node in nodes if not isinstance(node, str) or not node)
        problems.append(f"nodes: expected non-empty strings, got {bad!r}")
    if problems:
        raise HeartbeatError("invalid heartbeat: " + "; ".join(problems))
    # each value passed its check above; the checks gather every problem before raising, so mypy cannot
    # narrow the values through them
    return Heartbeat(agent, float(sent), tuple(nodes))  # type: ignore[arg-type]
