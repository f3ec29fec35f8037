"""Plans the plans consumer will never deliver again, found and settled (docs/reliability.md, "Plans
that cannot be committed").

A plan whose events could not be stored is delivered again with a growing delay (plan_retry_delay), and
one older than plan_max_age_s is refused rather than committed late, so almost every plan is committed
or refused within its deliveries. One that is not (the log refused every write through all of them)
stays on the work queue once the server stops delivering it after max_deliver: nothing would ever take
it off. The sweep finds such plans while the consumer is idle: with nothing pending and nothing awaiting
an ack, every message the consumer was given and that is still on LAHAR_PLANS is past max_deliver (a
work queue keeps only unacknowledged messages). Each is moved to the dead letters (retries_exhausted),
its replica is told with a PlanRejected, and it is deleted from the stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import nats.js.errors
import structlog

from contracts.plans import PlanError
from services.binder.core.core import rejection
from services.binder.core.verify import Verdict
from services.binder.plan_reader import read_plan
from shared.bus.errors import BusError
from shared.bus.jetstream import Bus
from shared.bus.poison import dead_letter_record
from shared.bus.records import StreamRecord
from shared.bus.subjects import PLANS_STREAM

if TYPE_CHECKING:
    from services.binder.plan_intake import PlanIntake

log = structlog.get_logger(__name__)

FIRST_RETRY_S = 0.5


def plan_retry_delay(num_delivered: int, max_s: float) -> float:
    """How long a plan whose events could not be stored waits before its next delivery: 0.5 s doubling
    up to max_s, so that its deliveries span minutes (an outage) rather than seconds."""
    return min(max_s, FIRST_RETRY_S * 2 ** min(max(num_delivered - 1, 0), 16))


async def abandoned_plans(bus: Bus, consumer: str) -> list[StreamRecord]:
    """The plans on LAHAR_PLANS the consumer will not deliver again ([] unless it is idle)."""
    try:
        info = await bus.jsm.consumer_info(PLANS_STREAM, consumer)
        stream = await bus.jsm.stream_info(PLANS_STREAM)
    except nats.js.errors.NotFoundError:
        return []
    if info.num_pending or info.num_ack_pending or not stream.state.messages:
        return []
    # only what it was given before that answer: a plan published since is not abandoned
    delivered = int(info.delivered.stream_seq or 0) if info.delivered is not None else 0
    first = int(stream.state.first_seq or 1)
    if delivered < first:
        return []
    # read one by one (a work-queue stream takes no second consumer, not even an ordered one)
    records: list[StreamRecord] = []
    seq = first
    while seq <= delivered:
        try:
            msg = await bus.jsm.get_msg(PLANS_STREAM, seq=seq, next=True)
        except nats.js.errors.NotFoundError:
            break
        if msg.seq is None or msg.seq > delivered:
            break
        headers = {k: v for k, v in (msg.headers or {}).items() if isinstance(v, str)}
        records.append(StreamRecord(PLANS_STREAM, msg.seq, msg.subject or "", msg.data or b"", headers))
        seq = msg.seq + 1
    return records


async def settle_abandoned(binder: PlanIntake, record: StreamRecord) -> None:
    """Take one abandoned plan off the stream: its replica told (PlanRejected, when it has a PodGroup
    to address and was not answered yet), the plan moved to the dead letters, then deleted. Returns
    early, to be tried at the next sweep, when the log or the dead letters cannot take it now."""
    from services.binder.plan_intake import CONSUMER, publishable  # which imports this module

    deliveries = binder.config.plan_max_deliver
    error = RuntimeError(f"could not be committed in {deliveries} deliveries (its events were not stored)")
    try:
        plan = read_plan(record.data)
    except PlanError:
        plan = None
    if plan is not None and plan.plan_id in binder.state.core.inflight:
        # accepted into the ledger, its events not all stored: a full reconcile sends them again (its
        # deliveries, which did too, are over); once they are in the log the plan is answered
        binder.fold(lambda state: state)
        return
    if plan is None or plan.plan_id not in binder.state.answered:
        answer = ""
        if plan is not None:
            rejected = rejection(plan, Verdict(False, str(error), binder.state.core.ledger.seq))
            try:
                publishable(rejected)
            except ValueError:
                pass  # no PodGroup to address it to
            else:
                if await binder.publisher.publish([rejected], lambda: binder.leading):
                    return
                answer = "PlanRejected"
        try:
            await dead_letter_record(
                binder.bus,
                record,
                deliveries,
                CONSUMER,
                "retries_exhausted",
                error,
                now=binder.clock(),
                answer=answer,
            )
        except BusError as exc:
            log.warning("abandoned plan not moved to the dead letters yet", seq=record.seq, error=str(exc))
            return
        binder.binder_metrics.dead_letters.labels("retries_exhausted").inc()
        log.error("a plan past its last delivery moved to the dead letters", seq=record.seq, answer=answer)
    await binder.bus.jsm.delete_msg(PLANS_STREAM, record.seq)
