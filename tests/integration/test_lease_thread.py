"""A kept lease is renewed from its own thread: it outlives stalls of its holder's event loop longer than
its TTL (a checkpoint's dump of a large state, a loaded machine), and is given up when the loop is hung,
not busy, for longer than max_loop_stall_s."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.waiting import Eventually

from shared.store.etcd import Etcd, LeaseNotFound
from shared.store.lease import KeptLease

_TTL_S = 2


async def test_a_lease_outlives_a_stall_of_its_holders_loop_longer_than_its_ttl(etcd: Etcd) -> None:
    lease = await KeptLease.grant(etcd, _TTL_S)
    try:
        # The holder's loop does not run for twice the TTL (a renewal task on it would have let the
        # lease expire: etcd sweeps expired leases every 0.5 s).
        time.sleep(2 * _TTL_S)  # the stall under test, not a wait for a condition
        assert await etcd.refresh(lease.id) == _TTL_S
        assert not lease.lost.is_set()
    finally:
        await lease.stop()


async def test_a_hung_loop_gives_its_lease_up(etcd: Etcd, eventually: Eventually) -> None:
    lease = await KeptLease.grant(etcd, _TTL_S, max_loop_stall_s=0.5)
    key = b"/lahar/tests/held-by-a-hung-loop"
    await etcd.put(key, b"seat", lease=lease.id)
    time.sleep(1.0)  # hung past max_loop_stall_s: the renewal thread stops renewing
    await asyncio.wait_for(lease.lost.wait(), 5)  # and tells the holder once its loop runs again

    async def expired() -> bool:
        return await etcd.get(key) is None  # (a refresh would renew it)

    await eventually(expired, what="etcd to expire the lease nobody renews, and its key with it")
    await lease.stop()


async def test_stop_ends_the_renewals_and_revokes_the_lease(etcd: Etcd) -> None:
    lease = await KeptLease.grant(etcd, _TTL_S)
    await lease.stop()
    assert not lease._thread.is_alive()
    assert lease.lost.is_set()
    with pytest.raises(LeaseNotFound):
        await etcd.refresh(lease.id)


async def test_renewals_that_cannot_start_tell_the_holder_the_lease_is_lost(
    etcd: Etcd, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_connection() -> Etcd:
        raise RuntimeError("no second connection")

    monkeypatch.setattr(etcd, "twin", no_connection)
    lease = await KeptLease.grant(etcd, _TTL_S)
    await asyncio.wait_for(lease.lost.wait(), 5)  # nobody renews it: its holder must not act on it
    await lease.stop()
