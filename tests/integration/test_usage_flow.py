"""Node usage on a real nats-server: a node agent's samples reach the shared reader (sim runtime: what
its pods say; process runtime: what /proc measures of a busy pod), a scheduler replica with the usage
plugin places pods by the samples it hears, and the agent's node metrics appear on /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from binder_stack import Heartbeats, Stack, bound_exactly, created
from support.builders import node, pod
from support.waiting import Eventually

from contracts.codec import encode_object
from contracts.events import writer_of
from contracts.job_shape import default_job
from contracts.objects import Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec, frozen_map
from contracts.usage import NodeUsage, PodUsage
from services.job_controller.core.expand import pod_for
from services.node_agent.config import NodeAgentConfig
from services.node_agent.service import NodeAgentService, make_service
from services.scheduler.core.conf import parse_conf
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream
from shared.bus.subjects import event_subject
from shared.servers import EtcdServer, NatsServer, free_port
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry
from shared.usage.book import UsageBook
from shared.usage.subscriber import follow_usage
from shared.usage.wire import encoded_reports, usage_subject

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def reader(bus: Bus) -> AsyncIterator[UsageBook]:
    """The shared reader, following every agent's samples on the test's connection."""
    book, stopping = UsageBook(), asyncio.Event()
    task = asyncio.create_task(follow_usage(bus.nc, book, time.time, stopping))
    await asyncio.sleep(0)
    await bus.nc.flush()
    yield book
    stopping.set()
    await task


@pytest.fixture
async def agent(bus: Bus, etcd: Etcd, tmp_path: Path) -> AsyncIterator[Callable[..., NodeAgentService]]:
    await bus.ensure_streams([events_stream()])
    started: list[NodeAgentService] = []

    def start(**overrides: Any) -> NodeAgentService:
        fields: dict[str, Any] = {"reconcile_interval_s": 0.2, "usage_period_s": 0.2, **overrides}
        service = make_service(NodeAgentConfig(**fields), bus, etcd, registry=Registry())
        service._task = asyncio.create_task(service.run())  # as run_main does
        started.append(service)
        return service

    yield start
    for service in started:
        await service.shutdown()


async def bind(bus: Bus, name: str, node_name: str, command: str, annotations: dict[str, str]) -> None:
    """A one-pod job's events up to its pod bound to `node_name` (as admission, the job-controller and
    the binder write them)."""
    container = Container("main", command=("sh", "-c", command))
    template = PodTemplate(annotations=frozen_map(annotations), spec=PodSpec(containers=(container,)))
    spec = default_job(
        Job(meta=ObjectMeta(name=name), tasks=(TaskSpec(name="w", replicas=1, template=template),))
    )
    made = pod_for(spec, spec.tasks[0], 0, created_at=time.time())
    for event_type, kind, payload in (
        ("JobSubmitted", "job", {"object": encode_object(spec)}),
        ("PodCreated", "pod", {"object": encode_object(made)}),
        ("PodBound", "pod", {"node": node_name, "plan": "plan-1"}),
    ):
        key = name if kind == "job" else made.meta.name
        env = Envelope.create(
            event_type, time=time.time(), producer="tests", correlation_id=name, payload=payload
        )
        await bus.publish(env, event_subject(kind, "default", key, event_type, writer_of(event_type)))


def pod_sample(book: UsageBook, node_name: str, pod_key: str) -> tuple[NodeUsage, PodUsage] | None:
    latest = book.latest(node_name)
    listed = [p for p in latest.pods if p.pod == pod_key] if latest is not None else []
    return (latest, listed[0]) if latest is not None and listed else None


async def test_a_sim_agents_samples_reach_the_reader_with_what_its_pods_say(
    agent: Callable[..., NodeAgentService], bus: Bus, reader: UsageBook, eventually: Eventually
) -> None:
    agent(runtime="sim", sim_nodes=2, agent_id="rack-1")
    await eventually(lambda: reader.latest("sim-0") and reader.latest("sim-1"), what="both nodes sampled")
    assert reader.latest("sim-0").cpu_milli == 0  # type: ignore[union-attr]
    usage = {"lahar.dev/sim-usage": "cpu=1500m,memory=1Gi", "lahar.dev/sim-duration": "60s"}
    await bind(bus, "busy", "sim-1", "sleep 60", usage)
    found = await eventually(lambda: pod_sample(reader, "sim-1", "default/busy-w-0"), what="the pod sampled")
    node_usage, pod_usage = found
    assert (pod_usage.cpu_milli, pod_usage.memory_bytes) == (1500, 1 << 30)
    assert (node_usage.cpu_milli, node_usage.memory_bytes) == (1500, 1 << 30)
    assert node_usage.cpu_avg_milli <= 1500 and node_usage.window_s == 120.0
    assert reader.latest("sim-0").pods == ()  # type: ignore[union-attr]
    assert reader.age("sim-1", time.time()) < 5  # type: ignore[operator]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the process runtime reads /proc")
async def test_a_process_agent_measures_a_busy_pods_cpu_and_memory_from_proc(
    agent: Callable[..., NodeAgentService],
    bus: Bus,
    reader: UsageBook,
    tmp_path: Path,
    eventually: Eventually,
) -> None:
    agent(
        runtime="process", node_name="n1", data_dir=str(tmp_path / "agent"), node_cpu="8", node_memory="16Gi"
    )
    # a busy loop in a child of the container's shell: the pod's process tree, not one process
    await bind(
        bus, "spin", "n1", "sh -c 'end=$(($(date +%s) + 20)); while [ $(date +%s) -lt $end ]; do :; done'", {}
    )
    busy = await eventually(
        lambda: (
            (found := pod_sample(reader, "n1", "default/spin-w-0")) and found[1].cpu_milli >= 200 and found
        ),
        what="the busy pod measured using cpu",
        timeout_s=20,
    )
    node_usage, pod_usage = busy
    assert pod_usage.memory_bytes > 0
    assert node_usage.cpu_milli >= 200 and node_usage.memory_bytes > 0  # the machine, at least the pod


async def test_a_scheduler_replica_with_the_usage_plugin_places_by_the_samples_it_hears(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually
) -> None:
    conf = parse_conf(
        yaml.safe_dump(
            {
                "actions": "enqueue, allocate",
                "tiers": [
                    {"plugins": [{"name": "gang"}]},
                    {"plugins": [{"name": "predicates"}, {"name": "usage"}]},
                ],
            }
        )
    )
    binder = await stack.binder()
    await stack.scheduler("scheduler-0", conf)
    await eventually(lambda: binder.health()["role"] == "leader", what="the binder to lead")
    beats.beating |= {"n1", "n2"}
    await created(bus, node("n1", cpu=4), node("n2", cpu=4))

    async def report(busy: str, idle: str) -> None:
        samples = [
            NodeUsage(
                node=name,
                time=time.time(),
                cpu_milli=cpu,
                memory_bytes=0,
                cpu_avg_milli=cpu,
                memory_avg_bytes=0,
                window_s=120.0,
            )
            for name, cpu in ((busy, 3900), (idle, 100))
        ]
        for message in encoded_reports("test-agent", 0.1, samples):
            await bus.nc.publish(usage_subject("test-agent"), message)

    sender = asyncio.create_task(_every(0.1, lambda: report("n1", "n2")))
    try:
        await created(bus, pod("first", cpu="100m", memory="64Mi"))
        (first,) = await eventually(lambda: bound_exactly(bus, 1), what="the first pod bound")
        assert first.env.payload["node"] == "n2"  # n1 is above the 80 % threshold
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
    sender = asyncio.create_task(_every(0.1, lambda: report("n2", "n1")))
    try:
        await created(bus, pod("second", cpu="100m", memory="64Mi"))
        bound = await eventually(lambda: bound_exactly(bus, 2), what="the second pod bound")
        assert bound[1].env.payload["node"] == "n1"
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender


async def _every(period_s: float, send: Callable[[], Any]) -> None:
    while True:
        await send()
        await asyncio.sleep(period_s)  # the sender's period, as an agent's, not a wait for a condition


async def test_an_agents_node_metrics_appear_on_metrics(
    bus: Bus,
    etcd: Etcd,
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
    args += ["--runtime", "sim", "--sim-nodes", "2", "--usage-period-s", "0.2", "--agent-id", "metrics-test"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.node_agent",
        *args,
        cwd=REPO,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )

    def scrape() -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=1) as response:
                return response.read().decode()
        except OSError:
            return ""

    async def sampled_page() -> str:
        text = await asyncio.to_thread(scrape)
        return text if 'lahar_node_cpu_usage_millicores{node="sim-1"}' in text else ""

    try:
        text = await eventually(sampled_page, what="node usage series on /metrics", timeout_s=30)
    finally:
        proc.terminate()
        await proc.wait()
    for node_name in ("sim-0", "sim-1"):
        for name in (
            "lahar_node_cpu_usage_millicores",
            "lahar_node_memory_usage_bytes",
            "lahar_node_cpu_usage_avg_millicores",
            "lahar_node_memory_usage_avg_bytes",
        ):
            assert f'{name}{{node="{node_name}"}} 0' in text
    assert 'lahar_node_agent_usage_samples_total{agent="metrics-test",outcome="ok"}' in text
