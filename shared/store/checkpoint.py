"""Service checkpoints: a view (opaque bytes) and the last event sequence applied to it.

A checkpoint is a cache of the replay: load() returning None (absent, deleted or damaged) only means
replaying from the start. Layout under ``/lahar/checkpoints/<service>/``:

- ``seq``: the sequence as ASCII digits, so a writer can compare "the previous checkpoint is mine";
- ``head``: MessagePack ``{"seq", "view"}`` for a small view, or ``{"seq", "gen", "chunks", "sha256"}``,
  with ``"zlib": true`` when the stored bytes are the view compressed (every checkpoint written now: a
  service's state compresses 10-26x, and at 40,000 pods its 30-50 MB written to etcd at once delayed the
  lease renewals etcd applies behind them until leaders lost their terms). Checkpoints written before
  without it load as they are;
- ``data/<gen>/<n>``: the chunks of a large view. etcd caps a request at about 1.5 MiB, so a large view is
  written in chunks under a fresh generation first, invisible until one transaction switches ``head``
  and ``seq`` to it and deletes every other generation.

The switching transaction is guarded by a fence (the writer's leadership term) and/or the expected
previous sequence, so a deposed or stale writer cannot overwrite a newer checkpoint.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
import zlib
from dataclasses import dataclass

import msgpack
import structlog

from shared.store.election import Fence, FencedOut, fenced_txn
from shared.store.etcd import (
    Compare,
    Delete,
    Etcd,
    EtcdError,
    Op,
    TxnResult,
    absent,
    delete_prefix,
    get,
    prefix_end,
    put,
    value_is,
)

log = structlog.get_logger(__name__)

CHECKPOINT_PREFIX = "/lahar/checkpoints/"
INLINE_MAX_BYTES = 512 * 1024
CHUNK_BYTES = 1024 * 1024
_PARALLEL_CHUNK_PUTS = 4
_ZLIB_LEVEL = 1  # levels above 1 shrink a state's checkpoint a few % more for more CPU


class CheckpointConflict(EtcdError):
    """The stored checkpoint is not the one the writer expected to replace."""

    def __init__(self, service: str, expected: int, actual: int | None) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"checkpoint of {service}: expected previous sequence {expected}, found {actual}")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    view: bytes
    seq: int


class CheckpointStore:
    def __init__(self, etcd: Etcd, service: str, *, prefix: str = CHECKPOINT_PREFIX) -> None:
        if not service or "/" in service:
            raise ValueError(f"service must be a non-empty name without '/', got {service!r}")
        self.etcd = etcd
        self.service = service
        self.root = f"{prefix}{service}/".encode()
        self.seq_key = self.root + b"seq"
        self.head_key = self.root + b"head"
        self.data_prefix = self.root + b"data/"

    async def save(
        self, view: bytes, seq: int, *, fence: Fence | None = None, expected_seq: int | None = None
    ) -> None:
        """Store view as of seq.

        expected_seq: the sequence of the checkpoint being replaced (0: there must be none), else
        CheckpointConflict. fence: the writer's leadership term, else FencedOut.
        """
        guards: list[Compare] = []
        if expected_seq == 0:
            guards.append(absent(self.seq_key))
        elif expected_seq is not None:
            guards.append(value_is(self.seq_key, str(expected_seq).encode()))
        head: dict[str, object]
        drop: list[Op]
        gen_prefix: bytes | None = None
        # in a thread: zlib lets go of the GIL, so the loop goes on meanwhile (tens of ms per 30 MB)
        stored = await asyncio.to_thread(zlib.compress, view, _ZLIB_LEVEL)
        if len(stored) <= INLINE_MAX_BYTES:
            head = {"seq": seq, "view": stored, "zlib": True}
            drop = [delete_prefix(self.data_prefix)]
        else:
            gen = f"{seq:020d}-{uuid.uuid4().hex[:12]}"
            gen_prefix = self.data_prefix + f"{gen}/".encode()
            chunks = await self._write_chunks(gen_prefix, stored)
            sha256 = hashlib.sha256(stored).hexdigest()
            head = {"seq": seq, "gen": gen, "chunks": chunks, "sha256": sha256, "zlib": True}
            # Every other generation: older ones and any left behind by an interrupted save.
            drop = [
                Delete(self.data_prefix, gen_prefix),
                Delete(prefix_end(gen_prefix), prefix_end(self.data_prefix)),
            ]
        success: list[Op] = [
            put(self.head_key, msgpack.packb(head, use_bin_type=True)),
            put(self.seq_key, str(seq).encode()),
            *drop,
        ]
        try:
            result = await self._commit(guards, success, fence)
        except FencedOut:
            if gen_prefix is not None:
                await self._discard(gen_prefix)
            raise
        # Any other error leaves the chunks alone: the commit may have applied (a lost reply), and
        # unused chunks are deleted by the next successful save anyway.
        if not result.succeeded:
            if gen_prefix is not None:
                await self._discard(gen_prefix)
            found = result.reads[0]
            actual = int(found[0].value) if found else None
            raise CheckpointConflict(self.service, expected_seq or 0, actual)

    async def _commit(self, guards: list[Compare], success: list[Op], fence: Fence | None) -> TxnResult:
        failure = [get(self.seq_key)]
        if fence is not None:
            return await fenced_txn(self.etcd, fence, guards, success, failure)
        return await self.etcd.txn(guards, success, failure)

    async def _write_chunks(self, gen_prefix: bytes, view: bytes) -> int:
        chunks = [view[i : i + CHUNK_BYTES] for i in range(0, len(view), CHUNK_BYTES)]
        for start in range(0, len(chunks), _PARALLEL_CHUNK_PUTS):
            await asyncio.gather(
                *(
                    self.etcd.put(gen_prefix + f"{n:08d}".encode(), chunk)
                    for n, chunk in enumerate(chunks[start : start + _PARALLEL_CHUNK_PUTS], start=start)
                )
            )
        return len(chunks)

    async def _discard(self, gen_prefix: bytes) -> None:
        try:
            await self.etcd.delete_prefix(gen_prefix)
        except EtcdError as exc:
            # Harmless leftovers: the next successful save deletes every other generation.
            log.info("could not discard unused checkpoint chunks", service=self.service, error=str(exc))

    async def load(self) -> Checkpoint | None:
        """The latest checkpoint, or None if there is none or it is damaged (then: replay from the start)."""
        kvs, _ = await self.etcd.get_prefix(self.root)  # one read: head and chunks of the same revision
        values = {kv.key: kv.value for kv in kvs}
        raw_head = values.get(self.head_key)
        if raw_head is None:
            return None
        try:
            head = msgpack.unpackb(raw_head, raw=False)
            if "view" in head:
                stored = head["view"]
            else:
                gen_prefix = self.data_prefix + f"{head['gen']}/".encode()
                chunks = range(int(head["chunks"]))
                stored = b"".join(values[gen_prefix + f"{n:08d}".encode()] for n in chunks)
                if hashlib.sha256(stored).hexdigest() != head["sha256"]:
                    raise ValueError("checksum mismatch")
            view = zlib.decompress(stored) if head.get("zlib") else stored
            return Checkpoint(view=view, seq=int(head["seq"]))
        except (ValueError, KeyError, TypeError, msgpack.UnpackException, zlib.error) as exc:
            log.warning("checkpoint unusable, ignoring it", service=self.service, error=repr(exc))
            return None

    async def delete(self) -> None:
        """Forget the checkpoint; the next start replays the whole log."""
        await self.etcd.delete_prefix(self.root)
