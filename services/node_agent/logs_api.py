"""The logs API: `lahar logs POD [-f]` reads a pod's container output from the agent that ran it.

Request (core NATS request/reply): subject `lahar.logs.<namespace>.<pod>` (each escaped as one subject
token by shared.bus.subjects.encode_token), JSON `{"container": "<name>" (optional: the pod's first
container), "offset": <bytes already read, default 0>}`.
Reply: JSON `{"data": "<the log from offset, UTF-8, at most 256 KiB>", "offset": <offset to ask next>,
"done": <the pod has finished>}`, or `{"error": "<why>"}`. `done` is decided before the log is read, so a
reply with done true and empty data means the log is complete: `-f` polls with the returned offset until
then. Only an agent that ran the pod answers (the others stay silent), so no reply means no agent knows it.
A sim agent answers for the pods it is running with empty data: hollow pods print nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from services.node_agent.runtime import workdir
from shared.bus.subjects import LOGS_FILTER, pod_of_logs_subject

MAX_CHUNK_BYTES = 256 * 1024  # well under NATS's default 1 MiB payload limit, JSON escaping included


@dataclass(frozen=True, slots=True)
class PodLogs:
    """What the agent knows of a pod it ran: its directory (None: the runtime keeps no logs), its
    containers (app containers first) and whether it has finished."""

    directory: Path | None
    containers: tuple[str, ...]
    done: bool


def answer(pod: PodLogs, request: bytes) -> dict[str, object]:
    """The reply to one request about a pod this agent ran."""
    try:
        raw = json.loads(request or b"{}")
        container = raw.get("container") or (pod.containers[0] if pod.containers else "")
        offset = int(raw.get("offset", 0))
    except (AttributeError, TypeError, ValueError):
        return {"error": 'expected JSON {"container": name (optional), "offset": int}'}
    if container not in pod.containers:
        return {"error": f"no container {container!r} in the pod (it has {', '.join(pod.containers)})"}
    if offset < 0:
        return {"error": f"offset must be >= 0, got {offset}"}
    if pod.directory is None:
        return {"data": "", "offset": offset, "done": pod.done}
    data, offset = read_chunk(workdir.log_path(pod.directory, container), offset)
    return {"data": data, "offset": offset, "done": pod.done}


def read_chunk(path: Path, offset: int, limit: int = MAX_CHUNK_BYTES) -> tuple[str, int]:
    """Up to `limit` bytes of the file from `offset`, cut before a split UTF-8 character; a file not
    written yet (its container has not started) reads as empty."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            raw = file.read(limit)
    except FileNotFoundError:
        return "", offset
    if len(raw) == limit:
        raw = _whole_characters(raw)
    return raw.decode("utf-8", errors="replace"), offset + len(raw)


def _whole_characters(raw: bytes) -> bytes:
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: the character starts further back
        size = 2 if 0xC0 <= byte < 0xE0 else 3 if 0xE0 <= byte < 0xF0 else 4 if 0xF0 <= byte < 0xF8 else 1
        return raw if size <= back else raw[:-back]
    return raw


async def serve_logs(
    nc: NatsClient, lookup: Callable[[str], PodLogs | None], stopping: asyncio.Event
) -> None:
    """Answer logs requests until stopping is set. lookup(pod key) says what the agent knows of the pod,
    None when it did not run it (then the request is left to the agent that did)."""

    async def on_request(msg: Msg) -> None:
        if not msg.reply:
            return
        try:
            key = pod_of_logs_subject(msg.subject)
        except ValueError:
            return
        pod = lookup(key)
        if pod is None:
            return
        reply = await asyncio.to_thread(answer, pod, msg.data)
        await msg.respond(json.dumps(reply).encode())

    subscription = await nc.subscribe(LOGS_FILTER, cb=on_request)
    try:
        await stopping.wait()
    finally:
        await subscription.unsubscribe()
