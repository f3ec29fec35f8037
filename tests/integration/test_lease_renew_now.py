"""A lease renewed out of turn before a deliberate stall of the loop (a checkpoint's dump) outlives a
stall that its regular renewals would not have: the stall starts with the whole TTL ahead."""

from __future__ import annotations

import time

import pytest

from shared.store.etcd import Etcd, LeaseNotFound
from shared.store.lease import KeptLease

_TTL_S = 3


async def test_a_lease_renewed_now_outlives_a_stall_past_its_old_deadline(etcd: Etcd) -> None:
    lease = await KeptLease.grant(etcd, _TTL_S)
    _no_regular_renewals(lease)
    time.sleep(_TTL_S - 1)  # the loop busy elsewhere: one second of the lease left
    await lease.renew_now()
    time.sleep(_TTL_S - 1)  # a stall that ends past the lease's old deadline (and etcd's 0.5 s sweep)
    assert await etcd.refresh(lease.id) == _TTL_S  # still alive: renewed before the stall


async def test_without_it_the_same_stall_loses_the_lease(etcd: Etcd) -> None:
    lease = await KeptLease.grant(etcd, _TTL_S)
    _no_regular_renewals(lease)
    time.sleep(2 * (_TTL_S - 1))
    with pytest.raises(LeaseNotFound):
        await etcd.refresh(lease.id)


def _no_regular_renewals(lease: KeptLease) -> None:
    """Only renew_now renews it from here on (stop() would also mark it lost, which renew_now honours)."""
    lease._task.cancel()
