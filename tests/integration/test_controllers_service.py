"""The job- and queue-controller services against real nats-server and etcd: the events of the other
services are published by hand, the controllers' own events and read model are checked."""

from __future__ import annotations

import asyncio
import collections
import signal
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from service_process import ServiceProcess
from support.log_records import subjects_and_envelopes
from support.waiting import Eventually

from contracts import codec
from contracts.events import writer_of
from contracts.job_shape import default_job
from contracts.objects import (
    Container,
    HyperNode,
    Job,
    ObjectMeta,
    PodSpec,
    PodTemplate,
    PriorityClass,
    Queue,
    TaskSpec,
)
from contracts.resources import Resources
from services.job_controller.service import JobControllerConfig, JobControllerService
from services.queue_controller.service import QueueControllerConfig, QueueControllerService
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.poison import read_quarantine
from shared.bus.streams import events_stream
from shared.bus.subjects import EVENTS_STREAM, event_subject
from shared.runner import EventSourcedService
from shared.runner.read_model import RENDER_CHUNK
from shared.servers import EtcdServer, NatsServer
from shared.store.checkpoint import CheckpointStore
from shared.store.election import ELECTION_PREFIX
from shared.store.etcd import Etcd
from shared.store.read_model import ReadModel
from shared.telemetry.metrics import Registry

NS = "team-a"
PODS = ("train-ps-0", "train-worker-0", "train-worker-1")
# reconcile often, never checkpoint unless a test asks, short leases so a standby takes over quickly
QUIET: dict[str, Any] = {
    "reconcile_interval_s": 0.2,
    "checkpoint_every_events": 1_000_000,
    "checkpoint_every_s": 3600,
    "leader_lease_ttl_s": 1,
}
QUIET_FLAGS = [f"--{k.replace('_', '-')}={v}" for k, v in QUIET.items()]

Start = Callable[..., Any]


@pytest.fixture
async def start(bus: Bus, etcd: Etcd) -> AsyncIterator[Start]:
    """start(cls, instance_id) -> a controller running in-process; all are shut down after the test."""
    await bus.ensure_streams([events_stream()])
    made: list[EventSourcedService[Any]] = []

    async def run(cls: type, instance_id: str = "a") -> Any:
        config_cls = JobControllerConfig if cls is JobControllerService else QueueControllerConfig
        service = cls(bus, etcd, config_cls(instance_id=instance_id, **QUIET), registry=Registry())
        made.append(service)
        await service.run_until_idle(15)
        return service

    yield run
    for service in made:
        if service._task is not None and not service._task.done():
            await service.shutdown()


def train_job(queue: str = "default") -> Job:
    container = Container(name="c", command=("true",), requests=Resources.parse({"cpu": "1"}))
    template = PodTemplate(spec=PodSpec(containers=(container,)))
    tasks = (TaskSpec("ps", 1, template=template), TaskSpec("worker", 2, template=template))
    return default_job(
        Job(ObjectMeta("train", NS, uid="uid-train", creation_timestamp=1.0), tasks, queue=queue)
    )


async def publish(bus: Bus, type: str, kind: str, ns: str | None, name: str, **payload: Any) -> int:
    """An event of another service (admission, binder, node agent), as that service would write it."""
    env = Envelope.create(type, time=2.0, producer="tests", correlation_id=f"{ns}/{name}", payload=payload)
    return (await bus.publish(env, event_subject(kind, ns, name, type, writer_of(type)))).seq


async def submit(bus: Bus, job: Job) -> int:
    return await publish(bus, "JobSubmitted", "job", NS, job.meta.name, object=codec.encode_object(job))


async def run_pods(bus: Bus, *types: str) -> None:
    payloads = {"PodBound": {"plan": "p1"}, "PodSucceeded": {"exit_code": 0}}
    for type in types:
        for pod in PODS:
            await publish(bus, type, "pod", NS, pod, node="n1", **payloads.get(type, {}))


async def log(bus: Bus) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(seq, type, object key, payload) of every event."""
    out = []
    async for record in bus.replay(EVENTS_STREAM):
        for ref, env in subjects_and_envelopes(record):
            out.append((record.seq, env.type, f"{ref.namespace or '_'}/{ref.name}", dict(env.payload)))
    return out


async def of_type(bus: Bus, type: str) -> list[tuple[int, str, dict[str, Any]]]:
    return [(seq, key, payload) for seq, t, key, payload in await log(bus) if t == type]


async def job_phases(bus: Bus) -> list[str]:
    return [payload["phase"] for _, _, payload in await of_type(bus, "JobStatusChanged")]


async def stored(etcd: Etcd, kind: str, ns: str | None, name: str) -> tuple[int, Any] | None:
    """(seq, decoded object) in the read model, as `lahar get` reads it."""
    found = await ReadModel(etcd).get(kind, ns, name)
    return None if found is None else (found.seq, codec.decode_object(found.object))


async def count(bus: Bus, type: str, expected: int) -> bool:
    return len(await of_type(bus, type)) == expected


def phase(expected: str) -> Callable[[Job], bool]:
    return lambda job: job.status.state.phase == expected


def status_is(etcd: Etcd, kind: str, ns: str | None, name: str, check: Callable[[Any], bool]) -> Any:
    async def holds() -> bool:
        found = await stored(etcd, kind, ns, name)
        return found is not None and check(found[1])

    return holds


async def test_a_job_runs_to_completion_and_its_objects_show_in_the_read_model(
    bus: Bus, etcd: Etcd, start: Start, eventually: Eventually
) -> None:
    await start(QueueControllerService)
    jc = await start(JobControllerService)
    await eventually(lambda: jc.health()["role"] == "leader", what="the job-controller to lead")
    await submit(bus, train_job())
    await eventually(lambda: of_type(bus, "PodGroupCreated"), what="the PodGroup")
    await jc.run_until_idle(15)
    assert not await of_type(bus, "PodCreated")  # not before the PodGroup is enqueued
    assert (await stored(etcd, "job", NS, "train"))[1].status.state.phase == "Pending"  # type: ignore[index]

    await publish(bus, "PodGroupStatusChanged", "podgroup", NS, "train", phase="Inqueue", conditions=[])
    await eventually(lambda: count(bus, "PodCreated", 3), what="three pods")
    created = await of_type(bus, "PodCreated")
    assert sorted(key for _, key, _ in created) == sorted(f"{NS}/{pod}" for pod in PODS)
    assert min(seq for seq, _, _ in created) > (await of_type(bus, "PodGroupCreated"))[0][0]

    await run_pods(bus, "PodBound", "PodRunning")
    await eventually(status_is(etcd, "job", NS, "train", phase("Running")), what="Running")
    await run_pods(bus, "PodSucceeded")
    await eventually(status_is(etcd, "job", NS, "train", phase("Completed")), what="Completed")
    await jc.run_until_idle(15)
    assert (await job_phases(bus))[0] == "Pending" and (await job_phases(bus)).count("Completed") == 1

    job = (await stored(etcd, "job", NS, "train"))[1]  # type: ignore[index]
    assert (job.status.succeeded, job.status.running, job.status.pending) == (3, 0, 0)
    assert job.status.task_status_count == {"ps": {"Succeeded": 1}, "worker": {"Succeeded": 2}}
    assert job.tasks[1].min_available == 2 and job.min_available == 3  # the defaulted spec
    events = await log(bus)
    for pod in PODS:
        seq, obj = await stored(etcd, "pod", NS, pod)  # type: ignore[misc]
        assert (obj.status.phase, obj.status.exit_code, obj.spec.node_name) == ("Succeeded", 0, "n1")
        assert seq == max(s for s, _, key, _ in events if key == f"{NS}/{pod}")  # the seq it reflects
    podgroup = (await stored(etcd, "podgroup", NS, "train"))[1]  # type: ignore[index]
    assert (podgroup.status.phase, podgroup.status.succeeded, podgroup.min_member) == ("Inqueue", 3, 3)
    completed = jc.registry.get("volcano_job_completed_phase_count")
    assert completed.labels(f"{NS}/train", "default").value == 1
    assert jc.registry.get("volcano_controller_job_to_pod_creation_latency_milliseconds").count == 3


async def test_a_forged_job_status_without_counts_is_quarantined_and_the_job_controller_goes_on(
    bus: Bus, etcd: Etcd, start: Start, eventually: Eventually
) -> None:
    """The issue's case: a JobStatusChanged without `counts` on the log used to raise KeyError in the
    fold at every replay. Now the typed payload refuses it, the loop quarantines it once, and goes on."""
    await start(QueueControllerService)
    jc = await start(JobControllerService)
    await eventually(lambda: jc.health()["role"] == "leader", what="the job-controller to lead")
    await submit(bus, train_job())
    await eventually(lambda: of_type(bus, "PodGroupCreated"), what="the PodGroup")
    forged = Envelope(
        type="JobStatusChanged",
        id=str(uuid.uuid4()),
        time=2.0,
        producer="job-controller",
        correlation_id=f"{NS}/train",
        payload={"phase": "Failed"},  # no counts, nor anything else a status carries
    )
    subject = event_subject("job", NS, "train", "JobStatusChanged", "job-controller")
    forged_seq = (await bus.publish(forged, subject)).seq
    await publish(bus, "PodGroupStatusChanged", "podgroup", NS, "train", phase="Inqueue", conditions=[])
    await eventually(lambda: count(bus, "PodCreated", 3), what="three pods, after the forged status")
    await run_pods(bus, "PodBound", "PodRunning")
    await eventually(status_is(etcd, "job", NS, "train", phase("Running")), what="Running")
    assert jc.metrics.events_skipped.labels("job-controller", "invalid_payload").value == 1
    ((_, record),) = await read_quarantine(bus, "job-controller")
    assert (record.seq, record.type, record.reason) == (forged_seq, "JobStatusChanged", "invalid_payload")
    assert "counts" in record.error and record.id == forged.id
    await jc.shutdown()

    # Replayed from the start by a new instance: set aside again, recorded once, and the job goes on.
    await CheckpointStore(etcd, "job-controller").delete()
    again = await start(JobControllerService, "b")
    assert again.metrics.quarantine_records.labels("job-controller", "duplicate").value == 1
    assert len(await read_quarantine(bus, "job-controller")) == 1
    await run_pods(bus, "PodSucceeded")
    await eventually(status_is(etcd, "job", NS, "train", phase("Completed")), what="Completed")
    assert (await job_phases(bus)).count("Completed") == 1


@pytest.fixture
async def processes() -> AsyncIterator[list[ServiceProcess]]:
    started: list[ServiceProcess] = []
    yield started
    for process in started:
        await process.stop(signal.SIGKILL)


async def test_a_standby_takes_over_from_a_killed_leader_without_creating_a_pod_twice(
    bus: Bus,
    etcd: Etcd,
    nats_server: NatsServer,
    etcd_server: EtcdServer,
    start: Start,
    processes: list[ServiceProcess],
    eventually: Eventually,
) -> None:
    await bus.ensure_streams([events_stream()])
    leader = await ServiceProcess.start(
        "job_controller", nats_server, etcd_server, *QUIET_FLAGS, "--instance-id=p"
    )
    processes.append(leader)

    async def leading() -> bool:
        return (await leader.health()).get("role") == "leader"

    await eventually(leading, what="the job-controller process to lead")
    standby = await start(JobControllerService, "standby")
    assert standby.health()["role"] == "standby"

    await submit(bus, train_job())
    await eventually(lambda: of_type(bus, "PodGroupCreated"), what="the PodGroup")
    await eventually(status_is(etcd, "podgroup", NS, "train", lambda pg: True), what="the PodGroup stored")
    # The leader dies while it decides on the pods: some PodCreated may be out, none acknowledged as seen.
    await publish(bus, "PodGroupStatusChanged", "podgroup", NS, "train", phase="Inqueue", conditions=[])
    assert await leader.stop(signal.SIGKILL) == -signal.SIGKILL
    await eventually(lambda: standby.health()["role"] == "leader", what="the standby to take over")

    await eventually(lambda: count(bus, "PodCreated", 3), what="three pods")
    await run_pods(bus, "PodBound", "PodRunning", "PodSucceeded")
    await eventually(status_is(etcd, "job", NS, "train", phase("Completed")), what="Completed, in etcd")
    await standby.run_until_idle(15)

    created = collections.Counter(key for _, key, _ in await of_type(bus, "PodCreated"))
    assert created == {f"{NS}/{pod}": 1 for pod in PODS}
    assert len(await of_type(bus, "PodGroupCreated")) == 1
    assert (await job_phases(bus)).count("Completed") == 1
    for pod in PODS:
        assert await status_is(etcd, "pod", NS, pod, lambda p: p.status.phase == "Succeeded")()


async def test_a_deposed_leader_writes_nothing_to_the_read_model(
    bus: Bus, etcd: Etcd, start: Start, eventually: Eventually
) -> None:
    first = await start(QueueControllerService, "first")
    await eventually(lambda: first.health()["role"] == "leader", what="first to lead")
    await first.run_until_idle(15)
    # first is cut off (its election key vanishes while its lease lives on); second takes over, then
    # leaves, so that only first, still believing in its old term, is left to write the next change.
    assert await etcd.delete(f"{ELECTION_PREFIX}queue-controller")
    second = await start(QueueControllerService, "second")
    await eventually(lambda: second.health()["role"] == "leader", what="second to lead")
    await second.run_until_idle(15)
    assert first.health()["role"] == "leader"  # first still believes it leads
    await second.shutdown()

    pc = PriorityClass(ObjectMeta("high", ""), value=1000)
    await publish(bus, "PriorityClassApplied", "priorityclass", None, "high", object=codec.encode_object(pc))
    fenced = first.registry.get("lahar_read_model_write_failures_total").labels("queue-controller", "fenced")
    await eventually(lambda: fenced.value, what="first's write in its old term to be refused")
    # deposed, first campaigns again; with a new term it writes what it could not before
    found = await eventually(lambda: stored(etcd, "priorityclass", None, "high"), what="the class stored")
    assert found[1] == pc


async def test_closing_a_queue_waits_for_its_podgroups_and_the_read_model_follows(
    bus: Bus,
    etcd: Etcd,
    nats_server: NatsServer,
    etcd_server: EtcdServer,
    start: Start,
    processes: list[ServiceProcess],
    eventually: Eventually,
) -> None:
    await bus.ensure_streams([events_stream()])
    qc = await ServiceProcess.start("queue_controller", nats_server, etcd_server, *QUIET_FLAGS)
    processes.append(qc)
    await start(JobControllerService)
    queue = Queue(ObjectMeta("q1", ""), weight=2)
    await publish(bus, "QueueApplied", "queue", None, "q1", object=codec.encode_object(queue))
    hypernode = HyperNode(ObjectMeta("s0", ""), tier=1)
    await publish(bus, "HyperNodeApplied", "hypernode", None, "s0", object=codec.encode_object(hypernode))
    await eventually(status_is(etcd, "queue", None, "q1", lambda q: q.status.state == "Open"), what="q1 Open")
    assert (await stored(etcd, "queue", None, "q1"))[1].weight == 2  # type: ignore[index]
    await eventually(status_is(etcd, "queue", None, "default", lambda q: True), what="the default queue")
    await eventually(status_is(etcd, "hypernode", None, "s0", lambda h: h == hypernode), what="the HyperNode")

    await submit(bus, train_job(queue="q1"))
    await eventually(status_is(etcd, "queue", None, "q1", lambda q: q.status.pending == 1), what="1 pending")
    close = {"action": "CloseQueue", "target_kind": "Queue", "target": "q1"}
    await publish(bus, "CommandIssued", "command", None, "close-q1", **close)
    await eventually(
        status_is(etcd, "queue", None, "q1", lambda q: q.status.state == "Closing"), what="Closing"
    )

    await publish(bus, "JobDeleted", "job", NS, "train")
    await eventually(
        status_is(etcd, "queue", None, "q1", lambda q: q.status.state == "Closed"), what="Closed"
    )
    assert (await stored(etcd, "queue", None, "q1"))[1].status.pending == 0  # type: ignore[index]
    states = [p["state"] for _, key, p in await of_type(bus, "QueueStateChanged") if key == "_/q1"]
    assert states == ["Open", "Closing", "Closed"]

    async def job_gone() -> bool:
        # the job-controller writes its read model on its own clock, not the queue-controller's
        return await stored(etcd, "job", NS, "train") is None

    await eventually(job_gone, what="the deleted job out of the read model")
    assert await stored(etcd, "podgroup", NS, "train") is None

    await publish(bus, "HyperNodeDeleted", "hypernode", None, "s0")
    await eventually(lambda: _absent(etcd, "hypernode", None, "s0"), what="the HyperNode deleted")
    metrics = await asyncio.to_thread(qc.get, "/metrics")
    assert metrics is not None and 'volcano_queue_pod_group_pending_count{queue_name="q1"} 0' in metrics[1]
    assert await qc.stop() == 0, "".join(qc.raw)


async def _absent(etcd: Etcd, kind: str, ns: str | None, name: str) -> bool:
    return await stored(etcd, kind, ns, name) is None


async def test_what_changes_while_everything_is_written_is_written_after(
    bus: Bus, etcd: Etcd, eventually: Eventually
) -> None:
    """Writing the whole read model (on taking over) takes a while; the loop folds events meanwhile, and
    what they change must still be written afterwards, not forgotten with the marks of the full write."""
    await bus.ensure_streams([events_stream()])
    config = QueueControllerConfig(instance_id="a", **{**QUIET, "read_model_interval_s": 3600.0})
    qc = QueueControllerService(bus, etcd, config, registry=Registry())
    running = asyncio.create_task(qc.run())
    try:
        await eventually(lambda: qc.health()["read_model_synced"], what="led, and everything written once")
        release = asyncio.Event()
        store = qc._store

        async def slow_full_write(model: Any, writes: Any, *, full: bool) -> None:
            if full:
                await release.wait()
            await store(model, writes, full=full)

        async def nothing() -> None:
            return None

        qc._store = slow_full_write  # type: ignore[method-assign]
        qc.after_reconcile = nothing  # type: ignore[method-assign]  # this test drives the writes itself
        qc._synced_term = None  # the next write rewrites everything, as after winning a term
        writing = asyncio.create_task(qc.write_read_model())
        pc = PriorityClass(ObjectMeta("high", ""), value=1000)
        object_ = codec.encode_object(pc)
        seq = await publish(bus, "PriorityClassApplied", "priorityclass", None, "high", object=object_)
        await eventually(lambda: qc.seq >= seq, what="the class folded while the full write is under way")
        release.set()
        await writing
        await qc.write_read_model()  # what is still owed
        found = await stored(etcd, "priorityclass", None, "high")
        assert found is not None and found[1] == pc
    finally:
        await qc.shutdown()
        await running


async def test_a_large_write_round_lets_the_loop_run_while_it_renders(
    bus: Bus, etcd: Etcd, eventually: Eventually
) -> None:
    """A round after a busy second holds tens of thousands of changed objects: rendered in one go they
    stalled the loop long enough to lose the leadership lease. The loop must run between chunks."""
    await bus.ensure_streams([events_stream()])
    config = QueueControllerConfig(instance_id="a", **{**QUIET, "read_model_interval_s": 3600.0})
    qc = QueueControllerService(bus, etcd, config, registry=Registry())
    running = asyncio.create_task(qc.run())
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    try:
        await eventually(lambda: qc.health()["read_model_synced"], what="led, and everything written once")
        render = qc.projection.render
        ticks_seen: list[int] = []

        def counting_render(state: Any, key: Any) -> Any:
            ticks_seen.append(ticks)
            return render(state, key)

        qc.projection.render = counting_render  # type: ignore[method-assign]
        objects = 3 * RENDER_CHUNK + 1
        dirty = qc.projection.dirty(qc.state)
        dirty.update({("priorityclass", None, f"gone-{i}"): qc.seq for i in range(objects)})
        await qc.write_read_model()
        assert len(ticks_seen) >= objects
        assert len(set(ticks_seen)) >= 4  # the loop ran after each chunk of RENDER_CHUNK renders
        assert not [key for key in qc.projection.dirty(qc.state) if key[2].startswith("gone-")]
    finally:
        ticker.cancel()
        await qc.shutdown()
        await running
