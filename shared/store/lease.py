"""A lease kept alive from a thread of its own, with a signal for when it is (or may be) lost.

Why a thread: a service's event loop stalls now and then for longer than a short lease allows (the dump
of a large state for a checkpoint, a reconcile of a large batch, and a loaded machine stretching both),
and renewals made by a task on that loop missed their deadline in such stalls: a leader lost its term
mid-burst and its successor rewrote the whole read model (docs/reliability.md, "The lease and
flapping"). The renewals run on their own thread, with their own event loop and their own etcd
connection; the interpreter hands that thread its turn every few milliseconds however busy the service's
loop is.

What a lease stands for is unchanged: a process that dies (a crash, SIGKILL, its host) renews nothing,
and its lease expires within the TTL. A loop that is not busy but hung must not keep a seat either: the
thread renews only while the holder's loop has run within `max_loop_stall_s`, and gives the lease up
otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import structlog

from shared.store.etcd import Etcd, EtcdUnavailable, LeaseNotFound

log = structlog.get_logger(__name__)

# After a failed renewal the next is tried this soon rather than a third of the TTL later: the failure
# was most likely the client's etcd member dying (its calls now go to the next member, which answers
# at once) or the cluster electing a leader (under a second on the HA stack), and the lease's deadline
# may be near.
RETRY_AFTER_FAILURE_S = 0.1
# A holder whose loop has not run for this long is hung, not busy: the longest stall measured is a
# checkpoint's dump of 40,000 pods, 1.5 s, about 4 s on a machine loaded twice over.
MAX_LOOP_STALL_S = 15.0


class KeptLease:
    """A granted lease renewed every third of its TTL until stopped.

    lost is set when etcd reports the lease gone, when renewals have failed for so long that it may
    have expired (the deadline is measured from when the last successful renewal was *sent*, so the
    holder gives up no later than etcd could have expired it), or when the holder's loop has not run
    for max_loop_stall_s. Whoever holds the lease must stop acting on it (leading, owning ring slots)
    once lost is set.
    """

    def __init__(
        self, etcd: Etcd, lease_id: int, ttl_s: int, *, max_loop_stall_s: float = MAX_LOOP_STALL_S
    ) -> None:
        self.etcd = etcd
        self.id = lease_id
        self.ttl_s = ttl_s
        self.max_loop_stall_s = max_loop_stall_s
        self.lost = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._beat = time.monotonic()  # when the holder's loop last ran (read by the renewal thread)
        self._beating = asyncio.create_task(self._beat_while_running(), name=f"lease-beat-{lease_id:x}")
        self._stopping = threading.Event()
        self._renewals: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None  # the thread's loop
        self._thread = threading.Thread(target=self._renew_in_thread, name=f"lease-{lease_id:x}", daemon=True)
        self._thread.start()

    @classmethod
    async def grant(cls, etcd: Etcd, ttl_s: int, *, max_loop_stall_s: float = MAX_LOOP_STALL_S) -> KeptLease:
        return cls(etcd, await etcd.grant(ttl_s), ttl_s, max_loop_stall_s=max_loop_stall_s)

    @property
    def _interval_s(self) -> float:
        return max(self.ttl_s / 3, 0.1)

    async def _beat_while_running(self) -> None:
        interval = min(self._interval_s, self.max_loop_stall_s / 4)
        while True:
            self._beat = time.monotonic()
            await asyncio.sleep(interval)

    def _renew_in_thread(self) -> None:
        asyncio.run(self._renew_on_own_connection())

    async def _renew_on_own_connection(self) -> None:
        # published before _stopping is read, as stop() sets _stopping before reading this: whichever
        # comes second sees the other's write, so a stop is never missed
        self._renewals = (asyncio.get_running_loop(), asyncio.Event())
        if self._stopping.is_set():
            return
        etcd: Etcd | None = None
        try:
            etcd = await self.etcd.twin()
            await self._renew(etcd)
        except Exception:  # a bug here must not leave a lease nobody renews and nobody knows is lost
            log.exception("lease renewals failed", lease=f"{self.id:x}")
            self._give_up()
        finally:
            if etcd is not None:
                await etcd.close()

    async def _renew(self, etcd: Etcd) -> None:
        deadline = time.monotonic() + self.ttl_s
        wait = self._interval_s
        while await self._not_stopped_after(wait):
            stalled_s = time.monotonic() - self._beat
            if stalled_s > self.max_loop_stall_s:
                self._give_up("lease given up: the holder's loop is hung", stalled_s=round(stalled_s, 1))
                return
            sent = time.monotonic()
            wait = RETRY_AFTER_FAILURE_S
            try:
                remaining = await etcd.refresh(self.id)
                deadline = sent + remaining
                wait = self._interval_s
            except LeaseNotFound:
                self._give_up("lease lost: expired or revoked")
                return
            except EtcdUnavailable as exc:
                if time.monotonic() >= deadline:
                    self._give_up("lease presumed lost: no renewal within its TTL", error=str(exc))
                    return

    async def _not_stopped_after(self, wait_s: float) -> bool:
        assert self._renewals is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._renewals[1].wait(), wait_s)
        return not self._stopping.is_set()

    def _give_up(self, event: str | None = None, **fields: Any) -> None:
        """From the renewal thread: tell the holder's loop the lease is (or may be) gone."""
        if event is not None:
            log.warning(event, lease=f"{self.id:x}", **fields)
        with contextlib.suppress(RuntimeError):  # the holder's loop is closed: nobody to tell
            self._loop.call_soon_threadsafe(self.lost.set)

    async def stop(self, *, revoke: bool = True) -> None:
        """Stop renewing; revoke (the default) deletes the lease's keys at once instead of at expiry."""
        self._stopping.set()
        if self._renewals is not None:
            loop, wake = self._renewals
            with contextlib.suppress(RuntimeError):  # its loop is closed: the thread is done already
                loop.call_soon_threadsafe(wake.set)
        self._beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._beating
        await asyncio.to_thread(self._thread.join)
        if revoke and not self.lost.is_set():
            try:
                await self.etcd.revoke(self.id)
            except EtcdUnavailable:
                # The lease will simply expire; nothing else to do.
                log.info("lease not revoked (etcd unavailable); it will expire", lease=f"{self.id:x}")
        self.lost.set()
