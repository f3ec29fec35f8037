"""The shared service lifecycle: graceful drain, idempotent shutdown, run_until_idle, and run_main as a
process (signals, exit status, configuration errors, the /metrics and /healthz endpoint)."""

from __future__ import annotations

import asyncio
import json
import signal
import urllib.error
import urllib.request
from typing import Any

import nats.errors
import pytest
from nats.aio.msg import Msg
from runner_toy import FAIL_TO_START, ToyProcess
from support.waiting import Eventually

from shared.bus.jetstream import Bus
from shared.servers import EtcdServer, NatsServer
from shared.service import Service
from shared.store.etcd import Etcd

SUBJECT = "lahar.test.echo"


class Responder(Service):
    """Answers requests on a subject; each request waits for `gate` before its reply is sent."""

    name = "responder"

    def __init__(self, bus: Bus, gate: asyncio.Event) -> None:
        super().__init__()
        self.bus = bus
        self.gate = gate
        self.accepting = False
        self.handling: set[asyncio.Task[None]] = set()
        self.answered = 0

    async def serve(self) -> None:
        sub = await self.bus.nc.subscribe(SUBJECT, cb=self._on_request)
        self.accepting = True
        await self.stopping.wait()
        # Drain: no new requests (the unsubscribe is on the server once flushed), finish the ones in flight.
        await sub.unsubscribe()
        await self.bus.nc.flush()
        self.accepting = False
        self.progressed()
        await asyncio.gather(*self.handling)

    async def _on_request(self, msg: Msg) -> None:
        task = asyncio.create_task(self._answer(msg))
        self.handling.add(task)
        task.add_done_callback(self.handling.discard)
        self.progressed()

    async def _answer(self, msg: Msg) -> None:
        await self.gate.wait()
        await msg.respond(b"echo: " + msg.data)
        self.answered += 1
        self.progressed()

    def health(self) -> dict[str, Any]:
        return {"ok": self.accepting, "in_flight": len(self.handling)}

    async def idle(self) -> bool:
        return self.accepting and not self.handling


async def test_shutdown_drains_in_flight_work_and_refuses_new_work(bus: Bus, eventually: Eventually) -> None:
    gate = asyncio.Event()
    service = Responder(bus, gate)
    await service.run_until_idle(10)  # started, subscribed, nothing to do
    pending = asyncio.create_task(bus.nc.request(SUBJECT, b"first", timeout=10))
    await eventually(lambda: service.health()["in_flight"] == 1, what="the request to be in flight")
    with pytest.raises(TimeoutError):
        await service.run_until_idle(0.2)  # a request in flight is work pending

    stopping = asyncio.create_task(service.shutdown())
    await eventually(lambda: not service.accepting, what="the service to stop taking requests")
    with pytest.raises(nats.errors.NoRespondersError):
        await bus.nc.request(SUBJECT, b"second", timeout=5)
    assert not stopping.done()  # still draining: the first request is not answered yet

    gate.set()
    assert (await pending).data == b"echo: first"
    await asyncio.wait_for(stopping, 10)
    assert service.stopped and service.answered == 1
    await asyncio.wait_for(service.shutdown(), 1)  # idempotent once stopped
    await asyncio.wait_for(asyncio.gather(service.shutdown(), service.shutdown()), 1)


async def test_concurrent_shutdowns_all_wait_for_the_drain(bus: Bus, eventually: Eventually) -> None:
    gate = asyncio.Event()
    service = Responder(bus, gate)
    await service.run_until_idle(10)
    request = asyncio.create_task(bus.nc.request(SUBJECT, b"x", timeout=10))
    await eventually(lambda: service.handling, what="the request to be in flight")
    waiters = [asyncio.create_task(service.shutdown()) for _ in range(3)]
    await eventually(lambda: not service.accepting, what="the drain to begin")
    assert not any(w.done() for w in waiters)
    gate.set()
    await asyncio.wait_for(asyncio.gather(*waiters), 10)
    assert (await request).data == b"echo: x" and service.stopped


async def test_shutdown_before_run_makes_run_return_at_once(bus: Bus) -> None:
    service = Responder(bus, asyncio.Event())
    await service.shutdown()  # never started: nothing to wait for
    await asyncio.wait_for(service.run(), 5)
    assert service.stopped
    with pytest.raises(RuntimeError, match="already started"):
        await service.run()


class Crashing(Service):
    name = "crashing"

    async def serve(self) -> None:
        raise RuntimeError("boom")

    def health(self) -> dict[str, Any]:
        return {"ok": False}

    async def idle(self) -> bool:
        return False


async def test_run_until_idle_reraises_a_crash() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        await Crashing().run_until_idle(5)


async def http_json(url: str) -> tuple[int, Any]:
    def get() -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    status, body = await asyncio.to_thread(get)
    return status, body


async def test_run_main_serves_health_and_metrics_and_stops_cleanly_on_sigint(
    bus: Bus, etcd: Etcd, nats_server: NatsServer, etcd_server: EtcdServer, eventually: Eventually
) -> None:
    # `etcd` wipes the keys: another test's checkpoint of the same toy service must not be loaded
    host, port = etcd_server.endpoint
    toy = await ToyProcess.start("--nats-url", nats_server.url, "--etcd-endpoint", f"{host}:{port}")
    try:
        listening = await eventually(
            lambda: toy.logged("metrics and health endpoints listening"), what="the endpoint to listen"
        )
        base = f"http://127.0.0.1:{listening['port']}"

        async def healthy_and_following() -> Any:
            # healthy already while replaying; the metrics below are meaningful once it follows the log
            status, body = await http_json(base + "/healthz")
            health = status == 200 and json.loads(body)
            return health if health and health["phase"] == "following" else None

        health = await eventually(healthy_and_following, what="the service to be healthy and following")
        assert (health["service"], health["phase"], health["role"]) == ("toy", "following", "active")
        status, body = await http_json(base + "/metrics")
        assert status == 200 and b'lahar_runner_last_applied_seq{service="toy"} 0' in body
        toy.proc.send_signal(signal.SIGINT)
    except BaseException:
        toy.proc.kill()  # report the real failure, not a timeout waiting for a process nobody stopped
        raise
    finally:
        status = await toy.wait()
    assert status == 0, "".join(toy.raw)
    assert toy.logged("starting")["config"]["nats_url"] == nats_server.url  # type: ignore[index]


async def test_run_main_rejects_bad_configuration_with_exit_status_2() -> None:
    toy = await ToyProcess.start("--reconcile-interval-s", "fast", "--metrics-port", "-1")
    assert await toy.wait() == 2
    output = "".join(toy.raw)
    assert "reconcile_interval_s: expected a number, got 'fast' (from flag --reconcile-interval-s)" in output


async def test_run_main_exits_1_when_the_service_cannot_start(
    nats_server: NatsServer, etcd_server: EtcdServer
) -> None:
    host, port = etcd_server.endpoint
    toy = await ToyProcess.start(
        "--nats-url", nats_server.url, "--etcd-endpoint", f"{host}:{port}", env={FAIL_TO_START: "1"}
    )
    assert await toy.wait() == 1
    assert toy.logged("service could not start") is not None
