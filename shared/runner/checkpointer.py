"""When and how the loop saves (state, seq): every checkpoint_every_events events or checkpoint_every_s
seconds and at shutdown, fenced by the leadership term when the service is elected.

A checkpoint dumps the whole state, so its cost grows with the state: the period stretches to at least
COST_FACTOR times what the last checkpoint took, which keeps checkpointing under 2% of a core however
large the state grows (a restart then replays a little more).

The dump runs on the loop and stalls it for as long as it takes (about 0.9-1 s for the job-controller or
a scheduler at 40,000 pods), so a checkpoint that falls due while live events are queued (the loop is
behind: a burst) waits until the loop catches up, for at most DEFER_PERIODS periods: a checkpoint is a
cache, and stalling a busy service for it delays every event behind it."""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from shared.runner.config import RunnerConfig
from shared.runner.leader import LeaderSeat
from shared.runner.metrics import RunnerMetrics
from shared.store.checkpoint import CheckpointStore
from shared.store.election import FencedOut
from shared.store.etcd import EtcdError

log = structlog.get_logger(__name__)

COST_FACTOR = 50
DEFER_PERIODS = 4  # how long a due checkpoint may wait for a busy loop, in periods


class Checkpointer:
    def __init__(
        self,
        store: CheckpointStore,
        config: RunnerConfig,
        metrics: RunnerMetrics,
        seat: LeaderSeat | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.store = store
        self.config = config
        self.metrics = metrics
        self.seat = seat
        self.seq = 0  # of the last checkpoint written or loaded
        self._at = self.clock()
        self._cost_s = 0.0  # what the last checkpoint took, dump included

    def due(self, seq: int, *, final: bool, busy: bool = False) -> bool:
        """Whether to save now. busy: live events wait behind this batch (the save may then wait)."""
        behind = seq - self.seq
        if behind <= 0:
            return False
        if final or behind >= self.config.checkpoint_every_events:
            return True
        period = max(self.config.checkpoint_every_s, COST_FACTOR * self._cost_s)
        elapsed = self.clock() - self._at
        return elapsed >= (DEFER_PERIODS * period if busy else period)

    async def save(self, view: bytes, seq: int) -> None:
        """Write (view, seq); raises FencedOut when this instance does not (or no longer) lead, and a
        refused write ends the term it thought it held."""
        fence = self.seat.fence if self.seat is not None else None
        if self.seat is not None and fence is None:
            raise FencedOut(f"{self.store.service}: not the leader, checkpoint refused")
        try:
            await self.store.save(view, seq, fence=fence)
        except FencedOut:
            self.metrics.checkpointed("fenced")
            if self.seat is not None:
                self.seat.step_down("checkpoint refused: the leadership term is over")
            raise
        self.seq = seq
        self._at = self.clock()
        self.metrics.checkpointed("ok")
        self.metrics.checkpoint_seq.set(seq)

    async def save_if_due(
        self, seq: int, dump: Callable[[], bytes], *, final: bool = False, busy: bool = False
    ) -> None:
        """Save when due; failures are logged and retried after the period (the checkpoint is a cache).

        dump is called at once, before any await, so the view is the state at seq."""
        if not self.due(seq, final=final, busy=busy):
            return
        started = self.clock()
        try:
            await self.save(dump(), seq)
            self._cost_s = self.clock() - started
        except FencedOut:
            pass  # step_down logged it; the new leader checkpoints
        except EtcdError as exc:
            self.metrics.checkpointed("error")
            self._at = self.clock()  # retry after the period, not at every batch
            log.warning("checkpoint failed; retrying later", seq=seq, error=str(exc))
