"""Waiting on asyncio events."""

from __future__ import annotations

import asyncio


async def first_set(*events: asyncio.Event, timeout_s: float | None = None) -> None:
    """Wait until one of events is set (or timeout_s passes)."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
