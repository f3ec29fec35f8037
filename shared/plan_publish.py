"""Sending a plan to the binder: one message on LAHAR_PLANS (`lahar.plan.<replica>`), MessagePack body
(contracts/plans.py), headers:

- `Nats-Msg-Id`: the plan id, so a retried send of the same decision is stored once;
- `traceparent` / `tracestate`: the plan's span, a child of the PodGroup's trace, so the binder's commit
  and its events join the job's trace;
- `Lahar-Plan-Published-At`: epoch seconds when the replica sent it (the binder's bind latency).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import nats.errors
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from contracts.plans import PUBLISHED_AT_HEADER, PlanMessage, encode_plan
from shared.bus.jetstream import Bus
from shared.bus.subjects import plan_subject
from shared.telemetry.tracing import JOB_ATTRIBUTE, extract_context, trace_headers


class PlanNotSent(Exception):
    """The bus did not take the plan (no stream, no reply, refused)."""


# Plans sent before the first of their acks is awaited: a session's plans go out together (the client
# writes what was sent in one loop iteration at once), not one round trip each.
_WINDOW = 512


async def publish_plans(
    bus: Bus,
    tracer: Tracer,
    plans: Sequence[PlanMessage],
    *,
    traceparent_of: Callable[[PlanMessage], str | None],
    now: float,
) -> dict[str, PlanNotSent]:
    """Send plans in order, each under a span that is a child of its PodGroup's trace when known
    (`traceparent_of`); returns the plans the bus did not take, by plan id (the others are stored)."""
    failed: dict[str, PlanNotSent] = {}
    pending: deque[tuple[PlanMessage, Span, asyncio.Future[Any]]] = deque()
    try:
        for plan in plans:
            span = _plan_span(tracer, plan, traceparent_of(plan))
            with trace.use_span(span, end_on_exit=False):
                headers = {"Nats-Msg-Id": plan.plan_id, PUBLISHED_AT_HEADER: repr(now), **trace_headers()}
            try:
                future = await bus.js.publish_async(
                    plan_subject(plan.replica), encode_plan(plan), headers=headers
                )
            except nats.errors.Error as exc:
                _settled(failed, plan, span, exc)
                continue
            pending.append((plan, span, future))
            if len(pending) >= _WINDOW:
                await _settle(bus, failed, *pending[0])
                pending.popleft()  # settled: not left to the cleanup below
        while pending:
            await _settle(bus, failed, *pending[0])
            pending.popleft()
    finally:
        for _, span, future in pending:  # cancelled midway: nothing waits on the rest
            future.cancel()
            span.end()
    return failed


async def publish_plan(
    bus: Bus, tracer: Tracer, plan: PlanMessage, *, traceparent: str | None, now: float
) -> None:
    """Send one plan (publish_plans); raises PlanNotSent if the bus did not take it."""
    failed = await publish_plans(bus, tracer, [plan], traceparent_of=lambda _: traceparent, now=now)
    if failed:
        raise failed[plan.plan_id]


def _plan_span(tracer: Tracer, plan: PlanMessage, traceparent: str | None) -> Span:
    context = extract_context({"traceparent": traceparent}) if traceparent else None
    attributes: dict[str, AttributeValue] = {
        JOB_ATTRIBUTE: plan.subject,
        "lahar.plan.id": plan.plan_id,
        "lahar.plan.seq": plan.seq,
        "lahar.plan.binds": len(plan.binds),
        "lahar.plan.evictions": len(plan.evictions),
    }
    return tracer.start_span(
        f"plan {plan.subject}", context=context, kind=SpanKind.PRODUCER, attributes=attributes
    )


async def _settle(
    bus: Bus, failed: dict[str, PlanNotSent], plan: PlanMessage, span: Span, future: asyncio.Future[Any]
) -> None:
    try:
        await asyncio.wait_for(future, bus.request_timeout_s)
    except (nats.errors.Error, TimeoutError) as exc:  # an API error (refused, no stream) is one
        _settled(failed, plan, span, exc)
        return
    span.end()


def _settled(failed: dict[str, PlanNotSent], plan: PlanMessage, span: Span, exc: BaseException) -> None:
    failed[plan.plan_id] = PlanNotSent(f"plan {plan.plan_id}: {exc!r}")
    span.set_status(Status(StatusCode.ERROR, repr(exc)))
    span.end()
