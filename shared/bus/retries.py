"""When a publish that got no answer is tried again (the bus's request-reply publishes)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats.errors
import nats.js.errors
import structlog

from shared.bus.errors import BusError

log = structlog.get_logger(__name__)

T = TypeVar("T")

NO_REPLY = (nats.errors.TimeoutError, asyncio.TimeoutError)
# A stream whose leader's server died answers nothing, at once ("no responders"), until its raft group has
# elected another leader: a follower waits nats-server's election timeout, 4 to 9 s (fixed), before it
# campaigns, and a split vote takes another round. Nothing was stored, so the publish is tried again
# until the stream answers or this long has passed: one whole timeout and a second round.
LEADERLESS = (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError)
LEADERLESS_WAIT_S = 20.0
_LEADERLESS_RETRY_S = 0.1


async def with_retries(
    what: str, send: Callable[[], Awaitable[dict[str, Any]]], attempts: int, leaderless_wait_s: float
) -> dict[str, Any]:
    """send() until it answers. A missing reply is tried again up to `attempts` times in all: the message
    may or may not be stored, and its message id makes storing it twice impossible within the dedup
    window. A stream without a leader is waited for up to leaderless_wait_s. BusError when neither
    answered in time."""
    failed = 0
    leaderless_since: float | None = None
    while True:
        try:
            return await send()
        except LEADERLESS as exc:
            now = time.monotonic()
            if leaderless_since is None:
                leaderless_since = now
                log.info("no stream answered the publish, waiting for one", what=what, error=repr(exc))
            if now - leaderless_since >= leaderless_wait_s:
                raise BusError(f"{what}: no stream answered for {leaderless_wait_s:.0f}s") from exc
            await asyncio.sleep(_LEADERLESS_RETRY_S)
        except NO_REPLY as exc:
            failed += 1
            if failed >= attempts:
                raise BusError(f"{what}: no reply after {attempts} attempts") from exc
            log.info("publish got no reply, retrying", what=what, attempt=failed, error=repr(exc))
            await asyncio.sleep(0.1 * failed)


# What a JetStream API request (stream info, create) gets while the stream or the meta layer has no leader.
UNANSWERED = (*NO_REPLY, *LEADERLESS, nats.js.errors.ServiceUnavailableError)


async def until_answered(what: str, call: Callable[[], Awaitable[T]], wait_s: float) -> T:
    """call() again while JetStream does not answer it (a leader being elected), up to wait_s; then the
    last error is raised."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return await call()
        except UNANSWERED as exc:
            if time.monotonic() >= deadline:
                raise
            log.info(f"{what}: JetStream did not answer, trying again", error=repr(exc))
            await asyncio.sleep(_LEADERLESS_RETRY_S)
