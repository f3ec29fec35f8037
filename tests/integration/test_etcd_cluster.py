"""The etcd client on a 3-member cluster (the HA stack's, shared/server_cluster.py): when its member dies it
moves to another, a watch resumes there without a gap or a repeat, a kept lease and an election's leader
outlive the loss of etcd's raft leader, and a killed member restarted on its data directory rejoins."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.backoff import retry_while_unavailable
from shared.server_cluster import EtcdMember, etcd_cluster, start_cluster
from shared.servers import http_ok
from shared.store.election import Election
from shared.store.etcd import Etcd, EtcdUnavailable
from shared.store.lease import KeptLease


@pytest.fixture
def members(tmp_path: Path) -> Iterator[list[EtcdMember]]:
    cluster = etcd_cluster(tmp_path)
    start_cluster(cluster)
    yield cluster
    for member in cluster:
        member.stop()


def raft_leader(members: list[EtcdMember]) -> EtcdMember | None:
    """The member that says it leads (maintenance status), None while there is none."""
    for member in members:
        if not member.running:
            continue
        request = urllib.request.Request(f"{member.url}/v3/maintenance/status", data=b"{}", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                status = json.loads(response.read())
        except OSError:
            continue
        if status["header"]["member_id"] == status.get("leader"):
            return member
    return None


async def connected(members: list[EtcdMember]) -> Etcd:
    return await Etcd.connect_cluster([(m.host, m.port) for m in members])


async def test_calls_and_a_watch_move_to_another_member_when_theirs_dies(members: list[EtcdMember]) -> None:
    etcd = await connected(members)
    changes = etcd.watch_prefix("/lahar/t/", start_revision=await etcd.revision() + 1)
    try:
        await etcd.put("/lahar/t/a", b"1")
        assert (await asyncio.wait_for(anext(changes), 10)).key == b"/lahar/t/a"
        used = next(m for m in members if f"{m.host}:{m.port}" == etcd.member)
        used.kill()

        await retry_while_unavailable("put", lambda: etcd.put("/lahar/t/b", b"2"), (EtcdUnavailable,))
        assert etcd.member != f"{used.host}:{used.port}"
        await etcd.put("/lahar/t/c", b"3")
        after = [(await asyncio.wait_for(anext(changes), 10)).key for _ in range(2)]
        assert after == [b"/lahar/t/b", b"/lahar/t/c"]  # nothing missed, nothing repeated

        await used.astart()  # on its data directory: it rejoins as an existing member
        assert await asyncio.to_thread(http_ok, used.health_url)
        assert (await etcd.get("/lahar/t/c")) is not None
    finally:
        await changes.aclose()
        await etcd.close()


async def test_a_lease_and_a_leader_outlive_the_loss_of_the_etcd_leader(members: list[EtcdMember]) -> None:
    etcd = await connected(members)
    rival = await connected(members)
    try:
        lease = await KeptLease.grant(etcd, 2)
        leadership = await Election(etcd, "binder").campaign("binder-1", ttl_s=2)
        campaign = asyncio.create_task(Election(rival, "binder").campaign("binder-2", ttl_s=2))
        leader = raft_leader(members)
        assert leader is not None
        leader.kill()
        # a new raft leader within a second or two; the lease is renewed through it before its TTL ends
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(lease.lost.wait()), 6.0)
        assert not leadership.lost.is_set() and not campaign.done()
        # (the lease is renewed on a connection of its own: this one's first call may still go to the
        # killed member, and moves on)
        elected = Election(etcd, "binder")
        assert await retry_while_unavailable("leader", elected.leader, (EtcdUnavailable,)) is not None
        campaign.cancel()
        await asyncio.gather(campaign, return_exceptions=True)
        await leadership.resign()
        await lease.stop()
    finally:
        await rival.close()
        await etcd.close()
