"""Every plan ends committed, refused or dead-lettered, never left on LAHAR_PLANS: a plan whose events the
log would not store through all its deliveries, and a plan too old to commit, against real nats-server
and etcd (the log made to refuse writes by the server itself: LAHAR_EVENTS full, discarding new)."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Awaitable

from binder_stack import (
    QUIET,
    Heartbeats,
    Logged,
    Stack,
    bound_exactly,
    created,
    dead_letters_exactly,
    no_plans_left,
    pod_keys,
    rejections,
    send_plan,
)
from nats.js import api
from support.builders import gang, node
from support.waiting import Eventually

from contracts.plans import Bind, PlanMessage
from services.binder.service import BinderConfig, BinderService
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, PLANS_STREAM
from shared.telemetry.metrics import Registry

# few deliveries, close together, and a sweep that looks often: the same path as the defaults, sooner
FAST = {"plan_max_deliver": 3, "plan_attempts": 2, "plan_retry_max_s": 1.0, "plan_sweep_s": 0.3}


async def log_writable(bus: Bus, writable: bool) -> None:
    """Make LAHAR_EVENTS refuse every new event (full, discarding new ones), or take them again."""
    config = (await bus.jsm.stream_info(EVENTS_STREAM)).config
    if writable:
        config = dataclasses.replace(config, max_msgs=-1)
    else:
        held = (await bus.jsm.stream_info(EVENTS_STREAM)).state.messages
        config = dataclasses.replace(config, max_msgs=held, discard=api.DiscardPolicy.NEW)
    await bus.jsm.update_stream(config)


async def consumer_gave_up(bus: Bus, count: int) -> bool:
    """The consumer delivers nothing more (every plan past max_deliver) while `count` plans are stored."""
    info = await bus.jsm.consumer_info(PLANS_STREAM, "binder")
    stored = (await bus.jsm.stream_info(PLANS_STREAM)).state.messages
    return not info.num_pending and not info.num_ack_pending and stored == count


async def test_plans_whose_events_the_log_refused_through_every_delivery_are_settled_after_all(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually
) -> None:
    binder = await stack.binder(**FAST)
    await eventually(lambda: binder.health()["role"] == "leader", what="the binder to lead")
    beats.beating |= {"n1"}
    g1, g2 = gang("g1", 1), gang("g2", 1)
    await created(bus, node("n1", cpu=4), *g1, *g2)
    await binder.run_until_idle(15)

    await log_writable(bus, False)
    # one plan the binder accepts (its events then wait in the ledger, in flight), one it refuses
    good = PlanMessage(str(uuid.uuid4()), "test", 0, (Bind(pod_keys(g1)[0], "default/g1", "n1"),))
    refused = PlanMessage(str(uuid.uuid4()), "test", 0, (Bind(pod_keys(g2)[0], "default/g2", "nowhere"),))
    for plan in (good, refused):
        await send_plan(bus, plan)
    # Before: the server stopped delivering them after max_deliver and they stayed on the stream for good.
    # (a refused pipelined publish is only noticed when its ack times out, 5 s, so each try is slow)
    await eventually(
        lambda: consumer_gave_up(bus, 2), what="both plans past their last delivery", timeout_s=60
    )
    # the refused plan waits for its PlanRejected to be stored before it is moved
    assert await dead_letters_exactly(bus, 0) == [] and await rejections(bus) == []
    assert binder.health()["ok"]

    await log_writable(bus, True)
    # the accepted plan is committed (its events sent again); the refused one is answered and moved
    bound = await eventually(lambda: bound_exactly(bus, 1), what="the accepted plan committed")
    assert bound[0].key == pod_keys(g1)[0]
    (letter,) = await eventually(
        lambda: dead_letters_exactly(bus, 1), what="the refused plan dead-lettered", timeout_s=30
    )
    assert (letter.reason, letter.answer, letter.deliveries) == ("retries_exhausted", "PlanRejected", 3)
    rejected = await rejections(bus)
    assert [(e.key, e.env.payload["plan"]) for e in rejected] == [("default/g2", refused.plan_id)]
    await eventually(lambda: no_plans_left(bus), what="no plan left on the plans stream")
    assert binder.binder_metrics.dead_letters.labels("retries_exhausted").value == 1
    await binder.run_until_idle(15)


async def test_a_plan_stored_long_before_the_binder_reads_it_is_refused_as_stale(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually
) -> None:
    # the binder's clock five minutes ahead: every plan it reads was stored five minutes before
    bus2, etcd2 = await stack._connect()
    config = BinderConfig(**{**QUIET, "instance_id": "binder-a"})
    binder = BinderService(bus2, etcd2, config, registry=Registry(), clock=lambda: time.time() + 300)
    await stack._start(binder)
    await eventually(lambda: binder.health()["role"] == "leader", what="the binder to lead")
    beats.beating |= {"n1"}
    g1 = gang("g1", 1)
    await created(bus, node("n1", cpu=4), *g1)
    await binder.run_until_idle(15)
    stale = PlanMessage(str(uuid.uuid4()), "test", 0, (Bind(pod_keys(g1)[0], "default/g1", "n1"),))
    await send_plan(bus, stale)
    (rejected,) = await eventually(lambda: _some(rejections(bus)), what="the stale plan refused")
    assert rejected.env.payload["plan"] == stale.plan_id
    assert "stale plan: stored 300 s ago" in rejected.env.payload["reason"]
    assert await bound_exactly(bus, 0) == []
    assert binder.binder_metrics.rejected.labels("stale").value == 1
    await eventually(lambda: no_plans_left(bus), what="the plan off the plans stream")


async def _some(found: Awaitable[list[Logged]]) -> list[Logged] | None:
    return (await found) or None
