"""Real nats-server and etcd processes for the integration tests.

Shared servers live for the session; each test gets a fresh connection and an emptied server (no
streams, no keys). Tests that restart a server ask for a private one. When a test fails, the tail of
every server log is attached to its report.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from binder_stack import Heartbeats, Stack
from cli_harness import cli, cli_admission  # noqa: F401 (fixtures of the CLI tests)
from support.waiting import Eventually

from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream, plans_stream
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Delete, Etcd

# A single-member test cluster needs no failure detection: short raft timers make it elect itself at
# once and let leases as short as one second really last one second. fsync is pointless in a temp dir.
ETCD_TEST_ARGS = ("--heartbeat-interval", "25", "--election-timeout", "250", "--unsafe-no-fsync")

_servers: list[NatsServer | EtcdServer] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for server in _servers:
            report.sections.append((f"{server.name} log ({server.log_path})", server.log_tail()))


def _track(server: NatsServer | EtcdServer) -> NatsServer | EtcdServer:
    _servers.append(server)
    return server


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer.start_in(tmp_path_factory.mktemp("nats"))
    _track(server)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    server = EtcdServer.start_in(tmp_path_factory.mktemp("etcd"), extra_args=ETCD_TEST_ARGS)
    _track(server)
    yield server
    server.stop()


@pytest.fixture
def private_nats(tmp_path: Path) -> Iterator[NatsServer]:
    """A server of the test's own, free to be restarted."""
    server = NatsServer.start_in(tmp_path / "nats")
    _track(server)
    yield server
    server.stop()
    _servers.remove(server)


@pytest.fixture
def private_etcd(tmp_path: Path) -> Iterator[EtcdServer]:
    """A server of the test's own, free to be restarted."""
    server = EtcdServer.start_in(tmp_path / "etcd", extra_args=ETCD_TEST_ARGS)
    _track(server)
    yield server
    server.stop()
    _servers.remove(server)


@pytest.fixture
async def bus(nats_server: NatsServer) -> AsyncIterator[Bus]:
    connected = await Bus.connect(nats_server.url, name="lahar-integration-tests")
    for info in await connected.jsm.streams_info():
        await connected.jsm.delete_stream(info.config.name)
    yield connected
    await connected.close()


@pytest.fixture
async def etcd(etcd_server: EtcdServer) -> AsyncIterator[Etcd]:
    client = await Etcd.connect(*etcd_server.endpoint)
    await client.txn([], [Delete(b"\0", b"\0")])  # [\0, \0) is every key
    yield client
    await client.close()


@pytest.fixture
def eventually() -> Eventually:
    """await eventually(check, what=..., timeout_s=...): poll check() (sync or async) until truthy."""

    async def wait(check: Callable[[], Any], *, what: str, timeout_s: float = 15.0) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:
            result = check()
            if asyncio.iscoroutine(result):
                result = await result
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
            await asyncio.sleep(0.02)

    return wait


@pytest.fixture
async def stack(
    nats_server: NatsServer, etcd_server: EtcdServer, bus: Bus, etcd: Etcd
) -> AsyncIterator[Stack]:
    """A binder and scheduler replicas run in this process (binder_stack.py), stopped at the end."""
    await bus.ensure_streams([events_stream(), plans_stream()])
    made = Stack(nats_server, etcd_server)
    yield made
    await made.close()


@pytest.fixture
async def beats(bus: Bus) -> AsyncIterator[Heartbeats]:
    """Heartbeats, as a node agent sends them, for the nodes a test puts in `beats.beating`."""
    sender = Heartbeats(bus, ())
    yield sender
    await sender.stop()
