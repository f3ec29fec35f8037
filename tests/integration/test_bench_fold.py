"""`lahar bench fold` reads a stopped stack's log from its nats-server data and folds, through each
service's core, exactly the events that service subscribes to."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from support.payload_examples import EXAMPLES

from contracts import payloads
from contracts.bundles import BUNDLE_OF
from contracts.events import EVENT_TYPES
from services.cli import bench_sessions
from services.cli.bench_fold import SERVICES, cores, run
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream
from shared.bus.subjects import event_subject
from shared.security.sealing import seal_job_secret
from shared.security.secret_keys import issue_secrets_keys, load_public_key
from shared.servers import NatsServer

# what each example is about when its payload holds no object (tests/support/payload_examples.py)
_SUBJECTS = {
    "job": "train",
    "pod": "train-worker-0",
    "podgroup": "train",
    "node": "node-1",
    "queue": "default",
}


def _subject(event_type: str, payload: payloads.Payload) -> str:
    kind, writer = EVENT_TYPES[event_type].subject_kind, EVENT_TYPES[event_type].writer
    if isinstance(payload, payloads.ObjectPayload):
        meta = payload.decoded().meta
        return event_subject(kind, meta.namespace or None, meta.name, event_type, writer)
    namespace = None if kind in ("node", "queue") else "default"
    return event_subject(kind, namespace, _SUBJECTS.get(kind, "train"), event_type, writer)


async def _write_log(nats_dir: Path) -> int:
    """One event of every catalogued type, about the objects the examples name; then the server stops
    (as a stack's does)."""
    server = await NatsServer.astart_in(nats_dir)
    try:
        bus = await Bus.connect(server.url)
        await bus.ensure_streams([events_stream()])
        for event_type, payload in EXAMPLES.items():
            writer = EVENT_TYPES[event_type].writer
            env = Envelope.create(event_type, time=1.0, producer=writer, correlation_id="x", payload=payload)
            await bus.publish(env, _subject(event_type, payload))
        await bus.close()
        return len(EXAMPLES)
    finally:
        server.stop()


def test_each_core_folds_the_events_it_subscribes_to(tmp_path: Path) -> None:
    written = asyncio.run(_write_log(tmp_path / "nats"))
    result = run(tmp_path, SERVICES, events=10_000, passes=2, nodes=2)
    assert result["log_events"] == written == len(EVENT_TYPES)
    for name in SERVICES:
        reads = getattr(cores(2)[name](), "reads", None)
        # a bundle is folded by the services that read the events it carries
        expected = sum(reads is None or BUNDLE_OF.get(t, t) in reads for t in EVENT_TYPES)
        figures = result["services"][name]
        assert figures["events"] == expected > 0, name
        assert figures["best_per_s"] >= figures["median_per_s"] > 0


def test_the_loop_figures_count_each_cores_reconciles_and_renders(tmp_path: Path) -> None:
    asyncio.run(_write_log(tmp_path / "nats"))
    result = run(tmp_path, ["job-controller", "binder"], events=10_000, passes=1, nodes=2, loop=(3, 5))
    controller = result["services"]["job-controller"]["loop"]
    # the job-controller renders the read-model objects the examples touched; the binder has no read model
    assert controller["rendered"] > 0 and controller["cpu_s"] > 0
    assert (controller["batch"], controller["flush"]) == (3, 5)
    assert result["services"]["binder"]["loop"]["rendered"] == 0


async def _write_sealed_secret(nats_dir: Path, recipient: X25519PublicKey) -> None:
    server = await NatsServer.astart_in(nats_dir)
    try:
        bus = await Bus.connect(server.url)
        await bus.ensure_streams([events_stream()])
        data = {"id_rsa": "PRIVATE", "id_rsa.pub": "ssh-rsa AAAA"}
        payload = seal_job_secret(recipient, "default", "train", "u1", "train-ssh", data)
        env = Envelope.create(
            "JobSecretCreated", time=1.0, producer="admission", correlation_id="x", payload=payload
        )
        await bus.publish(env, _subject("JobSecretCreated", payload))
        await bus.close()
    finally:
        server.stop()


def test_the_node_agent_core_opens_the_stacks_sealed_secrets_with_the_stacks_key(tmp_path: Path) -> None:
    keys = issue_secrets_keys(tmp_path / "creds")  # where `lahar up` writes them
    asyncio.run(_write_sealed_secret(tmp_path / "nats", load_public_key(keys.public)))
    result = run(tmp_path, ["node-agent"], events=10, passes=1, nodes=2)
    assert result["services"]["node-agent"]["events"] == 1


def test_the_loop_figures_skip_the_core_that_only_decodes(tmp_path: Path) -> None:
    asyncio.run(_write_log(tmp_path / "nats"))
    result = run(tmp_path, SERVICES, events=10_000, passes=1, nodes=2, loop=(3, 5))
    assert "loop" not in result["services"]["decode-only"]
    assert all("loop" in result["services"][name] for name in SERVICES if name != "decode-only")


def test_sessions_run_over_the_states_the_log_passes_through(tmp_path: Path) -> None:
    asyncio.run(_write_log(tmp_path / "nats"))
    result = bench_sessions.run(tmp_path, every=1, passes=2)
    # a snapshot after every event the view folds (the bundled ones one by one), or every other one
    folded = run(tmp_path, ["scheduler"], events=10_000, passes=1, nodes=2)["services"]["scheduler"]["events"]
    assert result["sessions"] >= folded
    assert bench_sessions.run(tmp_path, every=2, passes=1)["sessions"] == result["sessions"] // 2
    assert len(result["cpu_s"]) == 2 and result["median_cpu_s"] > 0
