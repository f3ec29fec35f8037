"""The binder's plan intake (the leader's): a durable pull consumer on LAHAR_PLANS (a work queue). Each
fetched batch of plans is checked in order with BinderCore.submit_plan against the ledger, its events (or
its PlanRejected) are published, the accepted ones as atomic batches, and only then is each message
acknowledged. A plan delivered again is never committed twice: while its events are on their way the core
knows it in flight, once they are in the log the shell knows it answered. A plan the binder cannot
handle goes to the dead letters after a few tries; plans the consumer will never deliver again are swept
(plan_sweep.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Sequence

import nats.errors
import structlog
from opentelemetry.trace import SpanKind

from contracts import payloads
from contracts.bus_messages import DeadLetterReason
from contracts.plans import PUBLISHED_AT_HEADER, PlanError, PlanMessage
from services.binder.config import BinderConfig
from services.binder.core.core import BinderCore, committed_together, has_pod_events, plan_outputs, rejection
from services.binder.core.verify import Verdict
from services.binder.metrics import BinderMetrics, rejection_reason
from services.binder.plan_reader import read_plan
from services.binder.plan_sweep import abandoned_plans, plan_retry_delay, settle_abandoned
from services.binder.state import BinderShellState, remember_answered
from shared.bus.consumers import ConsumerSpec, Delivery, DurableConsumer
from shared.bus.errors import BusError
from shared.bus.jetstream import MAX_BATCH_MESSAGES
from shared.bus.poison import error_text, move_to_dead_letters
from shared.bus.streams import deadletter_stream, plans_stream
from shared.bus.subjects import PLANS_STREAM, event_subject
from shared.runner import EventSourcedService
from shared.runner_types import Output
from shared.telemetry.tracing import JOB_ATTRIBUTE, extract_context, trace_headers
from shared.waiting import first_set

log = structlog.get_logger(__name__)

CONSUMER = "binder"
_FETCH_WAIT_S = 0.5  # how long an idle fetch waits: bounds how soon the consumer notices a stop
RETRY_S = 0.5


class PlanIntake(EventSourcedService[BinderShellState]):
    """The plan-handling half of BinderService (services/binder/service.py sets these up)."""

    binder: BinderCore
    binder_metrics: BinderMetrics
    config: BinderConfig
    _lead: asyncio.Event  # set while this instance leads
    _applied: asyncio.Event  # set whenever the loop finished a unit of work

    async def _consume_plans(self) -> None:
        replicas = self.config.stream_replicas
        await self.bus.ensure_streams([plans_stream(replicas=replicas), deadletter_stream(replicas=replicas)])
        spec = ConsumerSpec(
            PLANS_STREAM,
            CONSUMER,
            ack_wait_s=self.config.plan_ack_wait_s,
            max_deliver=self.config.plan_max_deliver,
        )
        consumer: DurableConsumer | None = None
        loop = asyncio.get_running_loop()
        sweep_at = loop.time()
        try:
            while not self.stopping.is_set():
                if not self._lead.is_set():
                    await first_set(self._lead, self.stopping)
                    continue
                try:
                    consumer = consumer or await self.bus.durable(spec)
                    deliveries = await consumer.fetch(batch=64, timeout_s=_FETCH_WAIT_S)
                    if not deliveries and loop.time() >= sweep_at:
                        sweep_at = loop.time() + self.config.plan_sweep_s
                        await self._sweep()
                except (nats.errors.Error, TimeoutError) as exc:
                    log.warning("plan consumer interrupted; binding again", error=repr(exc))
                    consumer = None
                    await first_set(self.stopping, timeout_s=RETRY_S)
                    continue
                if not deliveries:
                    continue
                try:
                    await self._handle(deliveries)
                except (nats.errors.Error, TimeoutError) as exc:
                    # An ack, nak or term that did not reach the server: the plans come back (and a
                    # plan already answered is only acknowledged then).
                    log.warning("plans not settled with the server", error=repr(exc))
        finally:
            if consumer is not None:
                with contextlib.suppress(nats.errors.Error):
                    await consumer.close()

    async def _handle(self, deliveries: Sequence[Delivery]) -> None:
        """Check a fetched batch of plans in order against the ledger (each accepted one is folded into it
        at once, so the next is checked against it), publish every accepted plan's events together as
        atomic batches and the rejections beside them, then acknowledge each plan. One round trip per
        batch of plans rather than per plan is what lets the binder keep up with many replicas."""
        if not self.leading or self.stopping.is_set():
            for delivery in deliveries:
                await delivery.nak()  # the next leader (or this one, after a restart) takes it
            return
        plans: list[tuple[Delivery, PlanMessage]] = []
        for delivery in deliveries:
            try:
                plan = read_plan(delivery.record.data)
            except PlanError as exc:
                self.binder_metrics.rejected.labels("invalid").inc()
                log.error("a plan that does not decode", seq=delivery.record.seq, error=str(exc))
                await self._dead_letter(delivery, "undecodable", exc)
                continue
            if plan.plan_id in self.state.answered:
                await delivery.ack()  # answered in the log already: this is a redelivery
                continue
            plans.append((delivery, plan))
        if not plans:
            return
        await self._catch_up(max(plan.seq for _, plan in plans))
        decided: list[tuple[Delivery, PlanMessage, list[Output], bool]] = []
        check_ms: dict[str, float] = {}  # per plan: how long checking it took (Volcano's PreBind stage)
        for delivery, plan in plans:
            started = time.perf_counter()
            try:
                decided.append((delivery, plan, *self._checked(delivery, plan)))
                check_ms[plan.plan_id] = (time.perf_counter() - started) * 1000
            except Exception as exc:
                # One plan the binder cannot handle (a bug its content reaches) must not stop the others,
                # nor the binder at every redelivery: a few tries, then the dead letters.
                answer = await self._failed(delivery, plan, exc)
                if answer is not None:
                    decided.append((delivery, plan, answer, True))
        outputs = committed_together([outputs for _, _, outputs, _ in decided], MAX_BATCH_MESSAGES)
        started = time.perf_counter()
        if await self.publisher.publish(outputs, lambda: self.leading):
            # Accepted plans stay in flight in the ledger (reconcile sends their events again, and so
            # does their next delivery); rejections are decided again. Either way the plans come back.
            # The delay grows with each delivery, so that a plan's deliveries outlast an outage of
            # minutes; by then it is refused as stale, or swept to the dead letters (plan_sweep.py).
            for delivery, *_ in decided:
                await delivery.nak(
                    delay_s=plan_retry_delay(delivery.num_delivered, self.config.plan_retry_max_s)
                )
            return
        commit_ms = (time.perf_counter() - started) * 1000  # (Volcano's Bind stage, for each task)
        # The log answers the other plans (their pod events, their rejections); these it does not tell
        # the binder about (it does not read PodGroupStatusChanged): the publish's ack is their answer.
        status_only = [
            plan.plan_id
            for _, plan, outputs, _ in decided
            if outputs and outputs[0].type == "PodGroupStatusChanged" and not has_pod_events(plan)
        ]
        if status_only:
            self.fold(lambda state: remember_answered(state, status_only), keys=())
        committed: list[str] = []  # "plan id@replica:binds" of the accepted plans, one log line for all
        for delivery, plan, plan_outputs_, fresh in decided:
            if fresh:
                published_at = delivery.record.headers.get(PUBLISHED_AT_HEADER)
                if self._count(plan, plan_outputs_, published_at, check_ms.get(plan.plan_id, 0.0), commit_ms):
                    committed.append(f"{plan.plan_id}@{plan.replica}:{len(plan.binds)}")
        if committed:
            # one line per committed batch, not per plan: a log line costs about as much as checking a plan
            log.info("plans committed", count=len(committed), plans=committed)
        # Acknowledged together: each ack waits for the server to record it, and awaited one by one they
        # cost a write and a read each; together, one write and the replies in a few reads. A plan whose
        # ack fails comes back and is acknowledged then as answered.
        acked = await asyncio.gather(*(delivery.ack() for delivery, *_ in decided), return_exceptions=True)
        failed = next((result for result in acked if isinstance(result, BaseException)), None)
        if failed is not None:
            raise failed

    async def _failed(self, delivery: Delivery, plan: PlanMessage, exc: Exception) -> list[Output] | None:
        """A plan whose handling raised: delivered again later, or after plan_attempts tries moved to the
        dead letters and answered with a PlanRejected when one can be addressed. The answer, if any, is
        published with the batch's outputs and the plan acknowledged after it; None: settled here."""
        self.binder_metrics.failures.inc()
        log.error(
            "the binder failed on a plan",
            plan=plan.plan_id,
            seq=delivery.record.seq,
            deliveries=delivery.num_delivered,
            exc_info=exc,
        )
        if delivery.num_delivered < self.config.plan_attempts:
            await delivery.nak(delay_s=RETRY_S)
            return None
        reason = f"the binder failed on this plan ({type(exc).__name__}: {error_text(exc)})"
        answer = rejection(plan, Verdict(False, reason, self.state.core.ledger.seq))
        try:
            publishable(answer)
        except ValueError:
            await self._dead_letter(delivery, "handling_failed", exc)  # no PodGroup to address it to
            return None
        if not await self._dead_letter(delivery, "handling_failed", exc, answer="PlanRejected", settle=False):
            return None
        return [answer]

    async def _dead_letter(
        self,
        delivery: Delivery,
        reason: DeadLetterReason,
        exc: Exception,
        *,
        answer: str = "",
        settle: bool = True,
    ) -> bool:
        """Move a plan to LAHAR_DEADLETTER and (settle) take it off the plans stream; False when the dead
        letter could not be stored: the plan is then delivered again later."""
        try:
            await move_to_dead_letters(
                self.bus, delivery, CONSUMER, reason, exc, now=self.clock(), answer=answer
            )
        except BusError as err:
            log.warning("plan not moved to the dead letters yet", seq=delivery.record.seq, error=str(err))
            await delivery.nak(delay_s=RETRY_S)
            return False
        self.binder_metrics.dead_letters.labels(reason).inc()
        if settle:
            await delivery.term()
        return True

    async def _sweep(self) -> None:
        """Settle the plans the consumer will never deliver again (plan_sweep.py): each moved to the dead
        letters, its replica told (PlanRejected), then deleted from the stream. What fails is tried
        again at the next sweep (the dead letter's and the rejection's ids make that safe)."""
        for record in await abandoned_plans(self.bus, CONSUMER):
            try:
                await settle_abandoned(self, record)
            except (nats.errors.Error, TimeoutError):
                raise  # the consumer loop binds again and sweeps later
            except Exception:  # a plan that makes the sweep raise must not stop the binder either
                log.exception(
                    "an abandoned plan could not be settled; trying at the next sweep", seq=record.seq
                )

    def _checked(self, delivery: Delivery, plan: PlanMessage) -> tuple[list[Output], bool]:
        """The plan's outputs, decided in a span that joins the plan's trace; when spans are not recorded
        (no exporter), without one, the outputs carrying the plan's trace context as the runner's
        outputs carry their cause's."""
        if not self.publisher.records:
            return self._publishable(
                *self._decide(plan, delivery.stored_at, delivery.record.headers.get("traceparent"))
            )
        attributes = {
            JOB_ATTRIBUTE: plan.subject,
            "lahar.plan.id": plan.plan_id,
            "lahar.plan.replica": plan.replica,
        }
        with self.tracer.start_as_current_span(
            f"commit plan {plan.subject}",
            context=extract_context(delivery.record.headers),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        ) as span:
            traceparent = trace_headers().get("traceparent") or delivery.record.headers.get("traceparent")
            outputs, fresh = self._publishable(*self._decide(plan, delivery.stored_at, traceparent))
            span.set_attribute("lahar.plan.outcome", outputs[0].type if outputs else "in flight")
        return outputs, fresh

    @staticmethod
    def _publishable(outputs: list[Output], fresh: bool) -> tuple[list[Output], bool]:
        for output in outputs:
            publishable(output)  # here, where a bad one fails this plan only, not the whole batch
        return outputs, fresh

    async def _catch_up(self, seq: int) -> None:
        """Wait (boundedly) until the ledger has folded the log up to seq, the position the plan was
        made at: checked against an older ledger, a plan for pods created just before would be refused
        as naming unknown pods. Past the bound the plan is checked as things stand."""
        deadline = asyncio.get_running_loop().time() + self.config.plan_catch_up_s
        while self.seq < seq and not self.stopping.is_set():
            self._applied.clear()
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                log.warning("checking a plan against a ledger behind it", plan_seq=seq, ledger_seq=self.seq)
                return
            await first_set(self._applied, self.stopping, timeout_s=remaining)

    def progressed(self) -> None:
        super().progressed()
        self._applied.set()

    def _decide(
        self, plan: PlanMessage, stored_at: float, traceparent: str | None
    ) -> tuple[list[Output], bool]:
        """The plan's outputs (its events or its rejection) and True; or, when it is in flight (delivered
        again before its events came back), its events again and False. A plan
        stored more than plan_max_age_s ago (its deliveries held up by an outage) is refused: the
        cluster it was decided for has moved on, and its replica places the pods again. The outputs
        belong to the trace `traceparent`."""
        if plan.plan_id in self.state.core.inflight:
            return plan_outputs(plan, traceparent=traceparent), False
        age = self.clock() - stored_at if stored_at else 0.0
        if age > self.config.plan_max_age_s:
            limit = self.config.plan_max_age_s
            reason = f"stale plan: stored {age:.0f} s ago, more than plan_max_age_s ({limit:g} s)"
            stale = rejection(plan, Verdict(False, reason, self.state.core.ledger.seq))
            return [dataclasses.replace(stale, traceparent=traceparent)], True
        self.state.core, outputs = self.binder.submit_plan(
            self.state.core, plan, self.clock(), traceparent=traceparent
        )
        return outputs, True

    def _count(
        self,
        plan: PlanMessage,
        outputs: list[Output],
        published_at: str | None,
        check_ms: float,
        commit_ms: float,
    ) -> bool:
        """Count a decided plan in the metrics; True if it was committed (a rejection is logged here)."""
        if outputs and outputs[0].type == "PlanRejected":
            rejected = outputs[0].payload
            assert isinstance(rejected, payloads.PlanRejected)
            reason = rejected.reason
            self.binder_metrics.rejected.labels(rejection_reason(reason)).inc()
            log.info("plan rejected", plan=plan.plan_id, replica=plan.replica, reason=reason)
            return False
        self.binder_metrics.accepted.inc()
        self.binder_metrics.committed(
            len(plan.binds), [e.reason for e in plan.evictions], check_ms=check_ms, commit_ms=commit_ms
        )
        if published_at is not None:
            with contextlib.suppress(ValueError):
                latency_ms = (self.clock() - float(published_at)) * 1000
                self.binder_metrics.bind_latency_ms.observe(max(0.0, latency_ms))
        return True


def publishable(output: Output) -> None:
    """Raises ValueError when the output has no subject it could be published on (an empty name)."""
    event_subject(output.kind, output.namespace, output.name, output.type, CONSUMER)
