"""A session's plans go to the binder's stream together: every one stored in order, and one the stream
refuses does not keep the others from being stored."""

from __future__ import annotations

import dataclasses

from opentelemetry import trace

from contracts.plans import Bind, PlanMessage, decode_plan
from shared.bus.jetstream import Bus
from shared.bus.streams import plans_stream
from shared.bus.subjects import PLANS_STREAM
from shared.plan_publish import publish_plans

_TRACER = trace.get_tracer("test")


def _plan(index: int, pods: int = 1) -> PlanMessage:
    binds = tuple(Bind(f"default/g{index}-worker-{i}", f"default/g{index}", "n1") for i in range(pods))
    return PlanMessage(f"plan-{index}", "scheduler-0", index, binds)


async def _stored(bus: Bus) -> list[str]:
    """The plan ids the stream holds, in stream order (a work-queue stream: read by sequence)."""
    info = await bus.jsm.stream_info(PLANS_STREAM)
    stored = [await bus.jsm.get_msg(PLANS_STREAM, seq) for seq in range(1, info.state.last_seq + 1)]
    return [decode_plan(msg.data or b"").plan_id for msg in stored]


async def test_every_plan_is_stored_in_order(bus: Bus) -> None:
    await bus.ensure_streams([plans_stream()])
    plans = [_plan(i) for i in range(40)]
    failed = await publish_plans(bus, _TRACER, plans, traceparent_of=lambda _: None, now=1.0)
    assert failed == {}
    assert await _stored(bus) == [p.plan_id for p in plans]


async def test_a_refused_plan_is_named_and_the_others_are_stored(bus: Bus) -> None:
    # a stream that takes small messages only: the plan of a hundred binds is refused by the server
    await bus.ensure_streams([dataclasses.replace(plans_stream(), max_msg_size=2048)])
    plans = [_plan(0), _plan(1, pods=100), _plan(2)]
    failed = await publish_plans(bus, _TRACER, plans, traceparent_of=lambda _: None, now=1.0)
    assert list(failed) == ["plan-1"] and "plan-1" in str(failed["plan-1"])
    assert await _stored(bus) == ["plan-0", "plan-2"]
