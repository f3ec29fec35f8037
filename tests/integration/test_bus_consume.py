from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from shared.bus import subjects
from shared.bus.consumers import ConsumerSpec
from shared.bus.envelope import Envelope, EnvelopeError
from shared.bus.jetstream import Bus
from shared.bus.records import StreamRecord
from shared.bus.streams import events_stream, plans_stream

STREAM = subjects.EVENTS_STREAM


def event(n: int) -> Envelope:
    return Envelope.create(
        "Tick", time=1_700_000_000.0 + n, producer="tests", correlation_id="c", payload={"n": n}
    )


async def seed(bus: Bus, count: int) -> list[str]:
    """count events round-robin over job a, job b and a node; returns their subjects in order."""
    targets = [
        subjects.event_subject("job", "default", "a", "Tick", "tests"),
        subjects.event_subject("job", "default", "b", "Tick", "tests"),
        subjects.event_subject("node", None, "n1", "Tick", "tests"),
    ]
    items = [(event(i), targets[i % 3]) for i in range(count)]
    await bus.publish_pipelined(items)
    return [subject for _, subject in items]


async def collect(records: AsyncIterator[StreamRecord]) -> list[StreamRecord]:
    return [r async for r in records]


@pytest.fixture
async def events_bus(bus: Bus) -> Bus:
    await bus.ensure_streams([events_stream(), plans_stream()])
    return bus


async def test_replay_from_a_sequence_in_order(events_bus: Bus) -> None:
    placed = await seed(events_bus, 12)
    records = await collect(events_bus.replay(STREAM, from_seq=5))
    assert [r.seq for r in records] == list(range(5, 13))
    assert [r.subject for r in records] == placed[4:]
    assert [r.envelope().payload["n"] for r in records] == list(range(4, 12))


async def test_replay_with_a_filter_stops_after_the_last_match(events_bus: Bus) -> None:
    await seed(events_bus, 12)  # node events at seqs 3, 6, 9, 12; jobs otherwise
    jobs = await collect(events_bus.replay(STREAM, from_seq=2, subject_filter=subjects.event_filter("job")))
    assert [r.seq for r in jobs] == [2, 4, 5, 7, 8, 10, 11]
    nodes = await collect(events_bus.replay(STREAM, subject_filter=subjects.event_filter("node")))
    assert [r.seq for r in nodes] == [3, 6, 9, 12]
    nothing = await collect(events_bus.replay(STREAM, subject_filter=subjects.event_filter("queue")))
    assert nothing == []
    assert await collect(events_bus.replay(STREAM, from_seq=13)) == []


async def test_replay_stops_at_the_sequence_seen_when_it_started(events_bus: Bus) -> None:
    await seed(events_bus, 5)
    seen: list[int] = []
    async for record in events_bus.replay(STREAM):
        seen.append(record.seq)
        if record.seq == 1:
            await seed(events_bus, 5)  # appended during the replay: not part of it
    assert seen == [1, 2, 3, 4, 5]
    assert [r.seq for r in await collect(events_bus.replay(STREAM, from_seq=3, until_seq=7))] == [
        3,
        4,
        5,
        6,
        7,
    ]


async def test_replay_surfaces_garbage_instead_of_skipping_it(events_bus: Bus) -> None:
    await events_bus.js.publish(
        subjects.event_subject("job", "default", "x", "Tick", "tests"), b"\x00not an envelope"
    )
    [record] = await collect(events_bus.replay(STREAM))
    with pytest.raises(EnvelopeError):
        record.envelope()


async def test_follow_continues_past_the_end(events_bus: Bus) -> None:
    await seed(events_bus, 3)
    received: asyncio.Queue[int] = asyncio.Queue()

    async def run() -> None:
        async for record in events_bus.follow(STREAM, from_seq=2):
            await received.put(record.seq)

    follower = asyncio.create_task(run())
    try:
        assert [await asyncio.wait_for(received.get(), 10) for _ in range(2)] == [2, 3]
        await seed(events_bus, 2)
        assert [await asyncio.wait_for(received.get(), 10) for _ in range(2)] == [4, 5]
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower


async def test_durable_consumer_redelivery_is_bounded_by_max_deliver(events_bus: Bus) -> None:
    plan = subjects.plan_subject("scheduler-0")
    await events_bus.publish(event(0), plan)
    consumer = await events_bus.durable(
        ConsumerSpec(stream=subjects.PLANS_STREAM, name="binder", ack_wait_s=30, max_deliver=3)
    )
    attempts = []
    for _ in range(3):
        [delivery] = await consumer.fetch(batch=1, timeout_s=10)
        attempts.append(delivery.num_delivered)
        assert delivery.record.envelope().payload == {"n": 0}
        await delivery.nak()
    assert attempts == [1, 2, 3]
    assert await consumer.fetch(batch=1, timeout_s=1) == []  # max_deliver reached: no fourth delivery
    await consumer.close()


async def test_unacked_message_is_redelivered_after_ack_wait_and_ack_ends_it(events_bus: Bus) -> None:
    await events_bus.publish(event(0), subjects.plan_subject("scheduler-0"))
    spec = ConsumerSpec(stream=subjects.PLANS_STREAM, name="binder", ack_wait_s=0.5, max_deliver=5)
    consumer = await events_bus.durable(spec)
    [first] = await consumer.fetch(batch=1, timeout_s=10)
    [again] = await consumer.fetch(batch=1, timeout_s=10)  # not acked within ack_wait
    assert (first.record.seq, first.num_delivered) == (again.record.seq, 1)
    assert again.num_delivered == 2
    await again.ack()
    assert await consumer.pending() == 0
    await consumer.close()
    # The durable keeps its position: a new binding sees nothing left (and the work queue is empty).
    rebound = await events_bus.durable(spec)
    assert await rebound.fetch(batch=1, timeout_s=0.5) == []
    assert await events_bus.last_seq(subjects.PLANS_STREAM) == 1
    await rebound.close()
