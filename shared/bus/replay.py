"""Ordered reads of a stream from a sequence: bounded replay (to rebuild a view) and an endless follow.

Both use an ordered consumer: ephemeral, flow-controlled, no acks, and recreated by the client from the
last delivered sequence whenever it detects a gap (for instance across a server restart), so records
arrive exactly once and in stream order.

Records are taken in batches: the subscription's callback appends each one to a bounded feed and the
reader takes whatever has arrived. nats.py's async message iterator costs a task and a wait per message
(~70 µs here); a callback costs ~11 µs, and a reader that takes batches pays its own overhead once per
batch, not once per event. When the feed is full the callback waits, the client stops answering the
server's flow control, and the server stops sending: backpressure all the way to the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.manager import JetStreamManager

from shared.bus.log_gaps import GapWatch, LogGap
from shared.bus.records import StreamRecord
from shared.bus.reply_meta import ReplyMeta, reply_meta

# Server heartbeats on an idle consumer let the client notice a lost consumer (say, after a server
# restart) and recreate it from the last delivered sequence: the client checks every two heartbeats, so
# this bounds how long a follower stalls after the server comes back.
_IDLE_HEARTBEAT_S = 1.0
# How long the server keeps a consumer nobody listens to (a process that died without unsubscribing).
_INACTIVE_THRESHOLD_S = 30.0
FEED_LIMIT = 4096  # records held between the subscription and the reader
Filters = str | Sequence[str] | None


def _record(msg: Msg, meta: ReplyMeta) -> StreamRecord:
    return StreamRecord(
        stream=meta.stream,
        seq=meta.stream_seq,
        subject=msg.subject,
        data=msg.data,
        headers=msg.headers or {},
    )


def filter_list(filters: Filters) -> list[str]:
    """One subject filter, several, or None (everything) as a list (empty: everything)."""
    if filters is None:
        return []
    return [filters] if isinstance(filters, str) else list(filters)


class _Feed:
    """Records handed from the subscription's callback to one reader, in order, in batches."""

    def __init__(
        self, limit: int = FEED_LIMIT, *, count_pending: bool = False, gaps: GapWatch | None = None
    ) -> None:
        self.limit = limit
        self.gaps = gaps
        self.records: deque[StreamRecord] = deque()
        # stream seq -> matching messages stored after it when it was delivered (replay's end test)
        self.pending: dict[int, int] | None = {} if count_pending else None
        self.arrived = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()

    async def push(self, msg: Msg) -> None:
        meta = reply_meta(msg.reply)
        record = _record(msg, meta)
        if self.gaps is not None:
            self.gaps.saw(record.seq, meta.consumer_seq)
        if self.pending is not None:
            self.pending[record.seq] = meta.pending
        self.records.append(record)
        self.arrived.set()
        if len(self.records) >= self.limit:
            self.room.clear()
            await self.room.wait()

    async def take(self, most: int) -> list[StreamRecord]:
        """At least one record (waiting for it), at most `most`."""
        while not self.records:
            self.arrived.clear()
            await self.arrived.wait()
        records = self.records
        count = min(most, len(records))
        batch = [records.popleft() for _ in range(count)]
        if len(records) < self.limit:
            self.room.set()
        return batch


async def _first_match(
    jsm: JetStreamManager, state: api.StreamState, stream: str, from_seq: int, filters: list[str]
) -> int | None:
    """The sequence of the first message at or after from_seq matching the filters, None if none."""
    if not filters:
        first = max(from_seq, state.first_seq)
        return first if state.messages and first <= state.last_seq else None
    found: list[int] = []
    for subject in filters:
        try:
            msg = await jsm.get_msg(stream, seq=from_seq, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            continue
        if msg.seq is not None:  # the client types every field of a stored message as optional
            found.append(msg.seq)
    return min(found, default=None)


async def _subscribe(
    js: JetStreamContext, stream: str, from_seq: int, filters: list[str], feed: _Feed
) -> JetStreamContext.PushSubscription:
    config = api.ConsumerConfig(
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=max(from_seq, 1),
        replay_policy=api.ReplayPolicy.INSTANT,
        inactive_threshold=_INACTIVE_THRESHOLD_S,
        filter_subjects=filters if len(filters) > 1 else None,
    )
    return await js.subscribe(
        filters[0] if len(filters) == 1 else "",
        stream=stream,
        ordered_consumer=True,
        idle_heartbeat=_IDLE_HEARTBEAT_S,
        config=config,
        cb=feed.push,
    )


async def replay_batches(
    js: JetStreamContext,
    jsm: JetStreamManager,
    stream: str,
    from_seq: int = 1,
    filters: Filters = None,
    until_seq: int | None = None,
    batch: int = 1024,
) -> AsyncIterator[list[StreamRecord]]:
    """Batches of records from from_seq up to until_seq, in order.

    until_seq defaults to the stream's last sequence when iteration starts: events appended meanwhile
    are not included, so the records rebuild the view "at sequence N", and follow() from N+1 continues.
    """
    subjects = filter_list(filters)
    info = await jsm.stream_info(stream)
    last = info.state.last_seq if until_seq is None else min(until_seq, info.state.last_seq)
    first = await _first_match(jsm, info.state, stream, max(from_seq, 1), subjects)
    if first is None or first > last:
        return
    # A filtered replay may have no match at `last` itself: num_pending (matches stored after a record)
    # says when the last match before the snapshot point was delivered.
    feed = _Feed(count_pending=True)
    pending = feed.pending
    assert pending is not None
    sub = await _subscribe(js, stream, first, subjects, feed)
    try:
        while True:
            records = await feed.take(batch)
            done = False
            kept = []
            for record in records:
                if record.seq > last:
                    done = True
                    break
                kept.append(record)
                if record.seq == last or pending.pop(record.seq, 1) == 0:
                    done = True
                    break
            if kept:
                yield kept
            if done:
                return
    finally:
        await _unsubscribe(sub)


async def replay(
    js: JetStreamContext,
    jsm: JetStreamManager,
    stream: str,
    from_seq: int = 1,
    filters: Filters = None,
    until_seq: int | None = None,
) -> AsyncIterator[StreamRecord]:
    """replay_batches() one record at a time."""
    async for records in replay_batches(js, jsm, stream, from_seq, filters, until_seq):
        for record in records:
            yield record


async def follow_batches(
    js: JetStreamContext,
    stream: str,
    from_seq: int = 1,
    filters: Filters = None,
    batch: int = 1024,
    on_gap: Callable[[LogGap], None] | None = None,
) -> AsyncIterator[list[StreamRecord]]:
    """Batches of records from from_seq on, in order, waiting for new ones forever (until the caller
    stops): each batch is what arrived while the previous one was being handled, at most `batch`.
    on_gap hears of each gap the client healed by itself (shared/bus/log_gaps.py)."""
    subjects = filter_list(filters)
    gaps = None if on_gap is None else GapWatch(on_gap, unfiltered=not subjects)
    feed = _Feed(gaps=gaps)
    sub = await _subscribe(js, stream, from_seq, subjects, feed)
    try:
        while True:
            yield await feed.take(batch)
    finally:
        await _unsubscribe(sub)


async def follow(
    js: JetStreamContext, stream: str, from_seq: int = 1, filters: Filters = None
) -> AsyncIterator[StreamRecord]:
    """follow_batches() one record at a time."""
    async for records in follow_batches(js, stream, from_seq, filters):
        for record in records:
            yield record


async def _unsubscribe(sub: JetStreamContext.PushSubscription) -> None:
    # Closing the connection already dropped the subscription; the server forgets the consumer later.
    with contextlib.suppress(nats.errors.ConnectionClosedError, nats.errors.BadSubscriptionError):
        await sub.unsubscribe()
