"""A thin async etcd v3 client: key-value, transactions, leases and resumable prefix watches.

Built on aetcd's gRPC channel, generated messages and watch stream. Unary calls go straight to the gRPC
stubs so every call has a deadline, returns the header revision, and fails with this module's errors.

Given several members of a cluster, it talks to one at a time and moves to the next whenever a call to
its member finds it unavailable (dead, restarting, without a leader, or too slow to answer): the call
fails with EtcdUnavailable as before, and the caller's retry goes to the next member. A watch resumes on
the next member from the revision after the last one delivered (revisions are the cluster's, not a
member's). One channel per member rather than one balanced channel: a gRPC target naming several
addresses takes IP addresses only, and the members of a multi-host cluster are named by host.

Given credentials, it authenticates with each member before its first call, sends the token with every
call, lease keepalive and watch, and authenticates again (once per call) when etcd refuses the token
(shared/store/etcd_auth.py). Every watch has a gRPC stream of its own, opened with the token current
then: etcd checks the token of a stream when a watch is created on it, so watches sharing a stream
opened with a token that has since expired would be refused (and aetcd does not report that refusal).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import aetcd
import grpc
import structlog
from aetcd import rpc, watcher

from shared.store.etcd_auth import EtcdCredentials, authenticate, token_refused
from shared.store.etcd_channel import etcd_client
from shared.store.etcd_ops import (
    REVISION_PROBE_KEY,
    Compare,
    Delete,
    Get,
    Key,
    KeyValue,
    Op,
    Put,
    TxnResult,
    WatchEvent,
    absent,
    as_key,
    create_revision_is,
    delete,
    delete_prefix,
    get,
    get_prefix,
    mod_revision_is,
    prefix_end,
    put,
    value_is,
)

# the request values live in etcd_ops.py; callers import them from here with the client
__all__ = [
    "Compare",
    "Delete",
    "Etcd",
    "EtcdError",
    "EtcdUnavailable",
    "Get",
    "Key",
    "KeyValue",
    "LeaseNotFound",
    "Op",
    "Put",
    "TxnResult",
    "WatchCompacted",
    "WatchEvent",
    "absent",
    "create_revision_is",
    "delete",
    "delete_prefix",
    "get",
    "get_prefix",
    "mod_revision_is",
    "prefix_end",
    "put",
    "value_is",
]

log = structlog.get_logger(__name__)

# Reconnect quickly after a server restart (gRPC's default backoff grows to two minutes), and accept
# large range replies such as chunked checkpoints (the default limit is 4 MiB).
_CHANNEL_OPTIONS = {
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
    "grpc.max_receive_message_length": 256 * 1024 * 1024,
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": 5_000,
}
_WATCH_RETRY_MAX_S = 2.0


class EtcdError(RuntimeError):
    """An etcd request failed."""


class EtcdUnavailable(EtcdError):
    """etcd could not be reached or did not answer in time; the request may or may not have applied."""


class LeaseNotFound(EtcdError):
    """The lease expired or was revoked."""


class WatchCompacted(EtcdError):
    """A watch cannot resume: etcd compacted the revisions it still had to deliver. Re-list, then watch."""

    def __init__(self, compact_revision: int) -> None:
        self.compact_revision = compact_revision
        super().__init__(f"watch history compacted up to revision {compact_revision}")


def _translate(exc: grpc.aio.AioRpcError, what: str) -> EtcdError:
    code, details = exc.code(), exc.details() or ""
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return EtcdUnavailable(f"{what}: etcd unavailable ({code.name}: {details})")
    if code == grpc.StatusCode.NOT_FOUND and "lease" in details:
        return LeaseNotFound(f"{what}: {details}")
    return EtcdError(f"{what}: {code.name}: {details}")


_MOVES_TO_NEXT_MEMBER = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class Etcd:
    """A connection to an etcd cluster: to one member at a time, moving on when it is unavailable."""

    def __init__(
        self,
        clients: Sequence[aetcd.Client],
        endpoints: Sequence[str],
        *,
        timeout_s: float,
        credentials: EtcdCredentials | None = None,
        tls_ca: str | None = None,
    ) -> None:
        if not clients or len(clients) != len(endpoints):
            raise ValueError("one client per endpoint, at least one")
        self._clients = list(clients)
        self.credentials = credentials  # None: etcd without authentication
        self.tls_ca = tls_ca  # kept to open another connection like this one (`twin`)
        self._tokens: list[str | None] = [None] * len(clients)  # per member: the token sent to it
        self._auth_locks = [asyncio.Lock() for _ in clients]
        self.endpoints = list(endpoints)
        self._member = 0  # the index of the member calls go to
        self.timeout_s = timeout_s
        self._closed = False

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        timeout_s: float = 5.0,
        tls_ca: str | None = None,
        credentials: EtcdCredentials | None = None,
    ) -> Etcd:
        """Open a channel and wait until etcd answers (up to timeout_s)."""
        return await cls.connect_cluster(
            [(host, port)], timeout_s=timeout_s, tls_ca=tls_ca, credentials=credentials
        )

    @classmethod
    async def connect_cluster(
        cls,
        endpoints: Sequence[tuple[str, int]],
        *,
        timeout_s: float = 5.0,
        tls_ca: str | None = None,
        credentials: EtcdCredentials | None = None,
    ) -> Etcd:
        """Open a channel to every member and wait until one answers (trying each in turn, up to
        timeout_s); calls then go to that member until it is unavailable. tls_ca: the CA file whose
        certificates the members must present (TLS, shared/store/etcd_channel.py); None: plain.
        credentials: the user to authenticate as (EtcdAuthError, at the first call, when refused); None:
        no authentication."""
        etcd = await cls._open(endpoints, timeout_s=timeout_s, tls_ca=tls_ca, credentials=credentials)
        try:
            await etcd.wait_ready(timeout_s)
        except BaseException:
            await etcd.close()
            raise
        return etcd

    @classmethod
    async def _open(
        cls,
        endpoints: Sequence[tuple[str, int]],
        *,
        timeout_s: float,
        tls_ca: str | None,
        credentials: EtcdCredentials | None,
    ) -> Etcd:
        clients = [
            etcd_client(host, port, timeout_s=timeout_s, options=_CHANNEL_OPTIONS, tls_ca=tls_ca)
            for host, port in endpoints
        ]
        for client in clients:
            await client.connect()  # only creates the channel: nothing is sent before the first call
        return cls(
            clients,
            [f"{host}:{port}" for host, port in endpoints],
            timeout_s=timeout_s,
            credentials=credentials,
            tls_ca=tls_ca,
        )

    async def twin(self) -> Etcd:
        """Another connection to the same members, as the same user, without waiting for an answer: for
        another thread's event loop (a grpc channel serves the loop it was opened on; KeptLease)."""
        endpoints = [(host, int(port)) for host, _, port in (e.rpartition(":") for e in self.endpoints)]
        return await Etcd._open(
            endpoints, timeout_s=self.timeout_s, tls_ca=self.tls_ca, credentials=self.credentials
        )

    @property
    def member(self) -> str:
        """The endpoint calls go to now."""
        return self.endpoints[self._member]

    def _unavailable(self, member: int, error: grpc.aio.AioRpcError | Exception) -> None:
        """A call to `member` found it unavailable: the next calls go to the next member (unless a
        concurrent call moved on already)."""
        if len(self._clients) == 1 or member != self._member:
            return
        self._member = (member + 1) % len(self._clients)
        log.info(
            "etcd member unavailable, moving on",
            failed=self.endpoints[member],
            to=self.member,
            error=str(error),
        )

    async def close(self) -> None:
        self._closed = True
        for client in self._clients:
            await client.close()

    async def wait_ready(self, timeout_s: float) -> int:
        """Wait until etcd answers (for instance after a restart); returns its current revision."""
        deadline = time.monotonic() + timeout_s
        delay = 0.05
        while True:
            try:
                return await self.revision()
            except EtcdUnavailable:
                if time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    async def _metadata(self, member: int, refused: str | None = None) -> tuple[tuple[str, str], ...] | None:
        """The token metadata for calls to member (authenticating first when it has none, or when the
        token `refused` is still the current one); None without credentials."""
        if self.credentials is None:
            return None
        if self._tokens[member] is None or self._tokens[member] == refused:
            async with self._auth_locks[member]:  # concurrent calls refused together authenticate once
                if self._tokens[member] is None or self._tokens[member] == refused:
                    channel = self._clients[member].channel
                    try:
                        self._tokens[member] = await authenticate(channel, self.credentials, self.timeout_s)
                    except grpc.aio.AioRpcError as exc:
                        self._unavailable(member, exc)
                        raise _translate(exc, "authenticate") from exc
        return (("token", str(self._tokens[member])),)

    async def _call(self, what: str, method: Callable[[aetcd.Client], Any], request: Any) -> Any:
        """One unary call to the current member: method picks the stub's method from its client. A call
        whose token is refused is made once more with a new token."""
        member = self._member
        refused: str | None = None
        for attempt in range(2):
            metadata = await self._metadata(member, refused)
            try:
                return await method(self._clients[member])(request, timeout=self.timeout_s, metadata=metadata)
            except grpc.aio.AioRpcError as exc:
                if attempt == 0 and metadata is not None and token_refused(exc):
                    refused = metadata[0][1]
                    continue
                if exc.code() in _MOVES_TO_NEXT_MEMBER:
                    self._unavailable(member, exc)
                raise _translate(exc, what) from exc
        raise AssertionError("unreachable")  # the second attempt returns or raises

    async def auth(self, method: str, request: Any) -> Any:
        """One call of etcd's Auth API (users, roles, enabling authentication) as this client's user."""
        return await self._call(f"auth {method}", lambda c: getattr(rpc.AuthStub(c.channel), method), request)

    async def revision(self) -> int:
        resp = await self._call(
            "revision", lambda c: c.kvstub.Range, rpc.RangeRequest(key=REVISION_PROBE_KEY, count_only=True)
        )
        return int(resp.header.revision)

    async def get(self, key: Key) -> KeyValue | None:
        resp = await self._call("get", lambda c: c.kvstub.Range, rpc.RangeRequest(key=as_key(key)))
        return KeyValue.of(resp.kvs[0]) if resp.kvs else None

    async def get_prefix(self, prefix: Key) -> tuple[list[KeyValue], int]:
        """Every key under prefix in key order, read at one revision (returned too)."""
        req = rpc.RangeRequest(key=as_key(prefix), range_end=prefix_end(prefix))
        resp = await self._call("get_prefix", lambda c: c.kvstub.Range, req)
        return [KeyValue.of(kv) for kv in resp.kvs], int(resp.header.revision)

    async def put(self, key: Key, value: bytes, *, lease: int = 0) -> int:
        """Write key; returns the revision of the write."""
        req = rpc.PutRequest(key=as_key(key), value=value, lease=lease)
        resp = await self._call("put", lambda c: c.kvstub.Put, req)
        return int(resp.header.revision)

    async def delete(self, key: Key) -> bool:
        resp = await self._call(
            "delete", lambda c: c.kvstub.DeleteRange, rpc.DeleteRangeRequest(key=as_key(key))
        )
        return int(resp.deleted) > 0

    async def delete_prefix(self, prefix: Key) -> int:
        req = rpc.DeleteRangeRequest(key=as_key(prefix), range_end=prefix_end(prefix))
        resp = await self._call("delete_prefix", lambda c: c.kvstub.DeleteRange, req)
        return int(resp.deleted)

    async def txn(
        self, compare: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()
    ) -> TxnResult:
        """If every compare holds, apply success, else failure; atomically, at one revision."""
        req = rpc.TxnRequest(
            compare=[c.message() for c in compare],
            success=[op.message() for op in success],
            failure=[op.message() for op in failure],
        )
        resp = await self._call("txn", lambda c: c.kvstub.Txn, req)
        reads = tuple(
            tuple(KeyValue.of(kv) for kv in r.response_range.kvs)
            for r in resp.responses
            if r.WhichOneof("response") == "response_range"
        )
        return TxnResult(succeeded=bool(resp.succeeded), revision=int(resp.header.revision), reads=reads)

    async def grant(self, ttl_s: int) -> int:
        """A new lease of ttl_s seconds; returns its id."""
        resp = await self._call(
            "lease grant", lambda c: c.leasestub.LeaseGrant, rpc.LeaseGrantRequest(TTL=ttl_s)
        )
        if resp.error:
            raise EtcdError(f"lease grant refused: {resp.error}")
        return int(resp.ID)

    async def revoke(self, lease_id: int) -> None:
        """End the lease now, deleting its keys. Revoking an expired lease is not an error."""
        try:
            await self._call(
                "lease revoke", lambda c: c.leasestub.LeaseRevoke, rpc.LeaseRevokeRequest(ID=lease_id)
            )
        except LeaseNotFound:
            return

    async def refresh(self, lease_id: int) -> int:
        """Renew the lease once; returns its TTL in seconds. Raises LeaseNotFound once it expired."""
        member = self._member
        metadata = await self._metadata(member)
        try:
            async for reply in self._clients[member].leasestub.LeaseKeepAlive(
                iter([rpc.LeaseKeepAliveRequest(ID=lease_id)]), timeout=self.timeout_s, metadata=metadata
            ):
                if reply.TTL <= 0:
                    raise LeaseNotFound(f"lease {lease_id:x} expired")
                return int(reply.TTL)
        except grpc.aio.AioRpcError as exc:
            if metadata is not None and token_refused(exc):
                self._tokens[member] = None  # the next call authenticates again; this one's caller retries
                raise EtcdUnavailable(f"lease keepalive: token refused ({exc.details()})") from exc
            if exc.code() in _MOVES_TO_NEXT_MEMBER:
                self._unavailable(member, exc)
            raise _translate(exc, "lease keepalive") from exc
        raise EtcdUnavailable("lease keepalive: stream closed without a reply")

    async def watch_prefix(
        self, prefix: Key, *, start_revision: int | None = None
    ) -> AsyncGenerator[WatchEvent, None]:
        """Changes under prefix from start_revision on, forever, in revision order.

        start_revision defaults to the revision after the current one when iteration starts; pass it
        explicitly (revision() + 1, or a listing's revision + 1) to be sure nothing is missed in between.

        Survives etcd restarts and reconnects: the watch is re-created from the revision after the last
        one delivered, so no change is missed or repeated. Raises WatchCompacted if that revision is gone.
        """
        raw_prefix = as_key(prefix)
        next_rev = start_revision if start_revision is not None else await self.revision() + 1
        delay = 0.05
        while not self._closed:
            stream = None
            member = self._member
            try:
                if self.credentials is not None:
                    await self.revision()  # renews the token first if it expired: the stream carries it
                    member = self._member
                stream = watcher.Watcher(
                    rpc.WatchStub(self._clients[member].channel),
                    timeout=self.timeout_s,
                    metadata=await self._metadata(member),
                )
                events: asyncio.Queue[Any] = asyncio.Queue()
                await stream.add_callback(
                    raw_prefix, events.put, range_end=prefix_end(raw_prefix), start_revision=next_rev
                )
                while (event := await events.get()) is not None:  # None: the stream was shut down
                    if isinstance(event, Exception):
                        raise event
                    delay = 0.05
                    kv = event.kv
                    yield WatchEvent(
                        kind="put" if event.kind == "PUT" else "delete",
                        key=kv.key,
                        value=kv.value,
                        mod_revision=kv.mod_revision,
                        create_revision=kv.create_revision,
                        lease=kv.lease,
                    )
                    # etcd sends all events of a revision in one response, which aetcd queues whole before
                    # any stream error, so resuming after the last delivered revision loses nothing.
                    next_rev = kv.mod_revision + 1
                reason = "watch stream ended"
            except aetcd.RevisionCompactedError as exc:
                raise WatchCompacted(exc.compacted_revision) from exc
            except (aetcd.ClientError, grpc.RpcError, EtcdUnavailable) as exc:
                reason = repr(exc)
                self._unavailable(member, exc)  # resumed on the next member
            finally:
                if stream is not None:
                    await stream.shutdown()
            if self._closed:
                return
            log.info(
                "etcd watch interrupted, resuming", prefix=raw_prefix, from_revision=next_rev, reason=reason
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, _WATCH_RETRY_MAX_S)
