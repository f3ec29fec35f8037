"""Leadership of a single-writer service: campaign, hold the term, notice its end, campaign again."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

import structlog

from shared.store.election import Election, Fence, Leadership
from shared.store.etcd import Etcd

log = structlog.get_logger(__name__)


def default_candidate() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class LeaderSeat:
    """Who leads a named election from this process's point of view.

    run() campaigns until it wins, calls on_change(True), waits for the term to end (the lease is lost, or
    step_down() after a refused fenced write), calls on_change(False), resigns and campaigns again.
    """

    def __init__(
        self, etcd: Etcd, name: str, candidate: str, ttl_s: int, on_change: Callable[[bool], None]
    ) -> None:
        self.election = Election(etcd, name)
        self.candidate = candidate
        self.ttl_s = ttl_s
        self.on_change = on_change
        self._leadership: Leadership | None = None
        self._deposed = asyncio.Event()

    @property
    def fence(self) -> Fence | None:
        """The current term's fence, None when not leading (or the term is known to be over)."""
        held = self._leadership
        return held.fence if held is not None and not held.lost.is_set() else None

    def step_down(self, reason: str) -> None:
        if self._leadership is not None:
            log.warning("stepping down", reason=reason, token=self._leadership.fence.token)
            self._deposed.set()

    async def run(self) -> None:
        while True:
            leadership = await self.election.campaign(self.candidate, ttl_s=self.ttl_s)
            self._leadership = leadership
            self._deposed.clear()
            log.info("leading", candidate=self.candidate, token=leadership.fence.token)
            self.on_change(True)
            ended = [asyncio.create_task(leadership.lost.wait()), asyncio.create_task(self._deposed.wait())]
            try:
                await asyncio.wait(ended, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in ended:
                    task.cancel()
            self._leadership = None
            self.on_change(False)
            log.warning("leadership ended, campaigning again", token=leadership.fence.token)
            await leadership.resign()

    async def resign(self) -> None:
        """Hand over at once (on shutdown, after the final checkpoint): revoking the lease deletes the
        election key, which wakes a standby's campaign now rather than when the lease would expire."""
        held, self._leadership = self._leadership, None
        if held is not None:
            await held.resign()
            log.info("resigned the leadership", candidate=self.candidate, token=held.fence.token)
