from __future__ import annotations

import asyncio
import contextlib

import pytest

from shared.servers import EtcdServer
from shared.store.checkpoint import CheckpointStore
from shared.store.etcd import Etcd, WatchEvent
from shared.store.lease import KeptLease

pytestmark = pytest.mark.integration


async def test_watch_resumes_after_an_etcd_restart_without_gaps_or_repeats(private_etcd: EtcdServer) -> None:
    etcd = await Etcd.connect(*private_etcd.endpoint)
    seen: asyncio.Queue[WatchEvent] = asyncio.Queue()
    start = await etcd.revision() + 1

    async def watch() -> None:
        async for event in etcd.watch_prefix("/lahar/objects/", start_revision=start):
            await seen.put(event)

    watcher = asyncio.create_task(watch())
    try:
        await etcd.put("/lahar/objects/job/default/a", b"1")
        before = await asyncio.wait_for(seen.get(), 10)
        assert before.key.endswith(b"/a")

        pid = private_etcd.pid
        await private_etcd.arestart()
        assert private_etcd.pid != pid
        await etcd.wait_ready(10)
        # Written while the watcher is most likely still reconnecting: it must catch up from its revision.
        await etcd.put("/lahar/objects/job/default/b", b"2")
        await etcd.put("/lahar/objects/job/default/c", b"3")
        after = [await asyncio.wait_for(seen.get(), 15) for _ in range(2)]
        assert [e.key[-1:] for e in after] == [b"b", b"c"]
        assert before.mod_revision < after[0].mod_revision < after[1].mod_revision

        # Nothing delivered twice: a marker written last is the very next event.
        await etcd.put("/lahar/objects/job/default/marker", b"")
        marker = await asyncio.wait_for(seen.get(), 10)
        assert marker.key.endswith(b"/marker") and seen.empty()
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
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
