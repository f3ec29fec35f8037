"""The bus: publishing envelopes to JetStream and reading them back.

Every publish carries ``Nats-Msg-Id`` = envelope id, so retrying after a lost reply is safe inside the
stream's dedup window, and the W3C trace context as headers, so a trace follows the event without
decoding it. Three ways to publish, from strongest to fastest:

- publish(): one event, optionally compare-and-set on its subject's last sequence;
- publish_batch(): several events committed atomically (all stored or none), each optionally CAS'd;
- publish_pipelined(): many events in flight at once, for facts that need no CAS.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client as NatsClient

from shared.bus import replay as _replay
from shared.bus.consumers import ConsumerSpec, DurableConsumer
from shared.bus.envelope import Envelope
from shared.bus.errors import (
    AtomicBatchUnsupported,
    BatchRejected,
    BusError,
    ConcurrencyConflict,
    DuplicateBatch,
)
from shared.bus.identity_check import refuse_wrong_object
from shared.bus.log_gaps import LogGap
from shared.bus.records import BatchAck, PublishAck, StreamRecord
from shared.bus.replay import Filters
from shared.bus.retries import LEADERLESS, LEADERLESS_WAIT_S, until_answered, with_retries
from shared.bus.streams import EnsuredStream, StreamSpec, ensure_stream
from shared.bus.tls_handshake import ErrorCallback, first_connection
from shared.security.credentials import read_credentials
from shared.security.tls import client_context

log = structlog.get_logger(__name__)

# JetStream error codes (nats-server's server/errors.json).
_WRONG_LAST_SEQUENCE = 10071
_BATCH_DUPLICATE_MSG_ID = 10201
_ATOMIC_DISABLED = 10174
_LAST_SEQ_IN_DESCRIPTION = re.compile(r"wrong last sequence: (\d+)")

MAX_BATCH_MESSAGES = 1000  # the server refuses larger atomic batches


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One event of an atomic batch, with an optional compare-and-set: expected_last_subject_seq is the
    last sequence on `guard` (a subject wildcard; default: the item's own subject)."""

    envelope: Envelope
    subject: str
    expected_last_subject_seq: int | None = None
    guard: str | None = None


@dataclass(frozen=True, slots=True)
class _LastMsg:
    stream: str
    seq: int
    msg_id: str | None


def _headers(
    env: Envelope, expected_last_subject_seq: int | None = None, guard: str | None = None
) -> dict[str, str]:
    headers = {"Nats-Msg-Id": env.id}
    if env.traceparent is not None:
        headers["traceparent"] = env.traceparent
    if env.tracestate is not None:
        headers["tracestate"] = env.tracestate
    if expected_last_subject_seq is not None:
        headers["Nats-Expected-Last-Subject-Sequence"] = str(expected_last_subject_seq)
        if guard is not None:
            headers["Nats-Expected-Last-Subject-Sequence-Subject"] = guard
    return headers


# What a connection listener is told: the connection dropped, it is back (subscriptions renewed), or
# the client dropped messages of a subscription that could not keep up (a slow consumer).
ConnectionChange = Literal["disconnected", "reconnected", "dropped"]
ConnectionListener = Callable[[ConnectionChange], None]


class Bus:
    """A NATS connection with JetStream publishing, consuming and replay for lahar envelopes."""

    def __init__(
        self,
        nc: NatsClient,
        *,
        request_timeout_s: float = 5.0,
        publish_attempts: int = 3,
        leaderless_wait_s: float = LEADERLESS_WAIT_S,
        listeners: list[ConnectionListener] | None = None,
        js_api_prefix: str | None = None,
    ) -> None:
        self.nc = nc
        # a client reaches JetStream through the calls its account imports (shared/security)
        api = {} if js_api_prefix is None else {"prefix": js_api_prefix}
        self.js = nc.jetstream(timeout=request_timeout_s, **api)
        self.jsm = nc.jsm(timeout=request_timeout_s, **api)
        self.request_timeout_s = request_timeout_s
        self.publish_attempts = publish_attempts
        self.leaderless_wait_s = leaderless_wait_s
        # told of the connection's changes when the bus was made by `connect` (which wires the client's
        # callbacks to them); a bus around a client connected elsewhere tells them nothing
        self._listeners = [] if listeners is None else listeners

    def on_connection_change(self, listener: ConnectionListener) -> None:
        """Call `listener` whenever the connection drops, comes back or drops messages: whoever judges
        others by what it hears (the binder's failure detector) must know when it could not hear."""
        self._listeners.append(listener)

    @classmethod
    async def connect(
        cls,
        servers: str | Sequence[str],
        *,
        name: str | None = None,
        request_timeout_s: float = 5.0,
        reconnect_wait_s: float = 0.5,
        creds: str | None = None,
        tls_ca: str | None = None,
    ) -> Bus:
        """Connect, reconnecting forever after the connection drops (a service outlives server restarts).
        Listeners added with `on_connection_change` hear of every drop, reconnection and slow consumer.

        servers: one URL, several (a list, or one string comma-separated): the servers of a cluster.
        The client connects to one of them (in random order, so clients spread over the cluster) and,
        when it loses that one, reconnects to the next that answers, resubscribing its subscriptions.
        creds: the user's credentials file (shared/security/credentials.py); None for an open server.
        tls_ca: the CA file the servers' certificates must chain to (TLS); None for plain TCP."""
        listeners: list[ConnectionListener] = []
        credentials = read_credentials(creds) if creds else None

        def tell(change: ConnectionChange) -> None:
            for listener in list(listeners):
                listener(change)

        async def on_error(exc: Exception) -> None:
            if isinstance(exc, nats.errors.SlowConsumerError):
                tell("dropped")
            log.warning("nats connection error", error=repr(exc))

        async def on_disconnected() -> None:
            tell("disconnected")

        async def on_reconnected() -> None:
            tell("reconnected")

        pool = [url.strip() for url in servers.split(",")] if isinstance(servers, str) else list(servers)
        tls = {"tls": client_context(tls_ca)} if tls_ca else {}

        def connect(error_cb: ErrorCallback) -> Awaitable[NatsClient]:
            return nats.connect(
                servers=pool,
                name=name,
                connect_timeout=request_timeout_s,
                reconnect_time_wait=reconnect_wait_s,
                max_reconnect_attempts=-1,
                error_cb=error_cb,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
                **(credentials.connect_options() if credentials is not None else {}),
                **tls,
            )

        # a certificate that does not verify raises (TlsHandshakeFailed): no retry can fix it
        nc = await first_connection(connect, on_error, tls=bool(tls), retry_wait_s=reconnect_wait_s)
        return cls(
            nc,
            request_timeout_s=request_timeout_s,
            listeners=listeners,
            js_api_prefix=credentials.js_api_prefix if credentials is not None else None,
        )

    async def close(self) -> None:
        await self.nc.close()

    @property
    def server_supports_atomic(self) -> bool:
        version = self.nc.connected_server_version
        return (version.major, version.minor) >= (2, 12)

    async def ensure_streams(self, specs: Iterable[StreamSpec]) -> list[EnsuredStream]:
        """Create or update each stream; a stream electing its leader is waited for (retries.py)."""
        atomic = self.server_supports_atomic
        return [
            await until_answered(
                f"ensuring stream {spec.name}",
                partial(ensure_stream, self.jsm, spec, atomic_supported=atomic),
                self.leaderless_wait_s,
            )
            for spec in specs
        ]

    async def last_seq(self, stream: str) -> int:
        """The stream's last sequence (0 when empty): the log position a view can be 'at'."""
        info = await self.jsm.stream_info(stream)
        return int(info.state.last_seq)

    async def last_subject_seq(self, subject: str) -> int:
        """The last sequence on subject, 0 if it has none: the value to expect for a compare-and-set."""
        last = await self._last_msg(subject)
        return 0 if last is None else last.seq

    async def _last_msg(self, subject: str) -> _LastMsg | None:
        stream = await self.jsm.find_stream_name_by_subject(subject)
        try:
            raw = await self.jsm.get_msg(stream, subject=subject)
        except nats.js.errors.NotFoundError:
            return None
        return _LastMsg(stream=stream, seq=int(raw.seq or 0), msg_id=(raw.headers or {}).get("Nats-Msg-Id"))

    async def _request(self, subject: str, data: bytes, headers: dict[str, str], timeout_s: float) -> Any:
        reply = await self.nc.request(subject, data, headers=headers, timeout=timeout_s)
        return json.loads(reply.data) if reply.data else {}

    async def _with_retries(self, what: str, send: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        return await with_retries(what, send, self.publish_attempts, self.leaderless_wait_s)

    async def publish(
        self,
        envelope: Envelope,
        subject: str,
        *,
        expected_last_subject_seq: int | None = None,
        guard: str | None = None,
        timeout_s: float | None = None,
    ) -> PublishAck:
        """Store one event and wait for the ack; retries timeouts with the same message id.

        With expected_last_subject_seq, the event is stored only if the last sequence on `guard` (a
        subject wildcard; default: the event's own subject) is that value (0: no message yet); otherwise
        ConcurrencyConflict is raised.
        """
        refuse_wrong_object(envelope, subject)
        data = envelope.encode()
        headers = _headers(envelope, expected_last_subject_seq, guard)
        timeout = timeout_s or self.request_timeout_s
        resp = await self._with_retries(
            f"publish of {envelope.type} {envelope.id} to {subject}",
            lambda: self._request(subject, data, headers, timeout),
        )
        error = resp.get("error")
        if error is None:
            return PublishAck(stream=resp["stream"], seq=resp["seq"], duplicate=bool(resp.get("duplicate")))
        if error.get("err_code") == _WRONG_LAST_SEQUENCE and expected_last_subject_seq is not None:
            return await self._resolve_conflict(guard or subject, envelope, expected_last_subject_seq, error)
        raise BusError(
            f"publish to {subject} refused: {error.get('description')} (code {error.get('err_code')})"
        )

    async def _resolve_conflict(
        self, subject: str, envelope: Envelope, expected: int, error: dict[str, Any]
    ) -> PublishAck:
        # The server checks the expected sequence before deduplicating, so a retried CAS publish whose
        # first attempt was stored looks like a lost race. It is not if the last message is this event
        # (if others wrote after it, the conflict stands and the writer's refresh will show its event).
        last = await self._last_msg(subject)
        if last is not None and last.msg_id == envelope.id:
            return PublishAck(stream=last.stream, seq=last.seq, duplicate=True)
        actual = last.seq if last is not None else _parse_last_seq(error)
        raise ConcurrencyConflict(subject, expected, actual)

    async def publish_batch(self, items: Sequence[BatchItem], *, timeout_s: float | None = None) -> BatchAck:
        """Store all items atomically, in order, at contiguous sequences, or none of them.

        Raises ConcurrencyConflict if an item's expected sequence does not hold, DuplicateBatch if the
        events are already stored (a repeated commit, possibly this call's own retry after a lost reply),
        BatchRejected for any other refusal.
        """
        if not items:
            raise ValueError("an atomic batch needs at least one event")
        if len(items) > MAX_BATCH_MESSAGES:
            raise ValueError(f"an atomic batch holds at most {MAX_BATCH_MESSAGES} events, got {len(items)}")
        for item in items:
            refuse_wrong_object(item.envelope, item.subject)  # refused whole, like any batch
        ids = {item.envelope.id for item in items}
        if len(ids) != len(items):
            raise ValueError("an atomic batch cannot contain the same event id twice")
        messages = [
            (
                item.subject,
                item.envelope.encode(),
                _headers(item.envelope, item.expected_last_subject_seq, item.guard),
            )
            for item in items
        ]
        timeout = timeout_s or self.request_timeout_s
        resp = await self._with_retries(
            f"atomic batch of {len(items)} events", lambda: self._send_batch(messages, timeout)
        )
        error = resp.get("error")
        if error is not None:
            await self._raise_batch_error(items, ids, error)
        last_seq, count = int(resp["seq"]), int(resp["count"])
        return BatchAck(
            stream=resp["stream"], batch_id=resp["batch"], first_seq=last_seq - count + 1, last_seq=last_seq
        )

    async def _send_batch(self, messages: list[tuple[str, bytes, dict[str, str]]], timeout_s: float) -> Any:
        # A fresh batch id per attempt: the server abandons an interrupted batch by itself, and the
        # events' message ids make a repeat of a committed batch fail as a duplicate.
        batch_id = uuid.uuid4().hex
        *head, (last_subject, last_data, last_headers) = messages
        for seq, (subject, data, headers) in enumerate(head, start=1):
            batch_headers = {**headers, "Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(seq)}
            if seq == 1:
                # Waiting for the first message's (empty) ack surfaces a stream that refuses batches
                # before the rest is sent; the middle messages then stream without round trips.
                first = await self._request(subject, data, batch_headers, timeout_s)
                if "error" in first:
                    return first
            else:
                await self.nc.publish(subject, data, headers=batch_headers)
        commit_headers = {
            **last_headers,
            "Nats-Batch-Id": batch_id,
            "Nats-Batch-Sequence": str(len(messages)),
            "Nats-Batch-Commit": "1",
        }
        return await self._request(last_subject, last_data, commit_headers, timeout_s)

    async def _raise_batch_error(
        self, items: Sequence[BatchItem], ids: set[str], error: dict[str, Any]
    ) -> None:
        code, description = error.get("err_code"), str(error.get("description"))
        if code == _BATCH_DUPLICATE_MSG_ID:
            raise DuplicateBatch(description, code)
        if code == _ATOMIC_DISABLED:
            raise AtomicBatchUnsupported(f"stream refuses atomic batches: {description}")
        if code != _WRONG_LAST_SEQUENCE:
            raise BatchRejected(description, code)
        # The server does not say which item failed its check: look at each guarded subject.
        guarded = [
            (item, expected) for item in items if (expected := item.expected_last_subject_seq) is not None
        ]
        for item, expected in guarded:
            last = await self._last_msg(item.guard or item.subject)
            if last is not None and last.msg_id in ids:
                raise DuplicateBatch(f"{description}: this batch's events are already stored", code)
            actual = 0 if last is None else last.seq
            if actual != expected:
                raise ConcurrencyConflict(item.subject, expected, actual)
        first = guarded[0][0] if guarded else items[0]
        where = first.guard or first.subject
        raise ConcurrencyConflict(where, first.expected_last_subject_seq or 0, _parse_last_seq(error))

    async def publish_pipelined(
        self, items: Iterable[tuple[Envelope, str]], *, window: int = 256, timeout_s: float | None = None
    ) -> list[PublishAck]:
        """Publish many events with up to window acks outstanding; acks come back in input order.

        Events are stored in input order. On an error some later events may be stored already; publishing
        the same list again is safe within the dedup window (ids are the envelopes').
        """
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        items = list(items)
        for envelope, subject in items:
            refuse_wrong_object(envelope, subject)  # before any is stored
        timeout = timeout_s or self.request_timeout_s
        acks: list[PublishAck] = []
        pending: deque[tuple[str, asyncio.Future[Any]]] = deque()
        try:
            for envelope, subject in items:
                future = await self.js.publish_async(subject, envelope.encode(), headers=_headers(envelope))
                pending.append((subject, future))
                if len(pending) >= window:
                    acks.append(await _settle(*pending.popleft(), timeout))
            while pending:
                acks.append(await _settle(*pending.popleft(), timeout))
        finally:
            # Unsettled futures after an error: cancel so nothing waits on (or warns about) them.
            for _, future in pending:
                future.cancel()
        return acks

    def replay(
        self, stream: str, from_seq: int = 1, subject_filter: Filters = None, until_seq: int | None = None
    ) -> AsyncIterator[StreamRecord]:
        """Ordered records from from_seq to until_seq (default: the last sequence when iteration starts);
        subject_filter: one subject wildcard, several (any of them), or None for every record."""
        return _replay.replay(self.js, self.jsm, stream, from_seq, subject_filter, until_seq)

    def replay_batches(
        self, stream: str, from_seq: int = 1, subject_filter: Filters = None, until_seq: int | None = None
    ) -> AsyncIterator[list[StreamRecord]]:
        """replay() in batches of what has arrived (cheaper per record)."""
        return _replay.replay_batches(self.js, self.jsm, stream, from_seq, subject_filter, until_seq)

    def follow(
        self, stream: str, from_seq: int = 1, subject_filter: Filters = None
    ) -> AsyncIterator[StreamRecord]:
        """Ordered records from from_seq on, without end."""
        return _replay.follow(self.js, stream, from_seq, subject_filter)

    def follow_batches(
        self,
        stream: str,
        from_seq: int = 1,
        subject_filter: Filters = None,
        on_gap: Callable[[LogGap], None] | None = None,
    ) -> AsyncIterator[list[StreamRecord]]:
        """follow() in batches: each what arrived while the previous one was being handled; on_gap
        hears of the gaps the client healed by itself (shared/bus/log_gaps.py)."""
        return _replay.follow_batches(self.js, stream, from_seq, subject_filter, on_gap=on_gap)

    async def durable(self, spec: ConsumerSpec) -> DurableConsumer:
        """Create or update a durable pull consumer and bind to it."""
        return await DurableConsumer.bind(self.js, self.jsm, spec)


async def _settle(subject: str, future: asyncio.Future[Any], timeout_s: float) -> PublishAck:
    try:
        ack = await asyncio.wait_for(future, timeout_s)
    except TimeoutError as exc:
        raise BusError(f"no ack for a pipelined publish to {subject} within {timeout_s}s") from exc
    except LEADERLESS as exc:  # the stream is electing a leader: the caller publishes again later
        raise BusError(f"no stream answered a pipelined publish to {subject}") from exc
    except nats.js.errors.APIError as exc:
        raise BusError(
            f"pipelined publish to {subject} refused: {exc.description} (code {exc.err_code})"
        ) from exc
    return PublishAck(stream=ack.stream, seq=ack.seq, duplicate=bool(ack.duplicate))


def _parse_last_seq(error: dict[str, Any]) -> int | None:
    match = _LAST_SEQ_IN_DESCRIPTION.search(str(error.get("description", "")))
    return int(match.group(1)) if match else None
