"""The read model: the current state of every object, one etcd key per object, written by its owner.

Keys are ``/lahar/objects/<kind>/<namespace>/<name>`` (``_`` as namespace when cluster-scoped) and values
are MessagePack maps ``{"seq": N, "object": {...}}``: N is the event sequence the value reflects. A write
only moves a key forward: it is applied only if the stored sequence is older, checked by a transaction
that compares the key's mod revision to the one read. A deleted object leaves a tombstone carrying its
sequence, so replaying older events (after a restart from an old checkpoint) cannot resurrect it.

A writer that keeps `Stored` (what it listed once, and what it wrote since) knows each key's sequence
and mod revision without reading them again, so a write is one transaction. Without it, the keys are read
one Range each: never by a read-only transaction, which etcd 3.5.1 (the version the project installs)
answers with a panic of the whole server when the client gives up on it.
"""

from __future__ import annotations

import asyncio
import builtins  # the class below has a method named list: its annotations name the type as builtins.list
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import msgpack
import msgspec

from shared.store.election import Fence, fenced_txn
from shared.store.etcd import Compare, Etcd, EtcdError, KeyValue, absent, mod_revision_is, put

OBJECTS_PREFIX = "/lahar/objects/"
CLUSTER_SCOPE = "_"
# etcd refuses a transaction whose compares, or either branch, hold more than 128 operations by default
# (--max-txn-ops): a write is a compare and a put, and a fenced one adds a compare and a read.
_KEYS_PER_TXN = 127
# and requests over 1.5 MiB (--max-request-bytes): the values of one transaction stay under 1 MiB
_BYTES_PER_TXN = 1 << 20
_encode = msgspec.msgpack.Encoder().encode
_MAX_ATTEMPTS = 10


# what quote(value, safe="") leaves as it is: a value made only of these is its own token (checked in C,
# where quote() costs microseconds per call, three per key written)
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]+")


def _token(value: str) -> str:
    if not value:
        raise ValueError("kind, namespace and name must be non-empty")
    # quote() keeps "_" as is, which would read back as "cluster-scoped".
    if value == CLUSTER_SCOPE:
        return "%5F"
    return value if _UNQUOTED.fullmatch(value) else quote(value, safe="")


def scope(kind: str, namespace: str | None = None, *, prefix: str = OBJECTS_PREFIX) -> bytes:
    """The key prefix of every object of a kind, or of a kind in one namespace."""
    head = prefix + f"{_token(kind)}/"
    return (head if namespace is None else head + f"{_token(namespace)}/").encode()


@dataclass(frozen=True, slots=True)
class StoredObject:
    kind: str
    namespace: str | None
    name: str
    seq: int
    object: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Write:
    """Set an object (or, with object=None, delete it) as of event sequence seq."""

    kind: str
    namespace: str | None
    name: str
    seq: int
    object: Mapping[str, Any] | None


def _plain(obj: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return obj if obj is None or isinstance(obj, dict) else dict(obj)


def _decode(key: bytes, value: bytes, prefix: bytes) -> tuple[int, StoredObject | None]:
    doc = msgpack.unpackb(value, raw=False)
    kind, ns, name = key[len(prefix) :].decode().split("/")
    if doc.get("object") is None:
        return int(doc["seq"]), None
    return int(doc["seq"]), StoredObject(
        kind=unquote(kind),
        namespace=None if ns == CLUSTER_SCOPE else unquote(ns),
        name=unquote(name),
        seq=int(doc["seq"]),
        object=doc["object"],
    )


@dataclass(slots=True)
class Stored:
    """What one writer knows is stored: key -> (sequence, mod revision) of the keys it listed or wrote,
    and the kinds it listed whole (a key of those kinds it does not know is absent)."""

    keys: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    kinds: set[bytes] = field(default_factory=set)  # key prefixes of the kinds listed whole

    def knows(self, key: bytes) -> bool:
        return key in self.keys or any(key.startswith(kind) for kind in self.kinds)


class ReadModel:
    """Reads for everyone; writes for the owning service, optionally fenced by its leadership, and
    remembering what it stored in `stored` when given one."""

    def __init__(
        self,
        etcd: Etcd,
        *,
        prefix: str = OBJECTS_PREFIX,
        fence: Fence | None = None,
        stored: Stored | None = None,
    ) -> None:
        self.etcd = etcd
        self.prefix = prefix.encode()
        self.fence = fence
        self.stored = stored

    def key(self, kind: str, namespace: str | None, name: str) -> bytes:
        ns = CLUSTER_SCOPE if namespace is None else _token(namespace)
        return self.prefix + f"{_token(kind)}/{ns}/{_token(name)}".encode()

    async def get(self, kind: str, namespace: str | None, name: str) -> StoredObject | None:
        kv = await self.etcd.get(self.key(kind, namespace, name))
        return None if kv is None else _decode(kv.key, kv.value, self.prefix)[1]

    async def list(self, kind: str, namespace: str | None = None) -> tuple[list[StoredObject], int]:
        """Live objects of a kind (in one namespace, or all), and the etcd revision they were read at; a
        writer with `stored` learns every key of the kind (tombstones too) on the way."""
        kind_scope = scope(kind, namespace, prefix=self.prefix.decode())
        kvs, revision = await self.etcd.get_prefix(kind_scope)
        decoded = [(kv, _decode(kv.key, kv.value, self.prefix)) for kv in kvs]
        if self.stored is not None:
            self.stored.keys.update((kv.key, (seq, kv.mod_revision)) for kv, (seq, _) in decoded)
            self.stored.kinds.add(kind_scope)
        return [obj for _, (_, obj) in decoded if obj is not None], revision

    async def put(
        self, kind: str, namespace: str | None, name: str, obj: Mapping[str, Any], seq: int
    ) -> bool:
        """Store obj as of seq; False if the key already reflects seq or later."""
        return (await self.apply([Write(kind, namespace, name, seq, obj)]))[0]

    async def delete(self, kind: str, namespace: str | None, name: str, seq: int) -> bool:
        """Mark the object deleted as of seq; False if the key already reflects seq or later."""
        return (await self.apply([Write(kind, namespace, name, seq, None)]))[0]

    async def apply(self, writes: Sequence[Write]) -> builtins.list[bool]:
        """Apply many writes with few round trips (as many per transaction as etcd's limits allow); per
        write, whether it moved its key forward."""
        # Each value is encoded once, whatever the attempts, as its chunk is cut: the loop runs between
        # chunks (each awaits its transaction), so tens of thousands of writes never encode in one go.
        applied: list[bool] = []
        chunk: list[Write] = []
        values: list[bytes] = []
        size = 0
        for write in writes:
            value = _encode({"seq": write.seq, "object": _plain(write.object)})
            if chunk and (len(chunk) == _KEYS_PER_TXN or size + len(value) > _BYTES_PER_TXN):
                applied.extend(await self._apply_chunk(chunk, values))
                chunk, values, size = [], [], 0
            chunk.append(write)
            values.append(value)
            size += len(value)
        if chunk:
            applied.extend(await self._apply_chunk(chunk, values))
        return applied

    async def _apply_chunk(self, writes: Sequence[Write], values: Sequence[bytes]) -> builtins.list[bool]:
        keys = [self.key(w.kind, w.namespace, w.name) for w in writes]
        # Within one call the newest write per key wins; the others are stale by definition.
        newest: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in newest or writes[i].seq > writes[newest[key]].seq:
                newest[key] = i
        for _ in range(_MAX_ATTEMPTS):
            current = await self._current(list(newest))
            guards: list[Compare] = []
            puts = []
            chosen: set[int] = set()
            for key, i in newest.items():
                stored_seq, revision = current[key]
                if stored_seq is not None and stored_seq >= writes[i].seq:
                    continue
                guards.append(mod_revision_is(key, revision) if revision else absent(key))
                puts.append(put(key, values[i]))
                chosen.add(i)
            if not puts:
                return [False] * len(writes)
            if self.fence is not None:
                result = await fenced_txn(self.etcd, self.fence, guards, puts)
            else:
                result = await self.etcd.txn(guards, puts)
            if result.succeeded:
                self._remember({keys[i]: writes[i].seq for i in chosen}, result.revision)
                return [i in chosen for i in range(len(writes))]
            self._forget(newest)  # somebody else wrote one of them: read them again
        raise EtcdError(f"read model writes kept conflicting with another writer ({_MAX_ATTEMPTS} attempts)")

    async def _current(self, keys: builtins.list[bytes]) -> dict[bytes, tuple[int | None, int]]:
        """Each key's stored sequence (None: absent) and mod revision (0: absent): from `stored` where it
        knows, else read, one Range per key."""
        known = self.stored
        unknown = keys if known is None else [k for k in keys if not known.knows(k)]
        read = await asyncio.gather(*(self.etcd.get(key) for key in unknown))
        current = {key: self._state(kv) for key, kv in zip(unknown, read, strict=True)}
        if known is not None:
            for key in keys:
                if key not in current:
                    seq, revision = known.keys.get(key, (None, 0))
                    current[key] = (seq, revision)
        return current

    def _state(self, kv: KeyValue | None) -> tuple[int | None, int]:
        if kv is None:
            return None, 0
        seq = _decode(kv.key, kv.value, self.prefix)[0]
        if self.stored is not None:
            self.stored.keys[kv.key] = (seq, kv.mod_revision)
        return seq, kv.mod_revision

    def _remember(self, seqs: Mapping[bytes, int], revision: int) -> None:
        if self.stored is not None:
            self.stored.keys.update((key, (seq, revision)) for key, seq in seqs.items())

    def _forget(self, keys: Iterable[bytes]) -> None:
        if self.stored is not None:
            for key in keys:
                self.stored.keys.pop(key, None)
                self.stored.kinds.discard(next((k for k in self.stored.kinds if key.startswith(k)), b""))
