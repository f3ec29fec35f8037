from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from shared.bus import subjects
from shared.bus.envelope import Envelope
from shared.bus.errors import AtomicBatchUnsupported, ConcurrencyConflict, DuplicateBatch
from shared.bus.jetstream import BatchItem, Bus
from shared.bus.streams import StreamSpec, events_stream, standard_streams
from shared.runner.publisher import PIPELINE_WINDOW

STREAM = subjects.EVENTS_STREAM
JOB = subjects.event_subject("job", "default", "train", "JobCreated", "tests")
PODS = [subjects.event_subject("pod", "default", f"train-{i}", "PodEvent", "tests") for i in range(3)]


def event(kind: str = "JobCreated", n: int = 0) -> Envelope:
    # Test-only event types (not in contracts/events.py): the bus stores any envelope; what a payload of
    # a catalogued type must hold is checked by Envelope.create and tested with the contracts.
    return Envelope.create(
        kind, time=1_700_000_000.0 + n, producer="tests", correlation_id="default/train", payload={"n": n}
    )


async def stored(bus: Bus) -> list[tuple[int, str, str]]:
    return [(r.seq, r.subject, r.envelope().id) async for r in bus.replay(STREAM)]


@pytest.fixture
async def events_bus(bus: Bus) -> Bus:
    await bus.ensure_streams([events_stream()])
    return bus


async def test_ensure_streams_is_idempotent_and_updates_changed_limits(bus: Bus) -> None:
    first = await bus.ensure_streams(standard_streams())
    assert [(s.name, s.created, s.updated) for s in first] == [
        (subjects.EVENTS_STREAM, True, False),
        (subjects.INTAKE_STREAM, True, False),
        (subjects.PLANS_STREAM, True, False),
        (subjects.QUARANTINE_STREAM, True, False),
        (subjects.DEADLETTER_STREAM, True, False),
    ]
    assert first[0].atomic_publish  # the server is >= 2.12
    again = await bus.ensure_streams(standard_streams())
    assert [(s.name, s.created, s.updated) for s in again] == [(s.name, False, False) for s in first]
    [changed] = await bus.ensure_streams([replace(events_stream(), max_msg_size=1 << 20)])
    assert changed.updated and not changed.created


async def test_retried_publish_is_deduplicated(events_bus: Bus) -> None:
    env = event()
    first = await events_bus.publish(env, JOB)
    retry = await events_bus.publish(env, JOB)
    assert not first.duplicate
    assert retry.duplicate and retry.seq == first.seq
    assert await stored(events_bus) == [(first.seq, JOB, env.id)]


async def test_expected_sequence_conflict_reports_the_actual_sequence(events_bus: Bus) -> None:
    created = await events_bus.publish(event(n=0), JOB, expected_last_subject_seq=0)
    await events_bus.publish(event("PodTouched", 1), PODS[0])  # other subjects do not interfere
    updated = await events_bus.publish(event("JobRevised", 2), JOB, expected_last_subject_seq=created.seq)
    with pytest.raises(ConcurrencyConflict) as lost:
        await events_bus.publish(event("JobRevised", 3), JOB, expected_last_subject_seq=created.seq)
    assert (lost.value.subject, lost.value.expected, lost.value.actual) == (JOB, created.seq, updated.seq)
    assert await events_bus.last_subject_seq(JOB) == updated.seq


async def test_a_guard_compares_one_producers_events_about_an_object(events_bus: Bus) -> None:
    """admission guards its writes with its own events of the object, whatever their type; another
    producer's events about the same object do not make it conflict."""
    guard = subjects.guard_subject("job", "default", "train", "admission")
    submitted = subjects.event_subject("job", "default", "train", "JobSubmitted", "admission")
    updated = subjects.event_subject("job", "default", "train", "JobUpdated", "admission")
    status = subjects.event_subject("job", "default", "train", "JobStatusChanged", "job-controller")
    first = await events_bus.publish(event(n=0), submitted, expected_last_subject_seq=0, guard=guard)
    await events_bus.publish(event("JobNoted", 1), status)
    second = await events_bus.publish(
        event("JobRevised", 2), updated, expected_last_subject_seq=first.seq, guard=guard
    )
    with pytest.raises(ConcurrencyConflict) as lost:
        await events_bus.publish(
            event("JobRevised", 3), updated, expected_last_subject_seq=first.seq, guard=guard
        )
    assert (lost.value.subject, lost.value.expected, lost.value.actual) == (guard, first.seq, second.seq)
    batch = [BatchItem(event("JobRevised", 4), updated, expected_last_subject_seq=first.seq, guard=guard)]
    with pytest.raises(ConcurrencyConflict):
        await events_bus.publish_batch(batch)
    assert await events_bus.last_subject_seq(guard) == second.seq


async def test_retried_compare_and_set_publish_is_not_a_conflict(events_bus: Bus) -> None:
    # The server checks the expected sequence before deduplicating: a retry of a stored CAS publish
    # must still be recognised as the same event.
    env = event()
    first = await events_bus.publish(env, JOB, expected_last_subject_seq=0)
    retry = await events_bus.publish(env, JOB, expected_last_subject_seq=0)
    assert retry.duplicate and retry.seq == first.seq


async def test_atomic_batch_commits_contiguously_in_order(events_bus: Bus) -> None:
    await events_bus.publish(event(), JOB)
    envs = [event("PodTouched", i) for i in range(3)]
    ack = await events_bus.publish_batch(
        [
            BatchItem(env, subject, expected_last_subject_seq=0)
            for subject, env in zip(PODS, envs, strict=True)
        ]
    )
    assert (ack.first_seq, ack.last_seq, ack.count) == (2, 4, 3)
    assert (await stored(events_bus))[1:] == [
        (seq, subject, env.id) for seq, subject, env in zip(range(2, 5), PODS, envs, strict=True)
    ]


async def test_atomic_batch_with_one_failing_check_stores_nothing(events_bus: Bus) -> None:
    existing = await events_bus.publish(event("PodTouched"), PODS[1])
    before = await stored(events_bus)
    items = [
        BatchItem(event("PodPlaced", 1), PODS[0], expected_last_subject_seq=0),
        BatchItem(event("PodPlaced", 2), PODS[1], expected_last_subject_seq=0),  # stale: PODS[1] exists
        BatchItem(event("PodPlaced", 3), PODS[2]),
    ]
    with pytest.raises(ConcurrencyConflict) as conflict:
        await events_bus.publish_batch(items)
    assert (conflict.value.subject, conflict.value.actual) == (PODS[1], existing.seq)
    assert await stored(events_bus) == before
    assert await events_bus.last_seq(STREAM) == existing.seq


async def test_repeated_batch_is_reported_as_duplicate_and_stores_nothing_twice(events_bus: Bus) -> None:
    items = [BatchItem(event("PodPlaced", 1), PODS[0]), BatchItem(event("PodPlaced", 2), PODS[1])]
    ack = await events_bus.publish_batch(items)
    with pytest.raises(DuplicateBatch):
        await events_bus.publish_batch(items)
    guarded = [BatchItem(event("PodPlaced", 3), PODS[2], expected_last_subject_seq=0)]
    await events_bus.publish_batch(guarded)
    with pytest.raises(DuplicateBatch):  # its expected sequence no longer holds, but only because of itself
        await events_bus.publish_batch(guarded)
    assert await events_bus.last_seq(STREAM) == ack.last_seq + 1


async def test_single_event_batch(events_bus: Bus) -> None:
    ack = await events_bus.publish_batch([BatchItem(event(), JOB)])
    assert (ack.first_seq, ack.last_seq) == (1, 1)


async def test_batch_on_a_stream_without_atomic_publish_is_refused(bus: Bus) -> None:
    plain = StreamSpec(name="PLAIN", subjects=("plain.>",))
    await bus.ensure_streams([plain])
    with pytest.raises(AtomicBatchUnsupported):
        await bus.publish_batch([BatchItem(event(), "plain.a"), BatchItem(event(n=1), "plain.b")])
    assert await bus.last_seq("PLAIN") == 0


async def test_batch_arguments_are_checked(events_bus: Bus) -> None:
    env = event()
    with pytest.raises(ValueError, match="at least one"):
        await events_bus.publish_batch([])
    with pytest.raises(ValueError, match="same event id"):
        await events_bus.publish_batch([BatchItem(env, JOB), BatchItem(env, PODS[0])])


async def test_pipelined_publish_keeps_order_and_deduplicates(events_bus: Bus) -> None:
    items = [(event("PodStatusChanged", i), PODS[i % 3]) for i in range(1000)]
    acks = await events_bus.publish_pipelined(items, window=64)
    assert [a.seq for a in acks] == list(range(1, 1001))
    again = await events_bus.publish_pipelined(items[:10], window=4)
    assert [a.duplicate for a in again] == [True] * 10
    assert await stored(events_bus) == [
        (seq, subject, env.id) for seq, (env, subject) in enumerate(items, start=1)
    ]


async def test_a_pipelined_publish_within_its_window_is_written_in_one_go(events_bus: Bus) -> None:
    """Outputs sent before any ack is awaited leave in a few writes; past the window, each ack awaited
    lets one more message out (what the Publisher's wide window avoids)."""
    transport = events_bus.nc._transport
    assert transport is not None
    writes = 0
    real = transport.writelines

    def counted(data: Any) -> None:
        nonlocal writes
        writes += 1
        real(data)

    transport.writelines = counted  # type: ignore[method-assign]
    items = [(event("PodStatusChanged", i), PODS[i % 3]) for i in range(600)]
    await events_bus.publish_pipelined(items, window=PIPELINE_WINDOW)
    wide, writes = writes, 0
    narrow = [(event("PodStatusChanged", 1000 + i), PODS[i % 3]) for i in range(600)]
    await events_bus.publish_pipelined(narrow, window=64)
    assert wide <= 3 < 100 < writes
