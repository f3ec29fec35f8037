from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from shared.ring import Ring
from shared.store.checkpoint import CheckpointConflict, CheckpointStore
from shared.store.election import Election, FencedOut, Leader, fenced_txn
from shared.store.etcd import Etcd, put
from shared.store.membership import Membership
from shared.store.read_model import ReadModel


async def next_value(events: AsyncIterator[object], timeout_s: float = 10.0) -> object:
    return await asyncio.wait_for(anext(events), timeout_s)


async def test_second_candidate_takes_over_when_the_leaders_lease_expires(etcd: Etcd) -> None:
    election = Election(etcd, "binder")
    async with contextlib.aclosing(election.observe()) as changes:
        assert await next_value(changes) is None
        first = await election.campaign("binder-a", ttl_s=1)
        seen = await next_value(changes)
        assert isinstance(seen, Leader) and (seen.candidate, seen.token) == ("binder-a", first.fence.token)
        assert (await election.leader()) == seen

        second_campaign = asyncio.create_task(election.campaign("binder-b", ttl_s=1))
        # binder-a hangs: it stops renewing without resigning, so only lease expiry can depose it.
        await first.lease.stop(revoke=False)
        assert await next_value(changes) is None
        second = await asyncio.wait_for(second_campaign, 10)
        assert second.fence.token > first.fence.token
        assert (await next_value(changes)).candidate == "binder-b"  # type: ignore[attr-defined]

        # The deposed leader's fenced writes are refused, whatever they guard.
        with pytest.raises(FencedOut):
            await fenced_txn(etcd, first.fence, [], [put("/lahar/plan-ledger", b"stale")])
        with pytest.raises(FencedOut):
            await CheckpointStore(etcd, "binder").save(b"stale view", 7, fence=first.fence)
        with pytest.raises(FencedOut):
            await ReadModel(etcd, fence=first.fence).put("node", None, "n1", {"stale": True}, seq=7)
        assert await etcd.get("/lahar/plan-ledger") is None

        # The new leader's go through.
        await CheckpointStore(etcd, "binder").save(b"view", 8, fence=second.fence)
        assert await ReadModel(etcd, fence=second.fence).put("node", None, "n1", {"cpu": 1}, seq=8)
        await second.resign()
        assert await next_value(changes) is None


async def test_fenced_txn_reports_the_callers_own_failed_compare(etcd: Etcd) -> None:
    leadership = await Election(etcd, "queue-controller").campaign("qc-0", ttl_s=5)
    try:
        checkpoints = CheckpointStore(etcd, "queue-controller")
        await checkpoints.save(b"v1", 1, fence=leadership.fence, expected_seq=0)
        with pytest.raises(CheckpointConflict, match="expected previous sequence 0, found 1"):
            await checkpoints.save(b"v2", 2, fence=leadership.fence, expected_seq=0)
    finally:
        await leadership.resign()


async def test_campaign_can_be_abandoned(etcd: Etcd) -> None:
    election = Election(etcd, "descheduler")
    leader = await election.campaign("d-0", ttl_s=5)
    waiting = asyncio.create_task(election.campaign("d-1", ttl_s=5))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.shield(waiting), 0.3)
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiting
    assert (await election.leader()).candidate == "d-0"  # type: ignore[union-attr]
    await leader.resign()
    assert await election.leader() is None


async def test_ring_membership_follows_joins_leaves_and_expiry(etcd: Etcd) -> None:
    group = Membership(etcd, "scheduler")
    a = await group.join("scheduler-a", ttl_s=5)
    async with contextlib.aclosing(group.watch()) as views:
        assert await next_value(views) == {"scheduler-a"}
        b = await group.join("scheduler-b", ttl_s=1)
        assert await next_value(views) == {"scheduler-a", "scheduler-b"}
        assert (await group.members())[0] == {"scheduler-a", "scheduler-b"}
        ring = Ring((await group.members())[0])
        owned_by_b = ring.assign(f"default/pg-{i}" for i in range(100))["scheduler-b"]
        assert owned_by_b

        await b.lease.stop(revoke=False)  # b dies: its key expires with its lease
        survivors = await next_value(views)
        assert survivors == {"scheduler-a"}
        assert all(Ring(survivors).owner(key) == "scheduler-a" for key in owned_by_b)

        await a.leave()
        assert await next_value(views) == frozenset()
