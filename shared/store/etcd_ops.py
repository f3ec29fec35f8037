"""The etcd client's requests and results as values: keys, compares, operations of a transaction, a
transaction's result and a watch event (shared/store/etcd.py sends them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aetcd import rpc

Key = str | bytes
# The key read (count only) to learn the cluster's revision: a Range needs a key, and with etcd
# authentication every role may read this one key and nothing else outside its own ranges.
REVISION_PROBE_KEY = b"\0"


def as_key(key: Key) -> bytes:
    return key.encode() if isinstance(key, str) else key


def prefix_end(prefix: Key) -> bytes:
    """The exclusive end of the key range holding every key that starts with prefix."""
    raw = bytearray(as_key(prefix))
    while raw:
        if raw[-1] < 0xFF:
            raw[-1] += 1
            return bytes(raw)
        raw.pop()
    return b"\0"  # every key


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int

    @classmethod
    def of(cls, kv: Any) -> KeyValue:
        return cls(kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version, kv.lease)


@dataclass(frozen=True, slots=True)
class Compare:
    """One condition of a transaction; build with the helpers below."""

    key: bytes
    target: Literal["VALUE", "VERSION", "CREATE", "MOD"]
    op: Literal["EQUAL", "NOT_EQUAL", "LESS", "GREATER"]
    operand: bytes | int

    def message(self) -> Any:
        cmp = rpc.Compare(key=self.key, target=self.target, result=self.op)
        field = {"VALUE": "value", "VERSION": "version", "CREATE": "create_revision", "MOD": "mod_revision"}
        setattr(cmp, field[self.target], self.operand)
        return cmp


def value_is(key: Key, value: bytes) -> Compare:
    return Compare(as_key(key), "VALUE", "EQUAL", value)


def mod_revision_is(key: Key, revision: int) -> Compare:
    return Compare(as_key(key), "MOD", "EQUAL", revision)


def create_revision_is(key: Key, revision: int) -> Compare:
    return Compare(as_key(key), "CREATE", "EQUAL", revision)


def absent(key: Key) -> Compare:
    """True while the key does not exist (its create revision reads as 0)."""
    return Compare(as_key(key), "CREATE", "EQUAL", 0)


@dataclass(frozen=True, slots=True)
class Put:
    key: bytes
    value: bytes
    lease: int = 0

    def message(self) -> Any:
        return rpc.RequestOp(request_put=rpc.PutRequest(key=self.key, value=self.value, lease=self.lease))


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete key, or every key in [key, range_end) when range_end is given."""

    key: bytes
    range_end: bytes | None = None

    def message(self) -> Any:
        req = rpc.DeleteRangeRequest(key=self.key, range_end=self.range_end or b"")
        return rpc.RequestOp(request_delete_range=req)


@dataclass(frozen=True, slots=True)
class Get:
    """Read key, or every key in [key, range_end) when range_end is given."""

    key: bytes
    range_end: bytes | None = None

    def message(self) -> Any:
        return rpc.RequestOp(request_range=rpc.RangeRequest(key=self.key, range_end=self.range_end or b""))


Op = Put | Delete | Get


def put(key: Key, value: bytes, *, lease: int = 0) -> Put:
    return Put(as_key(key), value, lease)


def delete(key: Key) -> Delete:
    return Delete(as_key(key))


def delete_prefix(prefix: Key) -> Delete:
    return Delete(as_key(prefix), prefix_end(prefix))


def get(key: Key) -> Get:
    return Get(as_key(key))


def get_prefix(prefix: Key) -> Get:
    return Get(as_key(prefix), prefix_end(prefix))


@dataclass(frozen=True, slots=True)
class TxnResult:
    """succeeded: which branch ran. reads: the KeyValues of that branch's Get ops, in op order."""

    succeeded: bool
    revision: int
    reads: tuple[tuple[KeyValue, ...], ...]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: Literal["put", "delete"]
    key: bytes
    value: bytes
    mod_revision: int
    create_revision: int
    lease: int
