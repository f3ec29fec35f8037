"""The node agent service against real nats-server and etcd: registration, pods run by the process runtime
with the job plugins' environment and files, the logs API, eviction, heartbeats, a restart that adopts a
running pod, hollow nodes at scale, and the `python -m services.node_agent` entry point."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import nats.errors
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Tracer
from support.log_records import events_of
from support.waiting import Eventually

from contracts.codec import encode_object
from contracts.events import writer_of
from contracts.job_shape import default_job
from contracts.objects import Container, Job, ObjectMeta, Pod, PodSpec, PodTemplate, TaskSpec, frozen_map
from services.job_controller.core.expand import pod_for
from services.node_agent.config import NodeAgentConfig
from services.node_agent.runtime import workdir
from services.node_agent.service import NodeAgentService, make_service
from shared.bus.envelope import Envelope
from shared.bus.heartbeats import decode_heartbeat, heartbeat_subject
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream
from shared.bus.subjects import EVENTS_STREAM, event_subject, logs_subject, parse_event_subject
from shared.runner.events import to_event
from shared.runner_types import Event
from shared.servers import EtcdServer, NatsServer, free_port
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry
from shared.telemetry.tracing import extract_context, setup_tracing, trace_fields

REPO = Path(__file__).resolve().parents[2]
NODE = "n1"


class Log:
    """Every event of LAHAR_EVENTS, collected as it lands."""

    def __init__(self, bus: Bus) -> None:
        self.events: list[Event] = []
        self._task = asyncio.create_task(self._collect(bus))

    async def _collect(self, bus: Bus) -> None:
        async for record in bus.follow(EVENTS_STREAM, 1):
            self.events.extend(events_of(record))

    def of(self, event_type: str, name: str | None = None) -> list[Event]:
        return [e for e in self.events if e.type == event_type and (name is None or e.name == name)]

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@pytest.fixture
async def log(bus: Bus) -> AsyncIterator[Log]:
    await bus.ensure_streams([events_stream()])
    collected = Log(bus)
    yield collected
    await collected.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "agent"
    yield directory
    for _, _, record in workdir.records(directory):  # whatever a failed test left running
        for pgid, _ in record.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)


Agent = Callable[..., NodeAgentService]


@pytest.fixture
async def agent(bus: Bus, etcd: Etcd, data_dir: Path) -> AsyncIterator[Agent]:
    """agent(**config overrides) -> a started node agent (process runtime, node n1); stopped after."""
    started: list[NodeAgentService] = []

    def start(tracer: Tracer | None = None, **overrides: Any) -> NodeAgentService:
        fields: dict[str, Any] = {
            "runtime": "process",
            "node_name": NODE,
            "data_dir": str(data_dir),
            "node_cpu": "8",
            "node_memory": "16Gi",
            "heartbeat_interval_s": 0.2,
            "reconcile_interval_s": 0.2,
        }
        config = NodeAgentConfig(**{**fields, **overrides})
        service = make_service(config, bus, etcd, registry=Registry(), tracer=tracer)
        service._task = asyncio.create_task(service.run())  # run() in the background, as run_main does
        started.append(service)
        return service

    yield start
    for service in started:
        await service.shutdown()


async def publish(
    bus: Bus, event_type: str, kind: str, name: str, payload: dict[str, Any], **trace: str | None
) -> Event:
    namespace = None if kind == "node" else "default"
    env = Envelope.create(
        event_type, time=time.time(), producer="tests", correlation_id=name, payload=payload, **trace
    )
    subject = event_subject(kind, namespace, name, event_type, writer_of(event_type))
    ack = await bus.publish(env, subject)
    return to_event(ack.seq, parse_event_subject(subject), env)


def job(name: str, script: str, *, replicas: int = 2, grace: int | None = None, **plugins: list[str]) -> Job:
    container = Container("main", command=("sh", "-c", script))
    spec = PodSpec(containers=(container,), termination_grace_period_seconds=grace)
    task = TaskSpec(name="worker", replicas=replicas, template=PodTemplate(spec=spec))
    return default_job(
        Job(
            meta=ObjectMeta(name=name),
            tasks=(task,),
            plugins=frozen_map({k: tuple(v) for k, v in plugins.items()}),
        )
    )


async def submit(bus: Bus, spec: Job, index: int, node: str = NODE, **trace: str | None) -> Pod:
    """The job's events up to its pod `index` bound to `node`, as admission, the job-controller and the
    binder would write them (the binding with the trace context given)."""
    await publish(bus, "JobSubmitted", "job", spec.meta.name, {"object": encode_object(spec)})
    pod = pod_for(spec, spec.tasks[0], index, created_at=time.time())
    await publish(bus, "PodCreated", "pod", pod.meta.name, {"object": encode_object(pod)})
    await publish(bus, "PodBound", "pod", pod.meta.name, {"node": node, "plan": "plan-1"}, **trace)
    return pod


async def read_logs(bus: Bus, pod: str, offset: int = 0, timeout_s: float = 2.0) -> dict[str, Any]:
    request = json.dumps({"offset": offset}).encode()
    reply = await bus.nc.request(logs_subject("default", pod), request, timeout=timeout_s)
    return json.loads(reply.data)


async def test_registers_its_node_and_runs_a_pod_with_the_svc_and_env_plugins(
    agent: Agent, bus: Bus, log: Log, data_dir: Path, eventually: Eventually
) -> None:
    agent()
    registered = await eventually(lambda: log.of("NodeRegistered", NODE), what="NodeRegistered")
    assert registered[0].payload["object"]["object"]["allocatable"]["cpu"] == 8000
    script = (
        'echo hello; cat "$VC_HOSTS_DIR/worker.host"; echo; echo "index=$VC_TASK_INDEX num=$VC_WORKER_NUM"'
    )
    pod = await submit(bus, job("hello", script, svc=[], env=[]), 1)
    ended = await eventually(lambda: log.of("PodSucceeded", pod.meta.name), what="PodSucceeded")
    assert ended[0].payload["exit_code"] == 0
    assert len(log.of("PodRunning", pod.meta.name)) == 1
    assert log.of("PodRunning", pod.meta.name)[0].seq < ended[0].seq

    reply = await read_logs(bus, pod.meta.name)
    assert reply["data"] == "hello\nhello-worker-0.hello\nhello-worker-1.hello\nindex=1 num=2\n"
    assert reply["done"] is True
    assert await read_logs(bus, pod.meta.name, reply["offset"]) == {
        "data": "",
        "offset": reply["offset"],
        "done": True,
    }
    hosts = (data_dir / "pods" / "default" / pod.meta.name / "etc" / "volcano" / "hosts").read_text()
    assert "127.0.0.1\thello-worker-0.hello hello-worker-0\n" in hosts
    with pytest.raises(nats.errors.TimeoutError):  # no agent ran it: nobody answers
        await read_logs(bus, "never-ran", timeout_s=0.5)


async def test_an_evicted_pod_is_terminated_within_its_grace_period(
    agent: Agent, bus: Bus, log: Log, eventually: Eventually
) -> None:
    agent()
    pod = await submit(bus, job("long", "sleep 60", grace=5), 0)
    await eventually(lambda: log.of("PodRunning", pod.meta.name), what="PodRunning")
    evicting = await publish(
        bus, "PodEvicting", "pod", pod.meta.name, {"node": NODE, "reason": "Preempted", "plan": "p2"}
    )
    started = time.monotonic()
    ended = await eventually(lambda: log.of("PodTerminated", pod.meta.name), what="PodTerminated")
    assert time.monotonic() - started < 5
    assert ended[0].payload["reason"] == "Evicted"
    assert ended[0].seq > evicting.seq
    assert not log.of("PodSucceeded", pod.meta.name) and not log.of("PodFailed", pod.meta.name)


async def test_the_runtime_action_and_the_phase_events_join_the_bindings_trace(
    agent: Agent, bus: Bus, log: Log, eventually: Eventually
) -> None:
    exporter = InMemorySpanExporter()
    tracer = setup_tracing("node-agent", exporter, set_global=False).get_tracer("tests")
    agent(tracer=tracer)
    with tracer.start_as_current_span("bind", kind=SpanKind.PRODUCER) as bind:
        pod = await submit(bus, job("traced", "true"), 0, **trace_fields())
    await eventually(lambda: log.of("PodSucceeded", pod.meta.name), what="PodSucceeded")
    trace_id = bind.get_span_context().trace_id
    start = next(span for span in exporter.get_finished_spans() if span.name == "start pod")
    assert start.context.trace_id == trace_id
    assert start.parent is not None and start.parent.span_id == bind.get_span_context().span_id
    assert start.attributes["lahar.job"] == "default/traced"
    for event_type in ("PodRunning", "PodSucceeded"):
        published = log.of(event_type, pod.meta.name)[0]
        assert extract_context(published)  # it carries a context ...
        assert published.traceparent is not None and f"{trace_id:032x}" in published.traceparent  # ... ours


async def test_heartbeats_name_the_agent_and_its_node(agent: Agent, bus: Bus) -> None:
    beats: asyncio.Queue[bytes] = asyncio.Queue()

    async def on_beat(msg: Any) -> None:
        await beats.put(msg.data)

    subscription = await bus.nc.subscribe(heartbeat_subject("agent-7"), cb=on_beat)
    await bus.nc.flush()
    try:
        agent(agent_id="agent-7")
        first = decode_heartbeat(await asyncio.wait_for(beats.get(), 5))
        second = decode_heartbeat(await asyncio.wait_for(beats.get(), 5))
    finally:
        await subscription.unsubscribe()
    assert (first.nodes, first.agent) == ((NODE,), "agent-7")
    assert abs(first.time - time.time()) < 5
    assert second.time > first.time


@pytest.mark.slow  # the adopted pod runs its 5 s to the end
@pytest.mark.parametrize("checkpoint", [True, False], ids=["from-checkpoint", "from-the-log"])
async def test_a_restarted_agent_adopts_a_running_pod_instead_of_starting_it_again(
    agent: Agent, bus: Bus, etcd: Etcd, log: Log, data_dir: Path, eventually: Eventually, checkpoint: bool
) -> None:
    first = agent()
    pod = await submit(bus, job("steady", "echo run >> runs.txt; sleep 5"), 0)
    await eventually(lambda: log.of("PodRunning", pod.meta.name), what="PodRunning")
    await first.shutdown()
    if not checkpoint:
        await first.checkpointer.store.delete()
    agent()
    ended = await eventually(lambda: log.of("PodSucceeded", pod.meta.name), what="PodSucceeded", timeout_s=20)
    assert ended[0].payload["exit_code"] == 0
    assert len(log.of("PodRunning", pod.meta.name)) == 1
    assert (data_dir / "pods" / "default" / pod.meta.name / "runs.txt").read_text() == "run\n"


async def test_a_sim_agent_runs_a_hundred_pods_on_a_hundred_hollow_nodes(
    agent: Agent, bus: Bus, log: Log, eventually: Eventually
) -> None:
    agent(runtime="sim", sim_nodes=100, time_scale=0.01)
    await eventually(lambda: len(log.of("NodeRegistered")) == 100, what="100 NodeRegistered")
    spec = job("many", "sleep 30", replicas=100)
    await publish(bus, "JobSubmitted", "job", spec.meta.name, {"object": encode_object(spec)})
    for index in range(100):
        pod = pod_for(spec, spec.tasks[0], index, created_at=time.time())
        await publish(bus, "PodCreated", "pod", pod.meta.name, {"object": encode_object(pod)})
        await publish(bus, "PodBound", "pod", pod.meta.name, {"node": f"sim-{index}", "plan": "p"})
    await eventually(lambda: len(log.of("PodSucceeded")) == 100, what="100 PodSucceeded", timeout_s=30)
    assert {e.payload["node"] for e in log.of("PodSucceeded")} == {f"sim-{i}" for i in range(100)}
    assert len(log.of("PodRunning")) == 100


async def test_the_module_runs_under_run_main_and_stops_cleanly(
    bus: Bus,
    etcd: Etcd,  # emptied: no checkpoint of an earlier test's sim agent
    log: Log,
    nats_server: NatsServer,
    etcd_server: EtcdServer,
    tmp_path: Path,
    eventually: Eventually,
) -> None:
    host, port = etcd_server.endpoint
    metrics_port = free_port()
    args = [
        "--nats-url",
        nats_server.url,
        "--etcd-endpoint",
        f"{host}:{port}",
        "--metrics-port",
        str(metrics_port),
    ]
    args += ["--runtime", "sim", "--sim-nodes", "2", "--data-dir", str(tmp_path / "sim")]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.node_agent",
        *args,
        cwd=REPO,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:

        def health() -> dict[str, Any] | None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{metrics_port}/healthz", timeout=1
                ) as response:
                    return json.loads(response.read()) if response.status == 200 else None
            except OSError:
                return None

        healthy = await eventually(lambda: asyncio.to_thread(health), what="/healthz 200")
        assert (healthy["service"], healthy["runtime"], healthy["nodes"]) == ("node-agent.sim", "sim", 2)
        await eventually(lambda: len(log.of("NodeRegistered")) == 2, what="both hollow nodes registered")
        assert {e.name for e in log.of("NodeRegistered")} == {"sim-0", "sim-1"}
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, stderr.decode()[-3000:]


def test_config_problems_are_reported_together() -> None:
    with pytest.raises(ValueError) as raised:
        NodeAgentConfig(runtime="docker", node_cpu="lots", sim_nodes=0)
    message = str(raised.value)
    assert "runtime: expected one of process, sim" in message
    assert "node_cpu:" in message and "sim_nodes:" in message
    assert "data_dir" not in message  # only the process runtime needs one
    assert NodeAgentConfig(runtime="sim").agent == "sim"
