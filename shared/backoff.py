"""Waiting out an outage: delays that double up to a cap, and a call retried with them until it works.

A service that loses etcd or NATS keeps its state in memory and tries again, instead of exiting and
replaying the whole log once the server is back (docs/reliability.md, "Supervision and outages")."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")

INITIAL_S = 0.1
MAX_S = 2.0  # a server restarted by a supervisor is back within seconds: do not sleep through it


def delays(initial_s: float = INITIAL_S, max_s: float = MAX_S) -> Iterator[float]:
    """initial_s, twice that, ... capped at max_s, forever."""
    delay = initial_s
    while True:
        yield delay
        delay = min(delay * 2, max_s)


async def retry_while_unavailable(
    what: str,
    call: Callable[[], Awaitable[T]],
    unavailable: tuple[type[BaseException], ...],
    *,
    initial_s: float = INITIAL_S,
    max_s: float = MAX_S,
) -> T:
    """call() until it does not raise one of `unavailable` (a server that is down, not a refusal):
    every failure is logged and waited out with the next delay. Cancel the caller to give up."""
    waits = delays(initial_s, max_s)
    failures = 0
    while True:
        try:
            return await call()
        except unavailable as exc:
            failures += 1
            delay = next(waits)
            # the first failure and then one in ten: an outage of minutes must not flood the log
            if failures == 1 or failures % 10 == 0:
                log.warning(f"{what}: server unavailable, retrying", failures=failures, error=str(exc))
            await asyncio.sleep(delay)
