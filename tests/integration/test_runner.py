"""The event-sourced service loop against real nats-server and etcd, with the toy echo core."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import signal
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

import nats.errors
import pytest
from nats.aio.msg import Msg
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from runner_toy import ToyCore, ToyProcess, ToyState
from support.waiting import Eventually

from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream
from shared.bus.subjects import EVENTS_STREAM, event_filter, event_subject, parse_event_subject
from shared.runner import EventSourcedService, RunnerConfig
from shared.runner.events import to_event
from shared.servers import EtcdServer, NatsServer
from shared.store.checkpoint import CheckpointStore
from shared.store.election import ELECTION_PREFIX, FencedOut
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry
from shared.telemetry.tracing import extract_context, setup_tracing, trace_fields

REPO = Path(__file__).resolve().parents[2]
# No timer-driven checkpoints unless a test asks: each test decides when state is saved.
QUIET = RunnerConfig(reconcile_interval_s=0.2, checkpoint_every_events=1_000_000, checkpoint_every_s=3600)

Make = Callable[..., EventSourcedService[ToyState]]


@pytest.fixture
async def make(bus: Bus, etcd: Etcd) -> AsyncIterator[Make]:
    """make(**config overrides) -> a toy service with its own metrics registry; all are shut down after."""
    await bus.ensure_streams([events_stream()])
    made: list[EventSourcedService[ToyState]] = []

    def build(**kwargs: Any) -> EventSourcedService[ToyState]:
        cls = kwargs.pop("cls", EventSourcedService)
        options = {k: kwargs.pop(k) for k in ("subject_filter", "tracer") if k in kwargs}
        service = cls(ToyCore(), bus, etcd, replace(QUIET, **kwargs), registry=Registry(), **options)
        made.append(service)
        return service

    yield build
    for service in made:
        if service._task is not None and not service._task.done():
            await service.shutdown()


async def ping(bus: Bus, name: str, n: int = 1, *, mode: str = "once") -> int:
    env = Envelope.create(
        "Ping", time=1.0, producer="tests", correlation_id=name, payload={"n": n, "mode": mode}
    )
    return (await bus.publish(env, event_subject("toy", None, name, "Ping", "tests"))).seq


async def fold_log(bus: Bus, until_seq: int | None = None) -> ToyState:
    """What the state must be: the core's fold of every event in the log, computed independently."""
    core, state = ToyCore(), ToyCore().initial()
    async for record in bus.replay(EVENTS_STREAM, until_seq=until_seq):
        state = core.apply(
            state, to_event(record.seq, parse_event_subject(record.subject), record.envelope())
        )
    return state


async def echoes_per_ping(bus: Bus) -> collections.Counter[str]:
    envelopes = [record.envelope() async for record in bus.replay(EVENTS_STREAM)]
    return collections.Counter(env.payload["ping"] for env in envelopes if env.type == "Echo")


def applied(service: EventSourcedService[ToyState], phase: str) -> float:
    return service.metrics.events_applied.labels("toy", phase).value


def published(service: EventSourcedService[ToyState], result: str) -> float:
    return service.metrics.outputs.labels("toy", "Echo", result).value


async def test_restart_resumes_from_the_checkpoint_and_applies_nothing_twice(bus: Bus, make: Make) -> None:
    for i in range(5):
        await ping(bus, f"p{i}", n=i)
    first = make(checkpoint_every_events=3)
    await first.run_until_idle(15)
    assert first.metrics.checkpoints.labels("toy", "ok").value >= 2  # every 3 events, during replay too
    await first.shutdown()
    saved = await CheckpointStore(first.etcd, "toy").load()
    assert saved is not None and saved.seq == first.seq == 10  # 5 pings, 5 echoes, final checkpoint

    for i in range(5, 9):
        await ping(bus, f"p{i}", n=i)
    second = make()
    await second.run_until_idle(15)
    assert applied(second, "replay") == 4  # only the pings after the checkpoint
    assert second.state == await fold_log(bus)
    assert list(second.state.applied) == list(range(1, second.seq + 1))
    assert second.state.total == sum(range(9))
    assert set((await echoes_per_ping(bus)).values()) == {1} and len(await echoes_per_ping(bus)) == 9


async def test_a_crash_between_publish_and_checkpoint_publishes_nothing_twice(bus: Bus, make: Make) -> None:
    pings = [await ping(bus, f"p{i}") for i in range(4)]
    # The last checkpoint predates the echoes: the pings are applied, their echoes not yet in the log.
    core = ToyCore()
    await CheckpointStore(make().etcd, "toy").save(core.dump(await fold_log(bus)), pings[-1])

    first = make()
    await first.run_until_idle(15)
    assert published(first, "stored") == 4
    assert first._task is not None
    first._task.cancel()  # a crash: no drain, no final checkpoint
    with contextlib.suppress(asyncio.CancelledError):
        await first._task
    assert (await CheckpointStore(first.etcd, "toy").load()).seq == pings[-1]  # type: ignore[union-attr]

    second = make()
    await second.run_until_idle(15)
    assert applied(second, "replay") == 4  # the echoes, from the log
    assert published(second, "stored") + published(second, "duplicate") == 0
    assert second.state == await fold_log(bus)
    assert dict(await echoes_per_ping(bus)) == {ping_id: 1 for ping_id in second.state.pings}


async def test_outputs_republished_before_their_events_are_seen_are_deduplicated(
    bus: Bus, make: Make
) -> None:
    for i in range(3):
        await ping(bus, f"p{i}")
    first = make()
    await first.run_until_idle(15)
    await first.shutdown()
    await CheckpointStore(first.etcd, "toy").delete()
    # A view that cannot see the echoes (as after a crash between publish and reading them back) decides
    # to write them again: the same ids, so the stream keeps one of each.
    blind = make(subject_filter=event_filter("toy"))
    await blind.run_until_idle(15)
    assert published(blind, "duplicate") == 3 and published(blind, "stored") == 0
    assert sorted((await echoes_per_ping(bus)).values()) == [1, 1, 1]


async def test_deleting_the_checkpoint_only_costs_replay(bus: Bus, make: Make) -> None:
    for i in range(6):
        await ping(bus, f"p{i}", n=2)
    first = make()
    await first.run_until_idle(15)
    await first.shutdown()
    await CheckpointStore(first.etcd, "toy").delete()

    second = make()
    await second.run_until_idle(15)
    assert applied(second, "replay") == 12
    assert second.state == first.state
    assert published(second, "stored") + published(second, "duplicate") == 0


async def test_a_deposed_leader_cannot_checkpoint(
    bus: Bus, etcd: Etcd, make: Make, eventually: Eventually
) -> None:
    a = make(leader_election=True, instance_id="a", leader_lease_ttl_s=5)
    await a.run_until_idle(15)
    await eventually(lambda: a.health()["role"] == "leader", what="a to lead")
    await ping(bus, "p0")
    await a.run_until_idle(15)
    assert a.state.echoes

    # a is cut off (its election key vanishes while its lease lives on): it does not notice, b takes over.
    assert await etcd.delete(f"{ELECTION_PREFIX}toy")
    b = make(leader_election=True, instance_id="b")
    await b.run_until_idle(15)
    await eventually(lambda: b.health()["role"] == "leader", what="b to lead")
    assert a.health()["role"] == "leader"  # a still believes it leads

    with pytest.raises(FencedOut):
        await a.checkpoint()
    assert await CheckpointStore(etcd, "toy").load() is None
    assert a.health()["role"] == "standby"
    await b.run_until_idle(15)
    await b.checkpoint()
    assert (await CheckpointStore(etcd, "toy").load()).seq == b.seq  # type: ignore[union-attr]

    # Back as a standby, a follows the log but writes nothing.
    await ping(bus, "p1")
    await b.run_until_idle(15)
    await a.run_until_idle(15)
    assert a.state == b.state and a.health()["role"] == "standby"
    assert published(a, "stored") == 1 and published(b, "stored") == 1


async def test_run_until_idle_waits_for_the_outputs_and_times_out_when_work_never_ends(
    bus: Bus, make: Make
) -> None:
    for i in range(3):
        await ping(bus, f"p{i}")
    service = make()
    await service.run_until_idle(15)
    assert sorted(name for name, _ in service.state.pings.values()) == ["p0", "p1", "p2"]
    assert service.state.echoes == dict.fromkeys(service.state.pings, 1)
    assert not await service._log_has_more(service.seq)
    await ping(bus, "endless", mode="forever")
    with pytest.raises(TimeoutError):
        await service.run_until_idle(1.0)
    assert sum(service.state.echoes.values()) > 4


async def test_an_event_whose_payload_its_type_does_not_allow_is_skipped_and_the_service_goes_on(
    bus: Bus, make: Make
) -> None:
    await ping(bus, "before")
    # Forged past Envelope.create's check, as a producer in another language could: a PodBound without
    # its node, and with a plan that is not a string.
    forged = Envelope(
        type="PodBound",
        id=str(uuid.uuid4()),
        time=1.0,
        producer="binder",
        correlation_id="x",
        payload={"plan": 7},
    )
    forged_seq = (await bus.publish(forged, event_subject("pod", "default", "x", "PodBound", "binder"))).seq
    await ping(bus, "after")
    service = make()
    await service.run_until_idle(15)
    assert forged_seq not in service.state.applied and service.seq >= forged_seq
    assert service.state.echoes == {p: 1 for p in service.state.pings} and len(service.state.pings) == 2
    assert service.metrics.events_skipped.labels("toy", "invalid_payload").value == 1
    assert service.metrics.events_skipped.labels("toy", "not_an_event").value == 0


async def test_a_batch_of_outputs_lands_atomically_or_not_at_all(
    bus: Bus, make: Make, eventually: Eventually
) -> None:
    service = make()
    await ping(bus, "a", mode="twins")
    await service.run_until_idle(15)
    echoes = [(r.seq, r.subject) async for r in bus.replay(EVENTS_STREAM) if r.envelope().type == "Echo"]
    assert [subject for _, subject in echoes] == [
        event_subject("toyecho", None, n, "Echo", "toy") for n in ("a", "a-twin")
    ]
    assert echoes[1][0] == echoes[0][0] + 1

    # b-twin already has an event of the toy's, so the second compare-and-set of b's batch fails: neither
    # echo lands.
    noise = Envelope.create("Noise", time=1.0, producer="toy", correlation_id="b")
    await bus.publish(noise, event_subject("toyecho", None, "b-twin", "Noise", "toy"))
    b_seq = await ping(bus, "b", mode="twins-cas")
    await eventually(lambda: published(service, "conflict") >= 4, what="b's batch to be refused twice")
    names = [parse_event_subject(r.subject).name async for r in bus.replay(EVENTS_STREAM, b_seq)]
    assert names == ["b"]  # only the ping: no half of the batch was stored
    with pytest.raises(TimeoutError):
        await service.run_until_idle(0.5)  # the refused outputs are still owed


class Answering(EventSourcedService[ToyState]):
    """Also answers requests for the pings' total, from the caught-up state."""

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        return [self._answer_totals()]

    async def _answer_totals(self) -> None:
        failure = asyncio.Event()

        async def answer(msg: Msg) -> None:
            if msg.data == b"fail":
                failure.set()
            await msg.respond(str(self.state.total).encode())

        sub = await self.bus.nc.subscribe("lahar.test.total", cb=answer)
        waits = [asyncio.create_task(self.stopping.wait()), asyncio.create_task(failure.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        await sub.drain()
        if failure.is_set():
            raise RuntimeError("asked to fail")


async def test_extra_tasks_serve_beside_the_loop_and_stop_with_it(bus: Bus, make: Make) -> None:
    for n in (2, 3):
        await ping(bus, f"p{n}", n=n)
    service = make(cls=Answering)
    await service.run_until_idle(15)
    assert (await bus.nc.request("lahar.test.total", b"", timeout=5)).data == b"5"
    await service.shutdown()
    with pytest.raises(nats.errors.NoRespondersError):
        await bus.nc.request("lahar.test.total", b"", timeout=5)

    crashing = make(cls=Answering)
    await crashing.run_until_idle(15)
    await bus.nc.request("lahar.test.total", b"fail", timeout=5)
    assert crashing._task is not None
    with pytest.raises(RuntimeError, match="asked to fail"):
        await asyncio.wait_for(crashing._task, 15)  # the service stops with its extra task's error
    assert crashing.health()["phase"] == "stopped"


async def test_a_jobs_trace_follows_its_events_through_the_service(bus: Bus, make: Make) -> None:
    exporter = InMemorySpanExporter()
    tracer = setup_tracing("toy", exporter, set_global=False).get_tracer("tests")
    service = make(tracer=tracer)
    await service.run_until_idle(15)
    with tracer.start_as_current_span("submit", kind=SpanKind.PRODUCER) as root:
        env = Envelope.create(
            "Ping", time=1.0, producer="tests", correlation_id="p0", payload={"n": 1}, **trace_fields()
        )
    await bus.publish(env, event_subject("toy", None, "p0", "Ping", "tests"))
    await service.run_until_idle(15)

    spans: dict[str, ReadableSpan] = {span.name: span for span in exporter.get_finished_spans()}
    chain = ["submit", "apply Ping", "publish Echo", "apply Echo"]
    assert set(chain) <= set(spans)
    trace_id = root.get_span_context().trace_id
    for parent, child in itertools.pairwise(chain):
        assert spans[child].context.trace_id == trace_id
        assert (
            spans[child].parent is not None and spans[child].parent.span_id == spans[parent].context.span_id
        )
    assert spans["apply Ping"].attributes["lahar.job"] == "p0"
    assert extract_context(env)  # the envelope carried the producer's context


async def test_sigterm_drains_a_service_process_and_exits_0(
    bus: Bus, etcd: Etcd, nats_server: NatsServer, etcd_server: EtcdServer, eventually: Eventually
) -> None:
    await bus.ensure_streams([events_stream()])
    for i in range(3):
        await ping(bus, f"p{i}")
    host, port = etcd_server.endpoint
    toy = await ToyProcess.start(
        "--nats-url", nats_server.url, "--etcd-endpoint", f"{host}:{port}", "--checkpoint-every-s", "3600"
    )
    try:

        async def three_echoes() -> bool:
            return sum((await echoes_per_ping(bus)).values()) == 3

        async def echoes_folded() -> bool:
            # Its echoes are on the log before it has read them back: wait until it applied all six.
            return (await toy.health()).get("seq") == 6

        await eventually(three_echoes, what="the echoes of three pings")
        await eventually(echoes_folded, what="the toy applying its own echoes")
        toy.proc.send_signal(signal.SIGTERM)
    finally:
        status = await toy.wait()
    assert status == 0, "".join(toy.raw)
    saved = await CheckpointStore(etcd, "toy").load()
    assert saved is not None and saved.seq == 6  # the drain checkpointed everything it applied
    assert all(line["service"] == "toy" and "timestamp" in line and "level" in line for line in toy.lines)
    events = [line["event"] for line in toy.lines]
    assert "shutdown requested, draining" in events and events[-1] == "service stopped cleanly"
