"""The binder's failure detector through a NATS outage (the issue's 'NATS outage -> jobs stuck'): cut off
from NATS for longer than its node timeout, the binder declares no node lost once it is back, while a
node whose agent really stopped is still declared lost, one timeout after the binder could hear again.

The binder's clock is the test's: the outage lasts many node timeouts on that clock however fast the
server comes back. The live node's agent, cut off as well, beats again only after the binder has judged
the nodes a few times since it could hear again (an agent beats every 2 s, a binder judges every tick):
those judgments must not count the outage as the node's silence. Time then passes in steps shorter
than a timeout, each taken once the binder heard the live node at the new time."""

from __future__ import annotations

import time

import pytest
from binder_stack import QUIET, Heartbeats, created, of_type, read_log
from support.builders import node, pod
from support.waiting import Eventually

from services.binder.service import BinderConfig, BinderService
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream, plans_stream
from shared.servers import NatsServer
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry

TIMEOUT_S = 2.0
ALIVE, STOPPED = "n-alive", "n-stopped"


class Clock:
    """Epoch seconds that move only when the test says so; counts how often it was read (the binder
    reads it at every tick to judge its nodes)."""

    def __init__(self) -> None:
        self.now = time.time()
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


@pytest.mark.slow  # the binder stays cut off for longer than its node timeout
async def test_a_binder_cut_off_longer_than_its_node_timeout_loses_only_the_node_that_stopped(
    private_nats: NatsServer, etcd: Etcd, eventually: Eventually
) -> None:
    clock = Clock()
    bus = await Bus.connect(private_nats.url, name="binder", reconnect_wait_s=0.1)
    agents = await Bus.connect(private_nats.url, name="agents", reconnect_wait_s=0.1)
    await bus.ensure_streams([events_stream(), plans_stream()])
    config = BinderConfig(**{**QUIET, "instance_id": "binder-a", "node_timeout_s": TIMEOUT_S})
    binder = BinderService(bus, etcd, config, registry=Registry(), clock=clock)
    live_agent, stopped_agent = Heartbeats(agents, [ALIVE]), Heartbeats(agents, [STOPPED])

    def heard(name: str) -> float:
        return binder.state.core.liveness.heartbeats.get(name, 0.0)

    def ready(name: str) -> bool | None:
        entry = binder.state.core.ledger.nodes.get(name)
        return None if entry is None else entry.ready

    try:
        await created(agents, node(ALIVE), node(STOPPED))
        await created(
            agents, pod("on-alive", "g", node_name=ALIVE), pod("on-stopped", "g", node_name=STOPPED)
        )
        await binder.run_until_idle(20)
        await eventually(lambda: heard(ALIVE) and heard(STOPPED), what="both nodes heard")

        # the stopped node's agent dies, and NATS goes away for many node timeouts of the binder's clock
        await stopped_agent.stop()
        await live_agent.stop()  # cut off too: it beats again only once the binder judged without it
        private_nats.kill()
        await eventually(
            lambda: not binder.health()["hearing_heartbeats"], what="the binder knows it cannot hear"
        )
        clock.now += 10 * TIMEOUT_S
        await private_nats.astart()
        await eventually(lambda: binder.health()["hearing_heartbeats"], what="hearing again", timeout_s=20)
        reads = clock.reads
        await eventually(lambda: clock.reads >= reads + 10, what="the binder judging its nodes again")
        await binder.run_until_idle(20)
        live_agent = Heartbeats(agents, [ALIVE])

        # time goes on in steps of less than a timeout, each once the live node's beat at it was heard
        for _ in range(12):
            if ready(STOPPED) is False:
                break
            clock.now += 0.4 * TIMEOUT_S
            await eventually(lambda: heard(ALIVE) >= clock.now, what="the live node heard", timeout_s=10)
            await binder.run_until_idle(20)
        assert ready(STOPPED) is False, "the node whose agent stopped was never declared lost"
        assert ready(ALIVE) is True

        log = await read_log(bus)
        assert [e.key for e in of_type(log, "NodeNotReady")] == [STOPPED]
        assert [e.key for e in of_type(log, "PodLost")] == ["default/on-stopped"]
    finally:
        await live_agent.stop()
        await stopped_agent.stop()
        await binder.shutdown()
        await agents.close()
        await bus.close()
