"""The local stack's supervisor keeps nats-server and etcd running: a killed server is reaped and started
again on the same ports and data directory, and its record says what happened."""

from __future__ import annotations

import asyncio
import os
import signal

from support.waiting import Eventually

from services.cli.stack.layout import RESTARTING, RUNNING, RunningServer
from services.cli.stack.server_keeper import ServerKeeper, record_of
from shared.bus.jetstream import Bus
from shared.bus.streams import standard_streams
from shared.servers import EtcdServer, NatsServer, http_ok
from shared.store.etcd import Etcd


def gone(pid: int) -> bool:
    """No such process any more, not even a zombie: it was reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def keep(
    server: NatsServer | EtcdServer,
) -> tuple[RunningServer, list[str], asyncio.Event, asyncio.Task[None]]:
    record = record_of(server)
    phases: list[str] = []
    stopping = asyncio.Event()
    task = asyncio.create_task(
        ServerKeeper(server, record, lambda: phases.append(record.phase), stopping).run()
    )
    return record, phases, stopping, task


async def test_a_killed_nats_server_is_reaped_and_back_on_its_port_with_its_streams(
    private_nats: NatsServer, eventually: Eventually
) -> None:
    bus = await Bus.connect(private_nats.url, name="keeper-test", reconnect_wait_s=0.1)
    record, phases, stopping, keeper = await keep(private_nats)
    try:
        await bus.ensure_streams(standard_streams())
        old_pid, url = record.pid, record.url
        os.kill(old_pid, signal.SIGKILL)
        await eventually(
            lambda: record.phase == RUNNING and record.pid != old_pid, what="the server restarted"
        )
        assert gone(old_pid), "the killed server was left a zombie"
        assert (record.restarts, phases) == (1, [RESTARTING, RUNNING])
        assert private_nats.url == url and private_nats.pid == record.pid
        assert http_ok(record.health_url)
        # the store survived: every stream is found, none created again
        again = await bus.ensure_streams(standard_streams())
        assert [(s.name, s.created) for s in again] == [(spec.name, False) for spec in standard_streams()]
        assert "exited with -9; restarting on the same ports" in private_nats.log_tail()
    finally:
        stopping.set()
        await keeper
        await bus.close()
    assert private_nats.running, "stopping the keeper leaves the server to its owner"


async def test_etcd_killed_again_right_after_its_restart_comes_back_again_with_its_data(
    private_etcd: EtcdServer, eventually: Eventually
) -> None:
    record, phases, stopping, keeper = await keep(private_etcd)
    etcd = await Etcd.connect(*private_etcd.endpoint)
    try:
        await etcd.put("/lahar/kept", b"1")
        for kill in range(1, 3):  # the second restart comes after a longer backoff
            old_pid = record.pid
            os.kill(old_pid, signal.SIGKILL)
            await eventually(
                lambda old=old_pid: record.phase == RUNNING and record.pid != old, what="etcd restarted"
            )
            assert gone(old_pid) and record.restarts == kill
        assert phases == [RESTARTING, RUNNING] * 2
        await etcd.wait_ready(10)
        kept = await etcd.get("/lahar/kept")
        assert kept is not None and kept.value == b"1"
    finally:
        stopping.set()
        await keeper
        await etcd.close()
