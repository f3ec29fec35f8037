"""The loop's quarantine: events it set aside (and keys whose reconcile raised), recorded on
LAHAR_QUARANTINE without ever holding the loop up.

The loop applies events synchronously and must go on whatever happens to NATS, so setting an event aside
only queues its record here; `run` writes the queue in the background, retrying while the stream cannot
be reached. The queue is bounded: past QUEUED_RECORDS the oldest record is dropped, logged and counted
(the event stays in the log and is set aside again at the next replay, so its record is written then).
"""

from __future__ import annotations

import asyncio
from collections import deque

import nats.errors
import structlog

from contracts.bus_messages import QuarantineReason, QuarantineRecord, ReconcileFailure
from contracts.identity import WrongObject
from contracts.payloads import PayloadError
from shared.bus.envelope import Envelope
from shared.bus.errors import BusError
from shared.bus.jetstream import Bus
from shared.bus.poison import RecordRefused, error_text, record_quarantined, record_reconcile_failure
from shared.bus.records import StreamRecord
from shared.bus.streams import quarantine_stream
from shared.bus.subjects import EventSubject
from shared.runner.metrics import RunnerMetrics
from shared.waiting import first_set

log = structlog.get_logger(__name__)

QUEUED_RECORDS = 10_000
RETRY_S = 1.0


def unreadable(exc: Exception) -> QuarantineReason:
    """Why a record that could not be made an event is set aside: a payload about another object than
    its subject names (contracts/identity.py: a core keys its state by the subject and may read the
    payload's names, so it sees neither); a payload that is not what its type promises (a forged event,
    a writer's bug); or no event at all."""
    if isinstance(exc, WrongObject):
        return "wrong_object"
    if isinstance(exc, PayloadError):
        return "invalid_payload"
    return "not_an_event"


class Quarantine:
    def __init__(self, bus: Bus, metrics: RunnerMetrics, *, stream_replicas: int) -> None:
        self.bus = bus
        self.metrics = metrics
        self.stream_replicas = stream_replicas
        self._queue: deque[QuarantineRecord | ReconcileFailure] = deque()
        self._queued = asyncio.Event()
        self._stream_ready = False

    @property
    def pending(self) -> int:
        """Records not written yet."""
        return len(self._queue)

    def note(self, record: QuarantineRecord | ReconcileFailure) -> None:
        """Queue a record to be written (never blocks, never raises)."""
        if len(self._queue) >= QUEUED_RECORDS:
            dropped = self._queue.popleft()
            log.error("quarantine record dropped: too many unwritten", seq=dropped.seq)
            self.metrics.quarantine_records.labels(self.metrics.service, "dropped").inc()
        self._queue.append(record)
        self._queued.set()

    def set_aside(
        self,
        service: str,
        record: StreamRecord,
        ref: EventSubject | None,
        env: Envelope | None,
        reason: QuarantineReason,
        exc: Exception,
        *,
        now: float,
    ) -> None:
        """Log an event the loop set aside, with its sequence, and queue its record."""
        event_type = env.type if env is not None else (ref.type if ref is not None else "")
        log.error(
            "event quarantined",
            seq=record.seq,
            subject=record.subject,
            type=event_type,
            reason=reason,
            error=repr(exc),
            exc_info=reason in ("apply_error", "touched_error"),  # a core's bug: where it raised
        )
        self.note(
            QuarantineRecord(
                service=service,
                seq=record.seq,
                subject=record.subject,
                type=event_type,
                id=env.id if env is not None else "",
                reason=reason,
                error_type=type(exc).__name__,
                error=error_text(exc),
                time=now,
            )
        )

    async def run(self, stopping: asyncio.Event) -> None:
        """Write queued records until stopping; a record the stream cannot take now is tried again."""
        while not stopping.is_set():
            if not self._queue:
                self._queued.clear()
                await first_set(self._queued, stopping)
                continue
            if not await self.flush():
                await first_set(stopping, timeout_s=RETRY_S)

    async def flush(self) -> bool:
        """Write what is queued, in order; False when the stream could not be reached (the rest waits)."""
        while self._queue:
            record = self._queue[0]
            try:
                if not self._stream_ready:
                    await self.bus.ensure_streams([quarantine_stream(replicas=self.stream_replicas)])
                    self._stream_ready = True
                if isinstance(record, QuarantineRecord):
                    fresh = await record_quarantined(self.bus, record)
                else:
                    fresh = await record_reconcile_failure(self.bus, record)
            except RecordRefused as exc:
                # the stream will not take it (permissions, a limit): retrying cannot help
                log.error("quarantine record refused", seq=record.seq, error=str(exc))
                result = "refused"
            except (TimeoutError, BusError, nats.errors.Error, OSError) as exc:
                log.warning("quarantine record not written yet", seq=record.seq, error=str(exc))
                return False
            except Exception as exc:  # the record of a poison event must not stop a service either
                log.error("quarantine record not written", seq=record.seq, error=repr(exc))
                result = "refused"
            else:
                result = "recorded" if fresh else "duplicate"
            self._queue.popleft()
            self.metrics.quarantine_records.labels(self.metrics.service, result).inc()
        return True
