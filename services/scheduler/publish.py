"""Sending a plan to the binder: one message on LAHAR_PLANS (`lahar.plan.<replica>`), MessagePack body
(services.scheduler.plans), headers:

- `Nats-Msg-Id`: the plan id, so a retried send of the same decision is stored once;
- `traceparent` / `tracestate`: the plan's span, a child of the PodGroup's trace, so the binder's commit
  and its events join the job's trace;
- `Lahar-Plan-Published-At`: epoch seconds when the replica sent it (the binder's bind latency).
"""

from __future__ import annotations

import nats.errors
from opentelemetry.trace import SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

from services.scheduler.plans import PlanMessage, encode_plan
from shared.bus.jetstream import Bus
from shared.bus.subjects import plan_subject
from shared.telemetry.tracing import JOB_ATTRIBUTE, extract_context, trace_headers

PUBLISHED_AT_HEADER = "Lahar-Plan-Published-At"


class PlanNotSent(Exception):
    """The bus did not take the plan (no stream, no reply, refused)."""


async def publish_plan(
    bus: Bus, tracer: Tracer, plan: PlanMessage, *, traceparent: str | None, now: float
) -> None:
    """Send plan under a span that is a child of traceparent (the PodGroup's trace, when known)."""
    context = extract_context({"traceparent": traceparent}) if traceparent else None
    attributes: dict[str, AttributeValue] = {
        JOB_ATTRIBUTE: plan.subject,
        "lahar.plan.id": plan.plan_id,
        "lahar.plan.seq": plan.seq,
        "lahar.plan.binds": len(plan.binds),
        "lahar.plan.evictions": len(plan.evictions),
    }
    with tracer.start_as_current_span(
        f"plan {plan.subject}", context=context, kind=SpanKind.PRODUCER, attributes=attributes
    ):
        headers = {"Nats-Msg-Id": plan.plan_id, PUBLISHED_AT_HEADER: repr(now), **trace_headers()}
        try:
            await bus.js.publish(
                plan_subject(plan.replica), encode_plan(plan), headers=headers, timeout=bus.request_timeout_s
            )
        except (nats.errors.Error, TimeoutError) as exc:
            raise PlanNotSent(f"plan {plan.plan_id}: {exc!r}") from exc
