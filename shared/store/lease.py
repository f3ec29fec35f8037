"""A lease kept alive by a background task, with a signal for when it is (or may be) lost."""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from shared.store.etcd import Etcd, EtcdUnavailable, LeaseNotFound

log = structlog.get_logger(__name__)

# After a failed renewal the next is tried this soon rather than a third of the TTL later: the failure
# was most likely the client's etcd member dying (its calls now go to the next member, which answers
# at once) or the cluster electing a leader (under a second on the HA stack), and the lease's deadline
# may be near.
RETRY_AFTER_FAILURE_S = 0.1


class KeptLease:
    """A granted lease renewed every third of its TTL until stopped.

    lost is set when etcd reports the lease gone, or when renewals have failed for so long that it may
    have expired: the deadline is measured from when the last successful renewal was *sent*, so the
    holder gives up no later than etcd could have expired it. Whoever holds the lease must stop acting
    on it (leading, owning ring slots) once lost is set.
    """

    def __init__(self, etcd: Etcd, lease_id: int, ttl_s: int) -> None:
        self.etcd = etcd
        self.id = lease_id
        self.ttl_s = ttl_s
        self.lost = asyncio.Event()
        self._task = asyncio.create_task(self._renew(), name=f"lease-{lease_id:x}")

    @classmethod
    async def grant(cls, etcd: Etcd, ttl_s: int) -> KeptLease:
        return cls(etcd, await etcd.grant(ttl_s), ttl_s)

    async def _renew(self) -> None:
        interval = max(self.ttl_s / 3, 0.1)
        deadline = time.monotonic() + self.ttl_s
        wait = interval
        while True:
            await asyncio.sleep(wait)
            sent = time.monotonic()
            wait = RETRY_AFTER_FAILURE_S
            try:
                remaining = await self.etcd.refresh(self.id)
                deadline = sent + remaining
                wait = interval
            except LeaseNotFound:
                log.warning("lease lost: expired or revoked", lease=f"{self.id:x}")
                self.lost.set()
                return
            except EtcdUnavailable as exc:
                if time.monotonic() >= deadline:
                    log.warning(
                        "lease presumed lost: no renewal within its TTL", lease=f"{self.id:x}", error=str(exc)
                    )
                    self.lost.set()
                    return

    async def renew_now(self) -> None:
        """Renew at once, out of turn: before the holder stalls its loop on purpose (a checkpoint's dump),
        so that the stall starts with the whole TTL ahead. A failure is the renewal task's to judge."""
        if self.lost.is_set():
            return
        with contextlib.suppress(LeaseNotFound, EtcdUnavailable):
            await self.etcd.refresh(self.id)

    async def stop(self, *, revoke: bool = True) -> None:
        """Stop renewing; revoke (the default) deletes the lease's keys at once instead of at expiry."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if revoke and not self.lost.is_set():
            try:
                await self.etcd.revoke(self.id)
            except EtcdUnavailable:
                # The lease will simply expire; nothing else to do.
                log.info("lease not revoked (etcd unavailable); it will expire", lease=f"{self.id:x}")
        self.lost.set()
