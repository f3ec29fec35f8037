"""Leader election on an etcd lease, and fencing of the leader's writes.

The leader is whoever created the election key; the key is bound to the leader's lease, so it vanishes
when the leader resigns or its lease expires, and the next candidate creates it. The key's create
revision is unique to one term of leadership: it is the fencing token. A fenced write compares it in
the same transaction, so a deposed leader that has not noticed yet (paused, partitioned) cannot commit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import partial

from shared.backoff import retry_while_unavailable
from shared.store.etcd import (
    Compare,
    Etcd,
    EtcdError,
    EtcdUnavailable,
    Op,
    TxnResult,
    WatchCompacted,
    absent,
    create_revision_is,
    get,
    put,
)
from shared.store.lease import KeptLease

ELECTION_PREFIX = "/lahar/election/"


class FencedOut(EtcdError):
    """A fenced write was refused: the writer's leadership term is over."""


@dataclass(frozen=True, slots=True)
class Fence:
    """Proof of one leadership term: the election key and its create revision."""

    key: bytes
    token: int

    def compare(self) -> Compare:
        return create_revision_is(self.key, self.token)


async def fenced_txn(
    etcd: Etcd, fence: Fence, compare: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()
) -> TxnResult:
    """A transaction that applies only while fence's term lasts; raises FencedOut otherwise.

    If the fence holds but one of the caller's compares fails, the failure branch runs and the result
    (succeeded=False, the failure branch's reads) is returned as usual.
    """
    result = await etcd.txn([fence.compare(), *compare], success, [*failure, get(fence.key)])
    if result.succeeded:
        return result
    *reads, leader = result.reads
    if not leader or leader[0].create_revision != fence.token:
        raise FencedOut(f"leadership term {fence.token} on {fence.key.decode()} is over; write refused")
    return TxnResult(succeeded=False, revision=result.revision, reads=tuple(reads))


@dataclass(frozen=True, slots=True)
class Leader:
    candidate: str
    token: int
    lease: int


class Leadership:
    """A won election. Stop leading when lost is set; resign() to hand over at once."""

    def __init__(self, candidate: str, fence: Fence, lease: KeptLease) -> None:
        self.candidate = candidate
        self.fence = fence
        self.lease = lease

    @property
    def lost(self) -> asyncio.Event:
        return self.lease.lost

    async def resign(self) -> None:
        # Revoking the lease deletes the election key with it, waking the next candidate.
        await self.lease.stop(revoke=True)


class Election:
    """One named election (one per singleton role: binder, each controller)."""

    def __init__(self, etcd: Etcd, name: str, *, prefix: str = ELECTION_PREFIX) -> None:
        self.etcd = etcd
        self.key = f"{prefix}{name}".encode()

    async def leader(self) -> Leader | None:
        kv = await self.etcd.get(self.key)
        return None if kv is None else Leader(kv.value.decode(), kv.create_revision, kv.lease)

    async def campaign(self, candidate: str, *, ttl_s: int) -> Leadership:
        """Wait until candidate leads. Cancel the call (or wrap it in a timeout) to stop campaigning.

        An etcd outage is waited out (a candidate cannot win while etcd is down, and must not give up
        because of it): every step is tried again with backoff until etcd answers."""
        lease = await self._grant(ttl_s)
        try:
            while True:
                if lease.lost.is_set():
                    lease = await self._grant(ttl_s)
                claim = partial(
                    self.etcd.txn,
                    [absent(self.key)],
                    [put(self.key, candidate.encode(), lease=lease.id)],
                    [get(self.key)],
                )
                result = await retry_while_unavailable("campaigning", claim, (EtcdUnavailable,))
                if result.succeeded:
                    return Leadership(candidate, Fence(self.key, result.revision), lease)
                await self._wait_vacant(after_revision=result.revision)
        except BaseException:
            await lease.stop(revoke=True)
            raise

    async def _grant(self, ttl_s: int) -> KeptLease:
        return await retry_while_unavailable(
            "granting the election lease", partial(KeptLease.grant, self.etcd, ttl_s), (EtcdUnavailable,)
        )

    async def _wait_vacant(self, after_revision: int) -> None:
        """Until the key is deleted (the watch resumes across etcd restarts by itself). If the revisions
        it would resume from were compacted meanwhile, the caller simply tries to claim the key again."""
        try:
            async with contextlib.aclosing(
                self.etcd.watch_prefix(self.key, start_revision=after_revision + 1)
            ) as events:
                async for event in events:
                    if event.key == self.key and event.kind == "delete":
                        return
        except WatchCompacted:
            return

    async def observe(self) -> AsyncIterator[Leader | None]:
        """The current leader (None: vacant), then every change of leader."""
        kvs, revision = await self.etcd.get_prefix(self.key)
        current = next((kv for kv in kvs if kv.key == self.key), None)
        yield (
            None
            if current is None
            else Leader(current.value.decode(), current.create_revision, current.lease)
        )
        async with contextlib.aclosing(
            self.etcd.watch_prefix(self.key, start_revision=revision + 1)
        ) as events:
            async for event in events:
                if event.key != self.key:
                    continue
                if event.kind == "delete":
                    yield None
                else:
                    yield Leader(event.value.decode(), event.create_revision, event.lease)
