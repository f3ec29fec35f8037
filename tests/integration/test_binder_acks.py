"""The binder acknowledges a fetched batch of plans together, after committing them together: one write
for all the acks and their replies read together, not one round trip per plan (docs/scaling.md,
"Binder"), against real nats-server and etcd."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from binder_stack import Heartbeats, Stack, bound_exactly, created, no_plans_left, pod_keys, send_plan
from support.builders import gang, node
from support.waiting import Eventually

from contracts.plans import Bind, PlanMessage
from shared.bus.consumers import Delivery
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM

GANGS = 6


async def test_a_fetched_batch_of_plans_is_acknowledged_together(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually, monkeypatch: pytest.MonkeyPatch
) -> None:
    acking, most = 0, 0
    ack = Delivery.ack

    async def counted(delivery: Delivery, **kwargs: Any) -> None:
        nonlocal acking, most
        acking += 1
        most = max(most, acking)
        try:
            await ack(delivery, **kwargs)
        finally:
            acking -= 1

    monkeypatch.setattr(Delivery, "ack", counted)
    gangs = [gang(f"g{i}", 1) for i in range(GANGS)]
    beats.beating |= {"n1"}
    await created(bus, node("n1", cpu=16), *(obj for g in gangs for obj in g))
    seq = await bus.last_seq(EVENTS_STREAM)  # the plans wait for the binder to have folded the pods
    # on the plans stream before the binder starts: its first fetch takes them all
    for i, g in enumerate(gangs):
        await send_plan(
            bus, PlanMessage(str(uuid.uuid4()), "test", seq, (Bind(pod_keys(g)[0], f"default/g{i}", "n1"),))
        )
    binder = await stack.binder()
    await eventually(lambda: binder.health()["role"] == "leader", what="the binder to lead")
    await eventually(lambda: bound_exactly(bus, GANGS), what="every plan committed")
    await eventually(lambda: no_plans_left(bus), what="every plan acknowledged")
    assert most == GANGS, f"at most {most} of {GANGS} plans' acks under way at once"
