"""A gap in the binder's reading of the log without any disconnect (its consumer deleted on the server,
which the client notices by the missed idle heartbeats and recreates) counts as time the binder could not
hear: every node gets a fresh timeout. Against real nats-server and etcd."""

from __future__ import annotations

from binder_stack import Heartbeats, Stack, created
from support.builders import node
from support.waiting import Eventually

from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM


async def test_a_consumer_lost_on_the_server_gives_every_node_a_fresh_timeout(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually
) -> None:
    binder = await stack.binder(node_timeout_s=30.0)
    await eventually(lambda: binder.health()["role"] == "leader", what="the binder to lead")
    beats.beating |= {"n1"}
    await created(bus, node("n1", cpu=4))
    await eventually(lambda: "n1" in binder.state.core.ledger.nodes, what="n1 registered")
    before = binder.state.core.liveness.watching_since
    assert binder.metrics.log_gaps.value == 0

    # The server forgets the binder's consumer; the connection stays up (no disconnect callback).
    consumers = [info.name for info in await bus.jsm.consumers_info(EVENTS_STREAM)]
    assert consumers  # the binder's ordered consumer
    for name in consumers:
        await bus.jsm.delete_consumer(EVENTS_STREAM, name)
    await created(bus, node("n2", cpu=4))

    # The client recreated it from the next sequence: nothing is lost, and the gap is noticed.
    await eventually(lambda: "n2" in binder.state.core.ledger.nodes, what="n2 registered after the gap")
    assert binder.metrics.log_gaps.value == 1
    assert binder.state.core.liveness.watching_since > before  # every node's silence counts from now
    assert binder.health()["ok"] and binder.health()["hearing_heartbeats"]
    await binder.run_until_idle(15)
