"""Ordered reads of a stream from a sequence: bounded replay (to rebuild a view) and an endless follow.

Both use an ordered consumer: ephemeral, flow-controlled, no acks, and recreated by the client from the
last delivered sequence whenever it detects a gap (for instance across a server restart), so records
arrive exactly once and in stream order.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.manager import JetStreamManager

from shared.bus.records import StreamRecord

# Server heartbeats on an idle consumer let the client notice a lost consumer (say, after a server
# restart) and recreate it from the last delivered sequence: the client checks every two heartbeats, so
# this bounds how long a follower stalls after the server comes back.
_IDLE_HEARTBEAT_S = 1.0
# How long the server keeps a consumer nobody listens to (a process that died without unsubscribing).
_INACTIVE_THRESHOLD_S = 30.0


def _record(msg: Msg) -> StreamRecord:
    meta = msg.metadata
    return StreamRecord(
        stream=meta.stream,
        seq=meta.sequence.stream,
        subject=msg.subject,
        data=msg.data,
        headers=dict(msg.headers or {}),
    )


async def _first_match(
    jsm: JetStreamManager, state: api.StreamState, stream: str, from_seq: int, subject_filter: str | None
) -> int | None:
    """The sequence of the first message at or after from_seq matching the filter, None if none."""
    if subject_filter is None:
        first = max(from_seq, state.first_seq)
        return first if state.messages and first <= state.last_seq else None
    try:
        msg = await jsm.get_msg(stream, seq=from_seq, subject=subject_filter, next=True)
    except nats.js.errors.NotFoundError:
        return None
    return msg.seq


async def _subscribe(
    js: JetStreamContext, stream: str, from_seq: int, subject_filter: str | None
) -> JetStreamContext.PushSubscription:
    config = api.ConsumerConfig(
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=max(from_seq, 1),
        replay_policy=api.ReplayPolicy.INSTANT,
        inactive_threshold=_INACTIVE_THRESHOLD_S,
    )
    return await js.subscribe(
        subject_filter or "",
        stream=stream,
        ordered_consumer=True,
        idle_heartbeat=_IDLE_HEARTBEAT_S,
        config=config,
    )


async def replay(
    js: JetStreamContext,
    jsm: JetStreamManager,
    stream: str,
    from_seq: int = 1,
    subject_filter: str | None = None,
    until_seq: int | None = None,
) -> AsyncIterator[StreamRecord]:
    """Records from from_seq up to until_seq, in order.

    until_seq defaults to the stream's last sequence when iteration starts: events appended meanwhile
    are not included, so the records rebuild the view "at sequence N", and follow() from N+1 continues.
    """
    info = await jsm.stream_info(stream)
    last = info.state.last_seq if until_seq is None else min(until_seq, info.state.last_seq)
    first = await _first_match(jsm, info.state, stream, max(from_seq, 1), subject_filter)
    if first is None or first > last:
        return
    sub = await _subscribe(js, stream, first, subject_filter)
    try:
        async for msg in sub.messages:
            record = _record(msg)
            if record.seq > last:
                return
            yield record
            # num_pending counts matching messages stored after this one: zero means nothing older than
            # the snapshot remains (and waiting for more would block on an idle filter).
            if record.seq == last or msg.metadata.num_pending == 0:
                return
    finally:
        await _unsubscribe(sub)


async def follow(
    js: JetStreamContext,
    stream: str,
    from_seq: int = 1,
    subject_filter: str | None = None,
) -> AsyncIterator[StreamRecord]:
    """Records from from_seq on, in order, waiting for new ones forever (until the caller stops)."""
    sub = await _subscribe(js, stream, from_seq, subject_filter)
    try:
        async for msg in sub.messages:
            yield _record(msg)
    finally:
        await _unsubscribe(sub)


async def _unsubscribe(sub: JetStreamContext.PushSubscription) -> None:
    # Closing the connection already dropped the subscription; the server forgets the consumer later.
    with contextlib.suppress(nats.errors.ConnectionClosedError, nats.errors.BadSubscriptionError):
        await sub.unsubscribe()
