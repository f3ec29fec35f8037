"""Durable pull consumers with explicit acknowledgement and bounded redelivery."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.manager import JetStreamManager

from shared.bus.records import StreamRecord
from shared.bus.reply_meta import reply_meta

# What a pull request gets from a consumer without a leader (503, or nobody to answer it).
LEADERLESS_FETCH = (nats.js.errors.ServiceUnavailableError, nats.errors.NoRespondersError)
_LEADERLESS_PAUSE_S = 0.2


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """A durable pull consumer.

    A message not acknowledged within ack_wait_s (or nak'ed) is delivered again, at most max_deliver
    times in all; after that the server stops delivering it and publishes a MAX_DELIVERIES advisory.
    backoff_s, when given, replaces ack_wait_s for successive redeliveries.
    """

    stream: str
    name: str
    filter_subjects: tuple[str, ...] = ()
    ack_wait_s: float = 30.0
    max_deliver: int = 5
    max_ack_pending: int = 1000
    backoff_s: tuple[float, ...] = ()
    deliver_from_seq: int | None = None

    def to_config(self) -> api.ConsumerConfig:
        if self.max_deliver < 1:
            raise ValueError(f"max_deliver must be >= 1 (bounded redelivery), got {self.max_deliver}")
        filters = list(self.filter_subjects)
        return api.ConsumerConfig(
            name=self.name,
            durable_name=self.name,
            ack_policy=api.AckPolicy.EXPLICIT,
            ack_wait=self.ack_wait_s,
            max_deliver=self.max_deliver,
            max_ack_pending=self.max_ack_pending,
            backoff=list(self.backoff_s) or None,
            filter_subject=filters[0] if len(filters) == 1 else None,
            filter_subjects=filters if len(filters) > 1 else None,
            deliver_policy=(
                api.DeliverPolicy.ALL
                if self.deliver_from_seq is None
                else api.DeliverPolicy.BY_START_SEQUENCE
            ),
            opt_start_seq=self.deliver_from_seq,
        )


@dataclass(frozen=True, slots=True)
class Delivery:
    """A delivered message and the means to settle it."""

    record: StreamRecord
    num_delivered: int
    num_pending: int
    _msg: Msg
    stored_at: float = 0.0  # epoch seconds the stream stored it (the server's clock; 0: unknown)

    async def ack(self, *, confirm: bool = True, timeout_s: float = 5.0) -> None:
        """Done with it. confirm waits for the server to record the ack, so a crash right after
        cannot cause a redelivery of work the caller considers finished."""
        if confirm:
            await self._msg.ack_sync(timeout=timeout_s)
        else:
            await self._msg.ack()

    async def nak(self, delay_s: float | None = None) -> None:
        """Not done: deliver again (after delay_s), counting towards max_deliver."""
        await self._msg.nak(delay=delay_s)

    async def in_progress(self) -> None:
        """Still working on it: restart the ack wait timer."""
        await self._msg.in_progress()

    async def term(self) -> None:
        """Never deliver it again (poison message)."""
        await self._msg.term()


def _to_delivery(msg: Msg) -> Delivery:
    meta = reply_meta(msg.reply)
    record = StreamRecord(
        stream=meta.stream,
        seq=meta.stream_seq,
        subject=msg.subject,
        data=msg.data,
        headers=dict(msg.headers or {}),
    )
    return Delivery(
        record=record,
        num_delivered=meta.delivered,
        num_pending=meta.pending,
        _msg=msg,
        stored_at=meta.stored_at,
    )


class DurableConsumer:
    """A bound pull subscription on a durable consumer."""

    def __init__(self, spec: ConsumerSpec, sub: JetStreamContext.PullSubscription) -> None:
        self.spec = spec
        self._sub = sub

    @classmethod
    async def bind(cls, js: JetStreamContext, jsm: JetStreamManager, spec: ConsumerSpec) -> DurableConsumer:
        """Create or update the consumer to match spec, then subscribe to it."""
        await jsm.add_consumer(spec.stream, config=spec.to_config())
        sub = await js.pull_subscribe_bind(durable=spec.name, stream=spec.stream)
        return cls(spec, sub)

    async def fetch(self, batch: int = 64, timeout_s: float = 5.0) -> Sequence[Delivery]:
        """Up to batch messages; waits up to timeout_s for the first, returns [] if none came."""
        try:
            msgs = await self._sub.fetch(batch, timeout=timeout_s)
        except (TimeoutError, nats.errors.TimeoutError):
            return []
        except LEADERLESS_FETCH:
            # the consumer has no leader (its server died; another is elected within seconds): nothing
            # to deliver yet; a pause keeps the caller's next fetch from spinning on the same answer
            await asyncio.sleep(min(timeout_s, _LEADERLESS_PAUSE_S))
            return []
        return [_to_delivery(msg) for msg in msgs]

    async def pending(self) -> int:
        """Messages not yet delivered plus delivered ones awaiting an ack."""
        info = await self._sub.consumer_info()
        return int(info.num_pending or 0) + int(info.num_ack_pending or 0)

    async def close(self) -> None:
        """Stop receiving; the durable consumer and its position stay on the server."""
        await self._sub.unsubscribe()
