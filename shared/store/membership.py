"""Live members of a group (scheduler replicas on the hash ring), registered under a prefix with a lease.

A member's key lives as long as its lease: a replica that dies stops renewing, its key expires, and every
watcher sees the smaller membership, so the survivors take over its share of the ring.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from contracts.events import SCHEDULER
from shared.store.etcd import Etcd
from shared.store.lease import KeptLease

MEMBERS_PREFIX = "/lahar/members/"
SCHEDULER_GROUP = SCHEDULER  # the scheduler replicas' hash ring (services/scheduler/ownership.py)


class Registration:
    """This process's membership. Stop acting as a member when lost is set."""

    def __init__(self, member_id: str, key: bytes, lease: KeptLease) -> None:
        self.member_id = member_id
        self.key = key
        self.lease = lease

    @property
    def lost(self) -> asyncio.Event:
        return self.lease.lost

    async def leave(self) -> None:
        # Revoking deletes the key now, so the others rebalance without waiting for the TTL.
        await self.lease.stop(revoke=True)


class Membership:
    """The members of one group, e.g. ``Membership(etcd, "scheduler")``."""

    def __init__(self, etcd: Etcd, group: str, *, prefix: str = MEMBERS_PREFIX) -> None:
        if not group or "/" in group:
            raise ValueError(f"group must be a non-empty name without '/', got {group!r}")
        self.etcd = etcd
        self.prefix = f"{prefix}{group}/".encode()

    def _member(self, key: bytes) -> str:
        return key[len(self.prefix) :].decode()

    async def join(self, member_id: str, *, ttl_s: int, info: bytes = b"") -> Registration:
        """Register member_id (replacing a stale registration of the same id) with a kept lease."""
        if not member_id or "/" in member_id:
            raise ValueError(f"member id must be a non-empty name without '/', got {member_id!r}")
        lease = await KeptLease.grant(self.etcd, ttl_s)
        key = self.prefix + member_id.encode()
        try:
            await self.etcd.put(key, info, lease=lease.id)
        except BaseException:
            await lease.stop(revoke=True)
            raise
        return Registration(member_id, key, lease)

    async def members(self) -> tuple[frozenset[str], int]:
        """The live member ids and the revision they were read at."""
        kvs, revision = await self.etcd.get_prefix(self.prefix)
        return frozenset(self._member(kv.key) for kv in kvs), revision

    async def watch(self) -> AsyncIterator[frozenset[str]]:
        """The current members, then the full set again after every change."""
        current, revision = await self.members()
        members = set(current)
        yield frozenset(members)
        async with contextlib.aclosing(
            self.etcd.watch_prefix(self.prefix, start_revision=revision + 1)
        ) as events:
            async for event in events:
                member = self._member(event.key)
                if event.kind == "put":
                    if member in members:
                        continue  # a re-registration or an info update: same membership
                    members.add(member)
                else:
                    members.discard(member)
                yield frozenset(members)
