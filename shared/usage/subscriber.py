"""The subscription that feeds a UsageBook from the bus (the imperative shell of book.py).

Core NATS, on the reader's own connection: a report the reader misses (disconnected, or too slow) is
replaced by the next period's, so nothing needs to be replayed. A report that does not decode is counted
and logged, never folded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import nats.errors
import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from contracts.usage import UsageReportError, decode_report
from shared.usage.book import UsageBook
from shared.usage.wire import USAGE_FILTER

log = structlog.get_logger(__name__)


async def follow_usage(
    nc: NatsClient,
    book: UsageBook,
    clock: Callable[[], float],
    stopping: asyncio.Event,
    on_report: Callable[[bool], None] = lambda valid: None,
) -> None:
    """Fold every usage report into `book` until `stopping` is set; `on_report(valid)` counts them."""

    async def received(msg: Msg) -> None:
        try:
            report = decode_report(msg.data)
        except UsageReportError as exc:
            on_report(False)
            log.warning("ignoring a usage report", subject=msg.subject, error=str(exc))
            return
        on_report(True)
        book.apply(report, clock())

    sub = await nc.subscribe(USAGE_FILTER, cb=received)
    try:
        await stopping.wait()
    finally:
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()
