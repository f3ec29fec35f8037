"""Gaps in following a stream that the client heals by itself, made visible to the reader.

An ordered consumer is recreated by the client whenever it misses the server's idle heartbeats or sees a
consumer sequence out of order (a server restart, a consumer the server dropped, a stream leader that
moved), from the sequence after the last record delivered. No record is lost, but the reader was cut off
from the server for a while with its connection up and no disconnect callback: whatever else it
receives over that connection (the binder's heartbeats) may have been cut off too. A recreated consumer
shows in its records: their consumer sequence starts again at 1.

An unfiltered reader also sees a stream sequence jump between consecutive records: records it never got
(deleted or purged from the stream after it was written).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogGap:
    """The reader got `seq` after `after_seq` with a gap between them: the consumer was recreated
    (`restarted`) and/or `skipped` records were never delivered; `silent_s` since the previous record."""

    after_seq: int
    seq: int
    restarted: bool
    skipped: int
    silent_s: float


class GapWatch:
    """Called for every record a follower receives (two int comparisons); reports gaps to on_gap."""

    __slots__ = ("clock", "last_at", "last_cseq", "last_seq", "on_gap", "unfiltered")

    def __init__(
        self,
        on_gap: Callable[[LogGap], None],
        *,
        unfiltered: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.on_gap = on_gap
        self.unfiltered = unfiltered
        self.last_seq = 0
        self.last_cseq = 0
        self.last_at = 0.0
        self.clock = clock

    def saw(self, seq: int, cseq: int) -> None:
        now = self.clock()
        if self.last_cseq:
            restarted = cseq <= self.last_cseq  # a new consumer counts from 1 again
            skipped = seq - self.last_seq - 1 if self.unfiltered else 0
            if restarted or skipped > 0:
                self.on_gap(LogGap(self.last_seq, seq, restarted, max(skipped, 0), now - self.last_at))
        self.last_seq, self.last_cseq, self.last_at = seq, cseq, now
