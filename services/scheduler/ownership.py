"""Which PodGroups this replica plans for: its membership in the scheduler group (a lease in etcd) and
the rendezvous ring of the live members.

Every replica computes the same ring from the same membership, so each PodGroup has one owner without
coordination. A replica that dies stops renewing its lease; when the lease expires its key goes, every
survivor's ring shrinks and its PodGroups pass to their second choice. A replica that loses its own
lease (etcd unreachable for a TTL) owns nothing until it has joined again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from shared.ring import Ring
from shared.store.etcd import Etcd, EtcdError
from shared.store.membership import SCHEDULER_GROUP, Membership, Registration

log = structlog.get_logger(__name__)

GROUP = SCHEDULER_GROUP
_RETRY_S = 0.5


class Owned:
    """The keys one member owns on one ring: a session's `owns` and build_plans' `owned`.

    Hashing a key costs microseconds per member and a session asks about every live PodGroup, so answers
    are remembered while the ring stays: `next_session()` starts a new generation and keeps only the
    keys the last session asked about, so the memory follows the live PodGroups, not the history."""

    __slots__ = ("_asked", "_known", "member", "ring")

    def __init__(self, ring: Ring, member: str) -> None:
        self.ring = ring
        self.member = member
        self._asked: dict[str, bool] = {}  # this generation's answers
        self._known: dict[str, bool] = {}  # the previous generation's

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        answer = self._asked.get(key)
        if answer is None:
            answer = self._known.get(key)
            if answer is None:
                answer = self.ring.owns(self.member, key)
            self._asked[key] = answer
        return answer

    def owns(self, key: str) -> bool:
        return key in self

    def next_session(self) -> None:
        self._known, self._asked = self._asked, {}


class Ownership:
    def __init__(
        self, etcd: Etcd, replica: str, ttl_s: int, on_change: Callable[[], None] = lambda: None
    ) -> None:
        self.membership = Membership(etcd, GROUP)
        self.replica = replica
        self.ttl_s = ttl_s
        self.on_change = on_change
        self.ring = Ring(())  # as last seen by the watch
        self._registration: Registration | None = None
        self._owned = Owned(Ring(()), replica)
        self.known = asyncio.Event()  # the watch has reported the members at least once

    @property
    def registered(self) -> bool:
        reg = self._registration
        return reg is not None and not reg.lost.is_set()

    def owned(self) -> Owned:
        """What this replica owns now; nothing while its own registration is not live. The same object
        (and its remembered answers) while the ring stays."""
        ring = self.ring if self.registered and self.replica in self.ring else Ring(())
        if ring != self._owned.ring:
            self._owned = Owned(ring, self.replica)
        return self._owned

    async def run(self, stopping: asyncio.Event) -> None:
        """Join, stay joined (joining again after losing the lease) and follow the members until
        stopping is set; then leave, so the others take over at once instead of after the TTL."""
        watcher = asyncio.create_task(self._watch())
        try:
            while not stopping.is_set():
                try:
                    self._registration = await self.membership.join(self.replica, ttl_s=self.ttl_s)
                except EtcdError as exc:
                    log.warning("could not join the scheduler group; retrying", error=str(exc))
                    await _wait(stopping, _RETRY_S)
                    continue
                log.info("joined the scheduler group", replica=self.replica, ttl_s=self.ttl_s)
                self.on_change()
                await _first(self._registration.lost.wait(), stopping.wait())
                if not stopping.is_set():
                    log.warning("scheduler membership lost; joining again", replica=self.replica)
                    self.on_change()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            registration, self._registration = self._registration, None
            if registration is not None:
                with contextlib.suppress(EtcdError):  # unreachable or expired: the key goes with the lease
                    await asyncio.shield(registration.leave())

    async def _watch(self) -> None:
        while True:
            try:
                async for members in self.membership.watch():
                    if Ring(members) != self.ring:
                        self.ring = Ring(members)
                        log.info("scheduler ring changed", members=sorted(members))
                        self.on_change()
                    self.known.set()
            except EtcdError as exc:  # a compacted watch or etcd down at the first read: list again
                log.warning("scheduler membership watch failed; watching again", error=str(exc))
                await asyncio.sleep(_RETRY_S)


async def _wait(event: asyncio.Event, timeout_s: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout_s)


async def _first(*waits: Coroutine[Any, Any, Any]) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
