from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import pytest

from shared.store.checkpoint import CHUNK_BYTES, Checkpoint, CheckpointConflict, CheckpointStore
from shared.store.election import Fence
from shared.store.etcd import (
    Etcd,
    LeaseNotFound,
    WatchEvent,
    absent,
    delete,
    get,
    get_prefix,
    mod_revision_is,
    put,
    value_is,
)
from shared.store.lease import KeptLease
from shared.store.read_model import ReadModel, Stored, Write

Eventually = Callable[..., Awaitable[Any]]


async def test_kv_and_prefix_range(etcd: Etcd) -> None:
    rev = await etcd.put("/t/a", b"1")
    await etcd.put("/t/b", b"2")
    await etcd.put("/tx", b"outside")
    kv = await etcd.get("/t/a")
    assert kv is not None and (kv.value, kv.mod_revision, kv.create_revision) == (b"1", rev, rev)
    kvs, at = await etcd.get_prefix("/t/")
    assert [(k.key, k.value) for k in kvs] == [(b"/t/a", b"1"), (b"/t/b", b"2")]
    assert at == rev + 2
    assert await etcd.delete("/t/a") and not await etcd.delete("/t/a")
    assert await etcd.delete_prefix("/t/") == 1
    assert await etcd.get("/t/b") is None


async def test_txn_compares_on_mod_revision_and_value(etcd: Etcd) -> None:
    created = await etcd.txn([absent("/k")], [put("/k", b"v1")])
    assert created.succeeded
    again = await etcd.txn([absent("/k")], [put("/k", b"other")], [get("/k")])
    assert not again.succeeded and again.reads[0][0].value == b"v1"
    moved = await etcd.txn([mod_revision_is("/k", created.revision)], [put("/k", b"v2"), put("/k2", b"x")])
    assert moved.succeeded
    stale = await etcd.txn([mod_revision_is("/k", created.revision)], [delete("/k")])
    assert not stale.succeeded
    by_value = await etcd.txn([value_is("/k", b"v2")], [get_prefix("/k")])
    assert by_value.succeeded and [kv.key for kv in by_value.reads[0]] == [b"/k", b"/k2"]


async def test_lease_keeps_keys_alive_until_revoked(etcd: Etcd) -> None:
    lease = await KeptLease.grant(etcd, ttl_s=1)
    await etcd.put("/leased", b"x", lease=lease.id)
    # Outlive the TTL more than twice over: the keeper renews, so the lease is never lost.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(lease.lost.wait(), timeout=2.5)
    assert not lease.lost.is_set()
    assert await etcd.get("/leased") is not None
    await lease.stop(revoke=True)
    assert await etcd.get("/leased") is None
    with pytest.raises(LeaseNotFound):
        await etcd.refresh(lease.id)


async def test_unrenewed_lease_expires_with_its_keys(etcd: Etcd, eventually: Eventually) -> None:
    lease_id = await etcd.grant(1)
    await etcd.put("/ephemeral", b"x", lease=lease_id)
    await eventually(lambda: _absent(etcd, "/ephemeral"), what="the leased key to expire", timeout_s=10)
    with pytest.raises(LeaseNotFound):
        await etcd.refresh(lease_id)


async def _absent(etcd: Etcd, key: str) -> bool:
    return await etcd.get(key) is None


async def test_read_model_only_moves_forward(etcd: Etcd) -> None:
    model = ReadModel(etcd)
    assert await model.put("job", "default", "train", {"phase": "Pending"}, seq=5)
    assert not await model.put("job", "default", "train", {"phase": "Stale"}, seq=4)
    assert not await model.put("job", "default", "train", {"phase": "Same"}, seq=5)
    assert await model.put("job", "default", "train", {"phase": "Running"}, seq=9)
    stored = await model.get("job", "default", "train")
    assert stored is not None and (stored.seq, stored.object) == (9, {"phase": "Running"})
    raw = await etcd.get(b"/lahar/objects/job/default/train")
    assert raw is not None


async def test_a_writer_that_remembers_what_it_stored_reads_nothing_before_writing(etcd: Etcd) -> None:
    reads = 0
    real_get = etcd.get

    async def counted_get(key: Any) -> Any:
        nonlocal reads
        reads += 1
        return await real_get(key)

    etcd.get = counted_get  # type: ignore[method-assign]
    await ReadModel(etcd).put("job", "default", "old", {"phase": "Running"}, seq=7)
    assert reads == 1  # a writer that knows nothing reads the key first (a Range, never a read-only txn)
    stored = Stored()
    model = ReadModel(etcd, stored=stored)
    await model.list("job")  # learns every job key, and that no other exists
    reads = 0
    assert await model.apply(
        [Write("job", "default", "old", 9, {"phase": "Done"}), Write("job", "default", "new", 1, {})]
    )
    assert not await model.put("job", "default", "old", {"phase": "Stale"}, seq=8)
    assert await model.put("job", "default", "new", {"phase": "Running"}, seq=2)
    assert reads == 0
    # another writer moved a key on: the guard refuses, the key is read again, and the write still lands
    await ReadModel(etcd).put("job", "default", "new", {"phase": "Elsewhere"}, seq=3)
    assert await model.put("job", "default", "new", {"phase": "Later"}, seq=4)
    found = await model.get("job", "default", "new")
    assert found is not None and (found.seq, found.object) == (4, {"phase": "Later"})


async def test_read_model_batches_names_scopes_and_tombstones(etcd: Etcd) -> None:
    model = ReadModel(etcd)
    applied = await model.apply(
        [
            Write("node", None, "n1.example.com", 3, {"cpu": 8000}),
            Write("job", "default", "a/b", 4, {"phase": "Pending"}),
            Write("job", "team.x", "c", 5, {"phase": "Pending"}),
            Write("job", "default", "a/b", 2, {"phase": "Older in the same call"}),
        ]
    )
    assert applied == [True, True, True, False]
    node = await model.get("node", None, "n1.example.com")
    assert node is not None and node.namespace is None and node.object == {"cpu": 8000}
    jobs, _ = await model.list("job")
    assert sorted((j.namespace, j.name) for j in jobs) == [("default", "a/b"), ("team.x", "c")]
    assert [j.name for j in (await model.list("job", "team.x"))[0]] == ["c"]
    # Deleting leaves a tombstone at seq 6: replaying the older creation cannot resurrect the object.
    assert await model.delete("job", "default", "a/b", seq=6)
    assert await model.get("job", "default", "a/b") is None
    assert not await model.put("job", "default", "a/b", {"phase": "Pending"}, seq=4)
    assert [j.name for j in (await model.list("job"))[0]] == ["c"]
    many = [Write("pod", "default", f"p{i}", 10 + i, {"i": i}) for i in range(150)]
    assert await model.apply(many) == [True] * 150
    assert len((await model.list("pod"))[0]) == 150


async def test_checkpoint_roundtrip_and_expected_sequence(etcd: Etcd) -> None:
    store = CheckpointStore(etcd, "scheduler-0")
    assert await store.load() is None
    await store.save(b"view@10", 10, expected_seq=0)
    cp = await store.load()
    assert cp is not None and (cp.view, cp.seq) == (b"view@10", 10)
    with pytest.raises(CheckpointConflict) as conflict:
        await store.save(b"stale", 12, expected_seq=7)
    assert conflict.value.actual == 10
    await store.save(b"view@20", 20, expected_seq=10)
    assert (await store.load()).seq == 20  # type: ignore[union-attr]
    await store.delete()
    assert await store.load() is None  # a deleted checkpoint only means: replay from the start


async def test_large_checkpoint_is_chunked_and_replaced_atomically(etcd: Etcd) -> None:
    store = CheckpointStore(etcd, "binder")
    big = os.urandom(2 * CHUNK_BYTES + 123)
    await store.save(big, 100)
    cp = await store.load()
    assert cp is not None and cp.view == big and cp.seq == 100
    bigger = os.urandom(3 * CHUNK_BYTES - 4096)  # random bytes do not compress: three chunks still
    await store.save(bigger, 200, expected_seq=100)
    assert (await store.load()).view == bigger  # type: ignore[union-attr]
    chunks, _ = await etcd.get_prefix(store.data_prefix)
    assert len(chunks) == 3  # the older generation went away in the switching transaction
    await store.save(b"small again", 300)
    assert (await etcd.get_prefix(store.data_prefix))[0] == []
    # Damage: a missing chunk makes the checkpoint unusable, never wrong.
    await store.save(big, 400)
    first_chunk = (await etcd.get_prefix(store.data_prefix))[0][0].key
    await etcd.delete(first_chunk)
    assert await store.load() is None


async def test_a_checkpoint_is_stored_compressed_and_an_older_uncompressed_one_still_loads(
    etcd: Etcd,
) -> None:
    store = CheckpointStore(etcd, "job-controller")
    state = b"".join(b"pod-%06d: Running on node-%04d; " % (i, i % 1000) for i in range(200_000))
    await store.save(state, 7)
    stored = sum(len(kv.value) for kv in (await etcd.get_prefix(store.root))[0])
    assert stored * 5 < len(state)  # a state's repetitive shape: far fewer bytes for etcd to write
    assert (await store.load()) == Checkpoint(view=state, seq=7)
    # written before checkpoints were compressed: the head has no "zlib" and the view is as it was
    await etcd.put(store.head_key, msgpack.packb({"seq": 5, "view": b"plain view"}, use_bin_type=True))
    assert (await store.load()) == Checkpoint(view=b"plain view", seq=5)


async def test_watch_prefix_from_a_revision(etcd: Etcd) -> None:
    start = await etcd.put("/w/a", b"1")
    await etcd.put("/w/b", b"2")
    await etcd.delete("/w/a")
    seen: list[WatchEvent] = []
    async with contextlib.aclosing(etcd.watch_prefix("/w/", start_revision=start)) as events:
        async for ev in events:
            seen.append(ev)
            if len(seen) == 3:
                break
    assert [(e.kind, e.key, e.value) for e in seen] == [
        ("put", b"/w/a", b"1"),
        ("put", b"/w/b", b"2"),
        ("delete", b"/w/a", b""),
    ]


async def test_a_fenced_writer_puts_as_many_writes_per_txn_as_etcd_allows(etcd: Etcd) -> None:
    """127 writes per transaction (etcd's default --max-txn-ops is 128, and the fence takes a compare),
    fewer when their values would pass 1 MiB (--max-request-bytes is 1.5 MiB)."""
    key = b"/lahar/test-fence"
    await etcd.put(key, b"leader")
    found = await etcd.get(key)
    assert found is not None
    txns = 0
    real_txn = etcd.txn

    async def counted_txn(*args: Any, **kwargs: Any) -> Any:
        nonlocal txns
        txns += 1
        return await real_txn(*args, **kwargs)

    etcd.txn = counted_txn  # type: ignore[method-assign]
    model = ReadModel(etcd, fence=Fence(key, found.create_revision), stored=Stored())
    await model.list("pod")
    many = [Write("pod", "default", f"p{i}", 1, {"i": i}) for i in range(300)]
    assert await model.apply(many) == [True] * 300
    assert txns == 3  # 127 + 127 + 46
    txns = 0
    large = [Write("pod", "default", f"big{i}", 1, {"blob": "x" * 300_000}) for i in range(7)]
    assert await model.apply(large) == [True] * 7
    assert txns == 3  # 3 + 3 + 1 values of 300 kB
    assert len((await model.list("pod"))[0]) == 307
