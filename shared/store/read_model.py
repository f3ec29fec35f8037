"""The read model: the current state of every object, one etcd key per object, written by its owner.

Keys are ``/lahar/objects/<kind>/<namespace>/<name>`` (``_`` as namespace when cluster-scoped) and values
are MessagePack maps ``{"seq": N, "object": {...}}``: N is the event sequence the value reflects. A write
only moves a key forward: it is applied only if the stored sequence is older, checked by a transaction
that compares the key's mod revision to the one read. A deleted object leaves a tombstone carrying its
sequence, so replaying older events (after a restart from an old checkpoint) cannot resurrect it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import msgpack

from shared.store.election import Fence, fenced_txn
from shared.store.etcd import Compare, Etcd, EtcdError, absent, get, mod_revision_is, put

OBJECTS_PREFIX = "/lahar/objects/"
CLUSTER_SCOPE = "_"
# etcd refuses transactions with more than 128 operations by default (--max-txn-ops).
_KEYS_PER_TXN = 64
_MAX_ATTEMPTS = 10


def _token(value: str) -> str:
    if not value:
        raise ValueError("kind, namespace and name must be non-empty")
    # quote() keeps "_" as is, which would read back as "cluster-scoped".
    return "%5F" if value == CLUSTER_SCOPE else quote(value, safe="")


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


class ReadModel:
    """Reads for everyone; writes for the owning service, optionally fenced by its leadership."""

    def __init__(self, etcd: Etcd, *, prefix: str = OBJECTS_PREFIX, fence: Fence | None = None) -> None:
        self.etcd = etcd
        self.prefix = prefix.encode()
        self.fence = fence

    def key(self, kind: str, namespace: str | None, name: str) -> bytes:
        ns = CLUSTER_SCOPE if namespace is None else _token(namespace)
        return self.prefix + f"{_token(kind)}/{ns}/{_token(name)}".encode()

    async def get(self, kind: str, namespace: str | None, name: str) -> StoredObject | None:
        kv = await self.etcd.get(self.key(kind, namespace, name))
        return None if kv is None else _decode(kv.key, kv.value, self.prefix)[1]

    async def list(self, kind: str, namespace: str | None = None) -> tuple[list[StoredObject], int]:
        """Live objects of a kind (in one namespace, or all), and the etcd revision they were read at."""
        scope = self.prefix + f"{_token(kind)}/".encode()
        if namespace is not None:
            scope += f"{_token(namespace)}/".encode()
        kvs, revision = await self.etcd.get_prefix(scope)
        objects = [obj for kv in kvs if (obj := _decode(kv.key, kv.value, self.prefix)[1]) is not None]
        return objects, revision

    async def put(
        self, kind: str, namespace: str | None, name: str, obj: Mapping[str, Any], seq: int
    ) -> bool:
        """Store obj as of seq; False if the key already reflects seq or later."""
        return (await self.apply([Write(kind, namespace, name, seq, obj)]))[0]

    async def delete(self, kind: str, namespace: str | None, name: str, seq: int) -> bool:
        """Mark the object deleted as of seq; False if the key already reflects seq or later."""
        return (await self.apply([Write(kind, namespace, name, seq, None)]))[0]

    async def apply(self, writes: Sequence[Write]) -> list[bool]:
        """Apply many writes with few round trips; per write, whether it moved its key forward."""
        applied: list[bool] = []
        for start in range(0, len(writes), _KEYS_PER_TXN):
            applied.extend(await self._apply_chunk(writes[start : start + _KEYS_PER_TXN]))
        return applied

    async def _apply_chunk(self, writes: Sequence[Write]) -> list[bool]:
        keys = [self.key(w.kind, w.namespace, w.name) for w in writes]
        # Within one call the newest write per key wins; the others are stale by definition.
        newest: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in newest or writes[i].seq > writes[newest[key]].seq:
                newest[key] = i
        for _ in range(_MAX_ATTEMPTS):
            # One snapshot read of all keys, so the compares below describe a single revision.
            current = await self.etcd.txn([], [get(key) for key in newest])
            guards: list[Compare] = []
            puts = []
            chosen: set[int] = set()
            for (key, i), found in zip(newest.items(), current.reads, strict=True):
                kv = found[0] if found else None
                stored_seq = _decode(kv.key, kv.value, self.prefix)[0] if kv is not None else None
                if stored_seq is not None and stored_seq >= writes[i].seq:
                    continue
                guards.append(mod_revision_is(key, kv.mod_revision) if kv is not None else absent(key))
                doc = {
                    "seq": writes[i].seq,
                    "object": None if writes[i].object is None else dict(writes[i].object),
                }
                puts.append(put(key, msgpack.packb(doc, use_bin_type=True)))
                chosen.add(i)
            if not puts:
                return [False] * len(writes)
            if self.fence is not None:
                result = await fenced_txn(self.etcd, self.fence, guards, puts)
            else:
                result = await self.etcd.txn(guards, puts)
            if result.succeeded:
                return [i in chosen for i in range(len(writes))]
        raise EtcdError(f"read model writes kept conflicting with another writer ({_MAX_ATTEMPTS} attempts)")
