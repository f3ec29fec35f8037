from __future__ import annotations

import asyncio
import collections
import signal
import urllib.request

import pytest
from runner_toy import ToyCore, ToyProcess
from support.waiting import Eventually
from test_runner import fold_log, ping

from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream
from shared.bus.subjects import EVENTS_STREAM
from shared.runner import EventSourcedService, RunnerConfig
from shared.servers import EtcdServer, NatsServer
from shared.store.checkpoint import CheckpointStore
from shared.store.etcd import Etcd
from shared.store.lease import KeptLease
from shared.telemetry.metrics import Registry


def open_watches(server: EtcdServer) -> int:
    """How many watches the server has open, by its own metrics."""
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("etcd_debugging_mvcc_watcher_total "):
                return int(float(line.split()[1]))
    raise AssertionError("etcd's metrics have no etcd_debugging_mvcc_watcher_total")


async def test_watch_resumes_after_an_etcd_restart_without_gaps_or_repeats(private_etcd: EtcdServer) -> None:
    etcd = await Etcd.connect(*private_etcd.endpoint)
    # Pulled one change at a time: between two pulls the watcher waits at its yield and opens no new watch, so
    # a change written meanwhile reaches it only by the resume from the revision after the last it delivered.
    changes = etcd.watch_prefix("/lahar/objects/", start_revision=await etcd.revision() + 1)
    try:
        await etcd.put("/lahar/objects/job/default/a", b"1")
        before = await asyncio.wait_for(anext(changes), 10)
        assert before.key.endswith(b"/a")
        assert await asyncio.to_thread(open_watches, private_etcd) == 1

        pid = private_etcd.pid
        await private_etcd.arestart()
        assert private_etcd.pid != pid
        await etcd.wait_ready(10)
        await etcd.put("/lahar/objects/job/default/b", b"2")
        await etcd.put("/lahar/objects/job/default/c", b"3")
        # Both were written while the restarted server had no watch open: the watcher must resume to see them.
        assert await asyncio.to_thread(open_watches, private_etcd) == 0
        after = [await asyncio.wait_for(anext(changes), 15) for _ in range(2)]
        assert [e.key[-1:] for e in after] == [b"b", b"c"]
        assert before.mod_revision < after[0].mod_revision < after[1].mod_revision
        assert await asyncio.to_thread(open_watches, private_etcd) == 1  # the resumed watch, and only it

        # Nothing delivered twice: a marker written last is the very next change.
        await etcd.put("/lahar/objects/job/default/marker", b"")
        marker = await asyncio.wait_for(anext(changes), 10)
        assert marker.key.endswith(b"/marker")
    finally:
        await changes.aclose()
        await etcd.close()


async def test_state_and_kept_lease_survive_a_quick_restart(private_etcd: EtcdServer) -> None:
    etcd = await Etcd.connect(*private_etcd.endpoint)
    try:
        await CheckpointStore(etcd, "job-controller").save(b"view", 42)
        lease = await KeptLease.grant(etcd, ttl_s=10)
        await etcd.put("/lahar/members/scheduler/s0", b"", lease=lease.id)

        await private_etcd.arestart()
        await etcd.wait_ready(10)

        checkpoint = await CheckpointStore(etcd, "job-controller").load()
        assert checkpoint is not None and checkpoint.seq == 42
        assert await etcd.refresh(lease.id) > 0
        assert not lease.lost.is_set()
        assert await etcd.get("/lahar/members/scheduler/s0") is not None
        await lease.stop(revoke=True)
    finally:
        await etcd.close()


# --- a service riding out an etcd outage ----------------------------------------------------------------

# A lease of 1 s: an outage of a few seconds outlives it, so the leader loses its term for sure.
ELECTED = RunnerConfig(
    reconcile_interval_s=0.2,
    checkpoint_every_events=1_000_000,
    checkpoint_every_s=3600,
    leader_election=True,
    leader_lease_ttl_s=1,
    instance_id="toy-a",
)


async def echoed(bus: Bus) -> collections.Counter[str]:
    envelopes = [record.envelope() async for record in bus.replay(EVENTS_STREAM)]
    return collections.Counter(str(env.payload["ping"]) for env in envelopes if env.type == "Echo")


async def test_a_leader_waits_out_an_etcd_outage_longer_than_its_lease_and_leads_again(
    bus: Bus, private_etcd: EtcdServer, eventually: Eventually
) -> None:
    await bus.ensure_streams([events_stream()])
    etcd = await Etcd.connect(*private_etcd.endpoint)
    service = EventSourcedService(ToyCore(), bus, etcd, ELECTED, registry=Registry())
    try:
        first = await ping(bus, "before")
        await service.run_until_idle(15)  # starts it
        await eventually(lambda: service.leading, what="the only candidate leading")
        await service.run_until_idle(15)
        assert (await echoed(bus)).total() == 1

        await private_etcd.astop()
        await eventually(lambda: not service.leading, what="the term ending with etcd gone", timeout_s=10)
        # while etcd is down the service goes on following the log as a standby: nothing is decided
        during = await ping(bus, "during")
        await eventually(lambda: service.seq >= during, what="the standby applying a ping")
        assert not service.stopped, "the service exited during the outage"

        await private_etcd.astart()
        await eventually(lambda: service.leading, what="leading again once etcd is back", timeout_s=20)
        await service.run_until_idle(15)
        echoes = await echoed(bus)
        assert sorted(echoes.values()) == [1, 1], echoes  # both pings echoed, neither twice
        assert service.state == await fold_log(bus)  # every event applied once, in order
        assert service.state.applied[0] == first
        await service.checkpoint()  # the new term may write its fenced checkpoint
        saved = await CheckpointStore(etcd, "toy").load()
        assert saved is not None and saved.seq == service.seq
    finally:
        await service.shutdown()
        await etcd.close()


@pytest.mark.slow  # waits for the service's retries to find etcd back
async def test_a_service_started_while_etcd_is_down_comes_up_once_it_is_back(
    bus: Bus, nats_server: NatsServer, private_etcd: EtcdServer, eventually: Eventually
) -> None:
    await bus.ensure_streams([events_stream()])
    await ping(bus, "waiting")
    host, port = private_etcd.endpoint
    await private_etcd.astop()
    toy = await ToyProcess.start("--nats-url", nats_server.url, "--etcd-endpoint", f"{host}:{port}")
    try:
        await eventually(
            lambda: toy.logged("connecting to etcd: server unavailable, retrying"),
            what="the service saying it waits for etcd",
            timeout_s=20,
        )
        assert toy.proc.returncode is None, "".join(toy.raw)
        await private_etcd.astart()

        async def echoed_once() -> bool:
            return (await echoed(bus)).total() == 1

        await eventually(echoed_once, what="the same process serving once etcd is back", timeout_s=30)
        toy.proc.send_signal(signal.SIGTERM)
    finally:
        status = await toy.wait()
    assert status == 0, "".join(toy.raw)
