"""Poison messages, written down where an operator can look at them (docs/reliability.md, "Poison
messages: quarantine and dead letters").

- A quarantine record (LAHAR_QUARANTINE, lahar.quarantine.<service>.<seq>): an event of the log a service
  set aside. The log cannot be edited, so every replay meets the event again; the record is written
  once per (service, seq), refused by the stream the second time (an expected last subject sequence
  of 0), so replays and replicas that set the same event aside agree on one record.
- A dead letter (LAHAR_DEADLETTER, lahar.dead.<stream>.<consumer>): a work-queue message (a manifest, a
  plan) a consumer gave up on, with its subject, headers and bytes, so it can be looked at and published
  again. Its Nats-Msg-Id is (stream, consumer, seq): moving it twice within the dedup window stores it once.

The records are JSON of the classes in contracts/bus_messages.py.
"""

from __future__ import annotations

import asyncio
import hashlib

import msgspec
import nats.errors
import nats.js.errors

from contracts.bus_messages import DeadLetter, DeadLetterReason, QuarantineRecord, ReconcileFailure
from shared.bus.consumers import Delivery
from shared.bus.errors import BusError
from shared.bus.jetstream import Bus
from shared.bus.records import StreamRecord
from shared.bus.subjects import (
    DEADLETTER_ROOT,
    DEADLETTER_STREAM,
    QUARANTINE_STREAM,
    dead_letter_subject,
    quarantine_filter,
    quarantine_subject,
    reconcile_failure_filter,
    reconcile_failure_subject,
)

# JetStream's "wrong last sequence": the quarantine record's subject holds a record already.
_WRONG_LAST_SEQUENCE = 10071
_TRANSIENT = (nats.errors.TimeoutError, nats.errors.NoRespondersError, asyncio.TimeoutError)
MAX_ERROR_CHARS = 2000  # an exception's text can be anything: a record stays a small message


def encoded(record: QuarantineRecord | ReconcileFailure | DeadLetter) -> bytes:
    """A record as it is stored: JSON (a dead letter's bytes in base64)."""
    return msgspec.json.encode(record)


class RecordRefused(BusError):
    """The stream refused the record (not a missing reply: trying again will not help)."""


def error_text(exc: BaseException) -> str:
    text = str(exc) or repr(exc)
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "..."


async def _publish(bus: Bus, subject: str, data: bytes, headers: dict[str, str]) -> bool:
    """Store one record; False when the stream already holds it. Raises BusError when it could not be
    stored (RecordRefused when the stream said no)."""
    try:
        ack = await bus.js.publish(subject, data, timeout=bus.request_timeout_s, headers=headers)
    except nats.js.errors.APIError as exc:
        if exc.err_code == _WRONG_LAST_SEQUENCE:
            return False
        raise RecordRefused(f"{subject}: {exc.description} (code {exc.err_code})") from exc
    except (*_TRANSIENT, nats.errors.Error) as exc:
        raise BusError(f"{subject}: not stored ({exc!r})") from exc
    return not ack.duplicate


async def record_quarantined(bus: Bus, record: QuarantineRecord) -> bool:
    """Write a quarantine record; False when one for (service, seq) exists already."""
    headers = {
        "Nats-Msg-Id": f"quarantine/{record.service}/{record.seq}",
        "Nats-Expected-Last-Subject-Sequence": "0",
    }
    subject = quarantine_subject(record.service, record.seq)
    return await _publish(bus, subject, encoded(record), headers)


def key_digest(key: str) -> str:
    """A key's subject token: any hashable a core picks, so a digest of its text rather than the text."""
    return hashlib.sha256(key.encode()).hexdigest()[:24]


async def record_reconcile_failure(bus: Bus, record: ReconcileFailure) -> bool:
    """Write a failing-reconcile record; False when this key's failure at this seq is stored already."""
    digest = key_digest(record.key)
    headers = {"Nats-Msg-Id": f"reconcile/{record.service}/{digest}/{record.seq}"}
    return await _publish(bus, reconcile_failure_subject(record.service, digest), encoded(record), headers)


async def move_to_dead_letters(
    bus: Bus,
    delivery: Delivery,
    consumer: str,
    reason: DeadLetterReason,
    exc: BaseException,
    *,
    now: float,
    answer: str = "",
) -> None:
    """Copy a delivered message to the dead-letter stream (the caller then settles it on its own
    stream). Raises BusError when the copy could not be stored."""
    await dead_letter_record(
        bus, delivery.record, delivery.num_delivered, consumer, reason, exc, now=now, answer=answer
    )


async def dead_letter_record(
    bus: Bus,
    message: StreamRecord,
    deliveries: int,
    consumer: str,
    reason: DeadLetterReason,
    exc: BaseException,
    *,
    now: float,
    answer: str = "",
) -> None:
    """Copy a message of a work queue (delivered or not) to the dead-letter stream; raises BusError when
    the copy could not be stored."""
    letter = DeadLetter(
        stream=message.stream,
        consumer=consumer,
        seq=message.seq,
        subject=message.subject,
        headers=dict(message.headers),
        data=message.data,
        deliveries=deliveries,
        reason=reason,
        error_type=type(exc).__name__,
        error=error_text(exc),
        answer=answer,
        time=now,
    )
    headers = {"Nats-Msg-Id": f"dead/{message.stream}/{consumer}/{message.seq}"}
    subject = dead_letter_subject(message.stream, consumer)
    await _publish(bus, subject, encoded(letter), headers)


async def read_quarantine(bus: Bus, service: str | None = None) -> list[tuple[int, QuarantineRecord]]:
    """Every quarantine record (of one service), with its sequence in LAHAR_QUARANTINE."""
    return [
        (record.seq, msgspec.json.decode(record.data, type=QuarantineRecord))
        for record in await _records(bus, QUARANTINE_STREAM, quarantine_filter(service))
    ]


async def read_reconcile_failures(bus: Bus, service: str | None = None) -> list[tuple[int, ReconcileFailure]]:
    """Every failing-reconcile record (of one service), with its sequence in LAHAR_QUARANTINE."""
    return [
        (record.seq, msgspec.json.decode(record.data, type=ReconcileFailure))
        for record in await _records(bus, QUARANTINE_STREAM, reconcile_failure_filter(service))
    ]


async def read_dead_letters(bus: Bus) -> list[tuple[int, DeadLetter]]:
    """Every dead letter, with its sequence in LAHAR_DEADLETTER."""
    return [
        (record.seq, msgspec.json.decode(record.data, type=DeadLetter))
        for record in await _records(bus, DEADLETTER_STREAM, f"{DEADLETTER_ROOT}.>")
    ]


async def _records(bus: Bus, stream: str, subject_filter: str) -> list[StreamRecord]:
    try:
        info = await bus.jsm.stream_info(stream)
    except nats.js.errors.NotFoundError:
        return []  # nothing was ever set aside
    if not info.state.messages:
        return []
    first = int(info.state.first_seq or 1)
    return [record async for record in bus.replay(stream, first, subject_filter)]
