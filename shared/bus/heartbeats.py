"""Node heartbeats on core NATS (not in the log): the one definition of their subject and payload, shared
by the node agent (sender) and the binder (liveness).

Subject `lahar.hb.<node>` (the node name escaped as one subject token, shared.bus.subjects.encode_token,
which leaves names of letters, digits, '-' and '_' unchanged); a listener subscribes to `lahar.hb.*`.
Payload JSON `{"node": <name>, "time": <epoch seconds at the sender>, "agent": <agent id>}` ("agent" is
optional when reading). The binder times a heartbeat by its own clock on receipt: the sender's time is
informative, since the clocks of different hosts need not agree and liveness is judged by one clock.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from shared.bus.subjects import decode_token, encode_token

HEARTBEAT_ROOT = "lahar.hb"
HEARTBEAT_FILTER = f"{HEARTBEAT_ROOT}.*"


class HeartbeatError(ValueError):
    """A heartbeat message that does not decode; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    node: str
    time: float
    agent: str = ""


def heartbeat_subject(node: str) -> str:
    return f"{HEARTBEAT_ROOT}.{encode_token(node)}"


def node_of_subject(subject: str) -> str:
    """Invert heartbeat_subject(); raises ValueError for any other subject."""
    root, _, token = subject.rpartition(".")
    if root != HEARTBEAT_ROOT:
        raise ValueError(f"not a heartbeat subject ({HEARTBEAT_ROOT}.<node>): {subject!r}")
    return decode_token(token)


def encode_heartbeat(heartbeat: Heartbeat) -> bytes:
    return json.dumps({"node": heartbeat.node, "time": heartbeat.time, "agent": heartbeat.agent}).encode()


def decode_heartbeat(data: bytes) -> Heartbeat:
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HeartbeatError(f"heartbeat: not a JSON document ({exc})") from exc
    if not isinstance(raw, dict):
        raise HeartbeatError(f"heartbeat: expected an object, got {type(raw).__name__}")
    node, sent, agent = raw.get("node"), raw.get("time"), raw.get("agent", "")
    problems = []
    if not isinstance(node, str) or not node:
        problems.append(f"node: expected a non-empty string, got {node!r}")
    if isinstance(sent, bool) or not isinstance(sent, int | float) or not math.isfinite(sent):
        problems.append(f"time: expected epoch seconds, got {sent!r}")
    if not isinstance(agent, str):
        problems.append(f"agent: expected a string, got {agent!r}")
    if problems:
        raise HeartbeatError("invalid heartbeat: " + "; ".join(problems))
    return Heartbeat(node, float(sent), agent)  # type: ignore[arg-type]
