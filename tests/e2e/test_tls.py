"""TLS on the stack `lahar up` runs (on by default, docs/security.md): NATS and etcd take TLS clients
only, whose certificates chain to the CA `lahar up` made; a client that speaks plain TCP, or trusts
another CA, gets nowhere; health checks stay on plain loopback HTTP; and the CLI finds the CA by itself."""

from __future__ import annotations

import asyncio
import json
import ssl
import stat

import nats
import nats.errors
import pytest
from e2e.conftest import Stack

from services.cli.stack.layout import NATS
from shared.client import LaharClient
from shared.security.credentials import read_credentials
from shared.security.tls import client_context, new_ca, write_pair
from shared.servers import http_ok
from shared.store.etcd import Etcd, EtcdUnavailable

pytestmark = pytest.mark.timeout(300)

ANSWER_TIMEOUT_S = 10.0


def host_port(url: str) -> tuple[str, int]:
    host, _, port = url.split("://")[-1].rpartition(":")
    return host, int(port)


def test_the_stack_made_a_private_ca_and_says_where_it_is(stack: Stack) -> None:
    tls_dir = stack.home / "tls"
    assert stack.state.tls_ca == str(tls_dir / "ca.pem")
    assert stat.S_IMODE(tls_dir.stat().st_mode) == 0o700
    keys = sorted(p.name for p in tls_dir.glob("*.key"))
    assert keys == ["ca.key", "etcd-peer.key", "etcd.key", "nats.key"]
    assert all(stat.S_IMODE((tls_dir / key).stat().st_mode) == 0o600 for key in keys)
    status = json.loads(stack.lahar("status", "-o", "json").stdout)
    assert status["tls_ca"] == stack.state.tls_ca
    assert status["nats_url"].startswith("tls://")
    assert all(row["state"] == "running" for row in status["processes"]), status["processes"]


async def test_a_plain_tcp_nats_client_is_refused(stack: Stack) -> None:
    """The protocol spoken in the clear, with valid credentials' worth of CONNECT: no PONG ever comes,
    the server drops the connection."""
    reader, writer = await asyncio.open_connection(*host_port(stack.state.nats_url))
    try:
        info = await asyncio.wait_for(reader.readline(), ANSWER_TIMEOUT_S)
        assert json.loads(info.removeprefix(b"INFO "))["tls_required"] is True
        writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n')
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), ANSWER_TIMEOUT_S)  # until the server closes
    finally:
        writer.close()
    assert b"PONG" not in answer


async def test_a_nats_client_that_trusts_another_ca_is_refused(stack: Stack, tmp_path) -> None:
    stranger = new_ca()
    write_pair(stranger, tmp_path / "other-ca.pem", tmp_path / "other-ca.key")
    admin = read_credentials(stack.state.admin_creds).connect_options()
    with pytest.raises(ssl.SSLCertVerificationError):
        await nats.connect(
            stack.state.nats_url,
            allow_reconnect=False,
            connect_timeout=5,
            tls=client_context(tmp_path / "other-ca.pem"),
            **admin,
        )
    nc = await nats.connect(
        stack.state.nats_url,
        allow_reconnect=False,
        connect_timeout=5,
        tls=client_context(stack.state.tls_ca),
        **admin,
    )
    await nc.close()


async def test_an_etcd_client_without_tls_gets_nothing_and_one_with_the_ca_reads(stack: Stack) -> None:
    host, port = host_port(stack.state.etcd_endpoint)
    with pytest.raises(EtcdUnavailable):
        await Etcd.connect(host, port, timeout_s=2.0)
    etcd = await Etcd.connect(host, port, tls_ca=stack.state.tls_ca)
    try:
        nodes, _ = await etcd.get_prefix("/lahar/objects/node/")
        assert nodes, "the read model lists the stack's nodes"
    finally:
        await etcd.close()


def test_health_checks_stay_plain_http_on_loopback(stack: Stack) -> None:
    for server in stack.state.servers:
        assert server.health_url.startswith("http://127.0.0.1:"), server
        assert http_ok(server.health_url), server
        assert server.url.startswith("tls://" if server.name == NATS else "https://"), server


def test_the_cli_finds_the_ca_by_itself_and_a_wrong_one_is_an_error(stack: Stack, tmp_path) -> None:
    applied = stack.lahar("apply", "-f", "examples/gang-job.yaml")
    assert applied.returncode == 0, applied.stderr
    waited = stack.lahar("wait", "job", "gang-demo", "--for", "Completed", "--timeout", "120s")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert "eof_received" not in waited.stderr  # nats-py's TLS quirk stays out of the output
    write_pair(new_ca(), tmp_path / "other-ca.pem", tmp_path / "other-ca.key")
    refused = stack.lahar("get", "jobs", "--tls-ca", str(tmp_path / "other-ca.pem"))
    assert refused.returncode != 0
    assert "certificate verify failed" in refused.stderr, refused.stderr


async def test_the_python_client_takes_the_ca(stack: Stack) -> None:
    async with await LaharClient.connect(
        stack.state.nats_url,
        stack.state.etcd_endpoint,
        creds=stack.state.admin_creds,
        tls_ca=stack.state.tls_ca,
    ) as client:
        assert await client.list("node")
