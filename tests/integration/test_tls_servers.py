"""nats-server and etcd serving TLS with a CA from shared/security/tls.py, and this project's clients on
them: they connect with the CA, survive a restart of the server over TLS, and a client that trusts
another CA gets a clear error at once instead of waiting (nats-py alone would wait forever)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import nats.errors
import pytest
from nats.aio.msg import Msg

from services.cli.stack.stack_tls import StackTls, issue_tls
from shared.bus.jetstream import Bus
from shared.bus.tls_handshake import TlsHandshakeFailed
from shared.security.tls import new_ca, write_pair
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Etcd

ANSWER_TIMEOUT_S = 10.0


@pytest.fixture
def tls(tmp_path: Path) -> StackTls:
    return issue_tls(tmp_path)


@pytest.fixture
def nats_tls(tmp_path: Path, tls: StackTls) -> Iterator[NatsServer]:
    server = NatsServer.start_in(tmp_path / "nats", tls=tls.nats)
    yield server
    server.stop()


@pytest.fixture
def etcd_tls(tmp_path: Path, tls: StackTls) -> Iterator[EtcdServer]:
    server = EtcdServer.start_in(tmp_path / "etcd", tls=tls.etcd)
    yield server
    server.stop()


async def test_a_bus_client_reconnects_over_tls_after_the_server_restarts(
    nats_tls: NatsServer, tls: StackTls
) -> None:
    bus = await Bus.connect(nats_tls.url, tls_ca=str(tls.ca), reconnect_wait_s=0.1)

    async def echo(msg: Msg) -> None:
        await msg.respond(msg.data)

    try:
        assert bus.nc.connected_url is not None and bus.nc.connected_url.scheme == "tls"
        await bus.nc.subscribe("tls.echo", cb=echo)  # subscribed again by the client on reconnecting
        await nats_tls.arestart()
        async with asyncio.timeout(ANSWER_TIMEOUT_S):
            while True:  # requests fail until the client is back, then one is answered
                try:
                    reply = await bus.nc.request("tls.echo", b"again", timeout=1.0)
                    break
                except nats.errors.Error:
                    await asyncio.sleep(0.1)
        assert reply.data == b"again"
    finally:
        await bus.close()


async def test_a_bus_client_trusting_another_ca_fails_at_once(nats_tls: NatsServer, tmp_path: Path) -> None:
    write_pair(new_ca(), tmp_path / "other.pem", tmp_path / "other.key")
    async with asyncio.timeout(ANSWER_TIMEOUT_S):
        with pytest.raises(TlsHandshakeFailed, match="certificate verify failed") as failed:
            await Bus.connect(nats_tls.url, tls_ca=str(tmp_path / "other.pem"))
    assert failed.value.verify_failed


async def test_an_etcd_client_keeps_working_over_tls_after_the_server_restarts(
    etcd_tls: EtcdServer, tls: StackTls
) -> None:
    etcd = await Etcd.connect(*etcd_tls.endpoint, tls_ca=str(tls.ca))
    try:
        await etcd.put("/tls/before", b"1")
        await etcd_tls.arestart()
        await etcd.wait_ready(ANSWER_TIMEOUT_S)
        assert (await etcd.get("/tls/before")) is not None
    finally:
        await etcd.close()
