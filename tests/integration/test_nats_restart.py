from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator

import pytest
from runner_toy import ToyCore
from support.waiting import Eventually
from test_runner import fold_log, ping

from shared.bus import subjects
from shared.bus.envelope import Envelope
from shared.bus.jetstream import BatchItem, Bus
from shared.bus.streams import events_stream, standard_streams
from shared.runner import EventSourcedService, RunnerConfig
from shared.servers import NatsServer
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry

STREAM = subjects.EVENTS_STREAM
JOB = subjects.event_subject("job", "default", "train", "JobCreated", "tests")


def event(n: int) -> Envelope:
    return Envelope.create(
        "Tick", time=1_700_000_000.0 + n, producer="tests", correlation_id="c", payload={"n": n}
    )


async def test_file_store_keeps_the_log_across_a_restart(private_nats: NatsServer) -> None:
    bus = await Bus.connect(private_nats.url, name="restart-test", reconnect_wait_s=0.1)
    try:
        await bus.ensure_streams(standard_streams())
        before = [event(i) for i in range(5)]
        await bus.publish_pipelined([(env, JOB) for env in before])
        pid = private_nats.pid

        await private_nats.arestart()
        assert private_nats.pid != pid

        # The same connection reconnects by itself; the stream, its sequence and its dedup state survived.
        assert await bus.last_seq(STREAM) == 5
        assert (await bus.publish(before[-1], JOB)).duplicate
        ack = await bus.publish(event(5), JOB, expected_last_subject_seq=5)
        assert ack.seq == 6
        batch = await bus.publish_batch([BatchItem(event(6), JOB), BatchItem(event(7), JOB)])
        assert (batch.first_seq, batch.last_seq) == (7, 8)
        replayed = [r.envelope().payload["n"] async for r in bus.replay(STREAM)]
        assert replayed == list(range(8))
        # Re-ensuring after the restart finds the streams exactly as specified.
        again = await bus.ensure_streams(standard_streams())
        assert [(s.name, s.created, s.updated) for s in again] == [
            (spec.name, False, False) for spec in standard_streams()
        ]
    finally:
        await bus.close()


def test_server_restarts_on_the_same_ports_and_stops_by_pid(private_nats: NatsServer) -> None:
    url, monitor = private_nats.url, private_nats.monitor_url
    private_nats.restart()
    assert (private_nats.url, private_nats.monitor_url) == (url, monitor)
    private_nats.stop()
    assert not private_nats.running
    private_nats.stop()  # idempotent
    private_nats.start()
    assert private_nats.running and private_nats.url == url
    assert "lahar: starting" in private_nats.log_tail()


async def test_stream_survives_a_crash(private_nats: NatsServer) -> None:
    bus = await Bus.connect(private_nats.url, name="crash-test", reconnect_wait_s=0.1)
    try:
        await bus.ensure_streams(standard_streams())
        acks = await bus.publish_pipelined([(event(i), JOB) for i in range(3)])
        await bus.nc.flush()
        private_nats.kill()  # SIGKILL: no orderly shutdown of the file store
        assert not private_nats.running
        await private_nats.astart()
        assert await bus.last_seq(STREAM) == acks[-1].seq
        assert [r.seq async for r in bus.replay(STREAM)] == [a.seq for a in acks]
    finally:
        await bus.close()


@pytest.mark.slow  # the client notices the lost consumer after two missed heartbeats
async def test_follow_resumes_after_a_restart(private_nats: NatsServer) -> None:
    bus = await Bus.connect(private_nats.url, name="follow-test", reconnect_wait_s=0.1)
    received: asyncio.Queue[int] = asyncio.Queue()

    async def run() -> None:
        async for record in bus.follow(STREAM):
            await received.put(record.envelope().payload["n"])

    await bus.ensure_streams(standard_streams())
    follower = asyncio.create_task(run())
    try:
        await bus.publish(event(0), JOB)
        assert await asyncio.wait_for(received.get(), 10) == 0
        await private_nats.arestart()
        await bus.publish(event(1), JOB)
        # The client recreates its lost consumer after two missed heartbeats, from the next sequence.
        assert await asyncio.wait_for(received.get(), 20) == 1
        await bus.publish(event(2), JOB)
        assert await asyncio.wait_for(received.get(), 10) == 2
        assert received.empty()
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        await bus.close()


@pytest.mark.slow  # waits for the reconnects after the crash
async def test_a_service_rides_out_a_nats_crash_and_resumes_where_it_was(
    private_nats: NatsServer, etcd: Etcd, eventually: Eventually
) -> None:
    bus = await Bus.connect(private_nats.url, name="outage-test", reconnect_wait_s=0.1)
    await bus.ensure_streams([events_stream()])
    service = EventSourcedService(
        ToyCore(), bus, etcd, RunnerConfig(reconcile_interval_s=0.2), registry=Registry()
    )
    try:
        await ping(bus, "before")
        await service.run_until_idle(15)
        private_nats.kill()
        await eventually(lambda: not service.health()["ok"], what="the service unhealthy without NATS")
        assert not service.stopped, "the service exited when NATS went away"
        await private_nats.astart()
        await eventually(lambda: service.health()["ok"], what="healthy again", timeout_s=20)
        # the live log resumes after the last applied event: the ping after the outage is echoed
        await ping(bus, "after")
        await service.run_until_idle(30)
        echoes = collections.Counter(
            [env.payload["ping"] async for env in _envelopes(bus) if env.type == "Echo"]
        )
        assert sorted(echoes.values()) == [1, 1], echoes
        assert service.state == await fold_log(bus)  # nothing applied twice or skipped
    finally:
        await service.shutdown()
        await bus.close()


async def _envelopes(bus: Bus) -> AsyncIterator[Envelope]:
    async for record in bus.replay(STREAM):
        yield record.envelope()
