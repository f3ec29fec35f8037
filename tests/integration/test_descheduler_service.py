"""The descheduler service against real nats-server and etcd, with a binder: an overloaded node's
low-priority pods are evicted through the binder (PodEvicting with the descheduler's reason), the plain
pod and the high-priority pod stay, nothing more is evicted once the node is below its targets, a dry
run evicts nothing, and with `metrics.type: Lahar` the service follows the node agents' usage samples
on the bus itself."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from binder_stack import Stack, created, of_type, read_log, send_plan
from support.builders import node, pod, podgroup, res
from support.waiting import Eventually

from contracts.plans import Bind, PlanMessage
from contracts.usage import NodeUsage, PodUsage
from services.descheduler.config import DeschedulerConfig
from services.descheduler.core.usage import NodeLoad
from services.descheduler.service import DeschedulerService
from services.descheduler.usage_sources import LaharUsage
from shared.bus.jetstream import Bus
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry
from shared.usage.wire import encoded_reports, usage_subject

POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args: {priorityThreshold: {value: 10000}, nodeFit: true}
  - name: LoadAware
    args:
      metrics: {type: Lahar}
      thresholds: {cpu: 30, memory: 30}
      targetThresholds: {cpu: 80, memory: 85}
  plugins:
    balance: {enabled: [LoadAware]}
"""
NODES = [node(f"te{i}", cpu=4, memory="8Gi") for i in range(1, 5)]


class Samples:
    """What the node agents last measured, as the usage reader hands it out (node -> NodeLoad)."""

    def __init__(self) -> None:
        self.loads: dict[str, NodeLoad] = {}

    def latest(self, node_name: str) -> NodeLoad | None:
        return self.loads.get(node_name)


def as_load(sample: NodeLoad, now: float) -> NodeLoad:
    return sample


async def start(stack: Stack, tmp_path: Path, samples: Samples, **config: Any) -> DeschedulerService:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    bus, etcd = await Bus.connect(stack.nats.url), await Etcd.connect(*stack.etcd_server.endpoint)
    stack.clients += [bus, etcd]
    cfg = DeschedulerConfig(
        policy_config_file=str(policy),
        descheduling_interval="1h",  # the test runs it by hand
        checkpoint_every_s=3600.0,
        **config,
    )
    service = DeschedulerService(
        bus, etcd, cfg, usage=LaharUsage(samples, as_load), registry=Registry(), tracer=stack.tracer
    )
    await stack._start(service)
    return service


def job_pod(name: str, job: str, priority: int) -> Any:
    notes = {"volcano.sh/job-name": job}
    return pod(name, job, cpu="300m", memory="256Mi", priority=priority, annotations=notes)


async def seed(bus: Bus, eventually: Eventually) -> None:
    """Three low-priority pods of one job, one high-priority pod of another and a plain pod, all on te3
    (bound through the binder, as a scheduler's plan would)."""
    low = [
        pod(
            f"low-{i}",
            "low",
            cpu="300m",
            memory="256Mi",
            priority=1000,
            annotations={"volcano.sh/job-name": "low"},
        )
        for i in range(3)
    ]
    high = [
        pod(
            f"high-{i}",
            "high",
            cpu="300m",
            memory="256Mi",
            priority=100000,
            annotations={"volcano.sh/job-name": "high"},
        )
        for i in range(2)
    ]
    stress = pod("stress", "podgroup-stress", cpu="1500m", memory="1Gi", priority=0)
    groups = [podgroup("low"), podgroup("high"), podgroup("podgroup-stress")]
    await created(bus, *NODES, *groups, *low, *high, stress)
    binds = tuple(
        Bind(p.meta.key, f"default/{p.meta.annotations['scheduling.k8s.io/group-name']}", "te3")
        for p in (*low, *high, stress)
    )
    for bind in binds:
        await send_plan(bus, PlanMessage(str(uuid.uuid4()), "scheduler-0", 0, binds=(bind,)))

    async def all_bound() -> bool:
        return len(of_type(await read_log(bus), "PodBound")) == len(binds)

    await eventually(all_bound, what="every pod bound on te3")


def hot(samples: Samples, te3_cpu: str) -> None:
    samples.loads = {f"te{i}": NodeLoad(res(cpu="200m", memory="1Gi")) for i in range(1, 5)}
    pods = {f"default/low-{i}": res(cpu="700m", memory="100Mi") for i in range(3)}
    samples.loads["te3"] = NodeLoad(res(cpu=te3_cpu, memory="3Gi"), pods=pods)


@pytest.mark.slow
async def test_an_overloaded_nodes_low_priority_pods_are_evicted_through_the_binder(
    stack: Stack, bus: Bus, eventually: Eventually, tmp_path: Path
) -> None:
    await stack.binder()
    samples = Samples()
    service = await start(stack, tmp_path, samples)
    await seed(bus, eventually)
    await service.run_until_idle(30)
    hot(samples, "4000m")  # all of te3's cpu: over its 80 % target
    result = await service.deschedule()
    # each evicted low pod frees its 700m: two take te3 to 2.6 cpus (65 %), below the target
    assert [e.pod for e in result.evictions] == ["default/low-0", "default/low-1"]

    async def evicting() -> list[Any]:
        return of_type(await read_log(bus), "PodEvicting")

    events = await eventually(lambda: _two(evicting), what="the binder's PodEvicting for both")
    assert sorted(e.key for e in events) == ["default/low-0", "default/low-1"]
    for event in events:
        assert event.env.producer == "binder" and event.env.payload["node"] == "te3"
        assert event.env.payload["reason"].startswith(
            "deschedule: LoadAware: node te3 is above its targetThresholds"
        )
    # the next run sees them stopping and te3 measured below its targets: nothing more
    await service.run_until_idle(30)
    hot(samples, "2500m")
    assert (await service.deschedule()).evictions == ()
    assert len(await evicting()) == 2


async def _two(fetch: Any) -> Any:
    found = await fetch()
    return found if len(found) >= 2 else None


@pytest.mark.slow
async def test_a_dry_run_lists_evictions_and_sends_none(
    stack: Stack, bus: Bus, eventually: Eventually, tmp_path: Path
) -> None:
    await stack.binder()
    samples = Samples()
    service = await start(stack, tmp_path, samples, dry_run=True)
    await seed(bus, eventually)
    await service.run_until_idle(30)
    hot(samples, "4000m")
    result = await service.deschedule()
    assert [e.pod for e in result.evictions] == ["default/low-0", "default/low-1"]
    again = await service.deschedule()  # nothing was evicted, so the same again
    assert [e.pod for e in again.evictions] == ["default/low-0", "default/low-1"]
    assert service.desched_metrics.dry_run_evictions.labels("LoadAware", "overutilized:cpu").value == 4
    await stack.services[0].run_until_idle(30)  # the binder has handled every plan it got
    assert of_type(await read_log(bus), "PodEvicting") == []


def agent_samples(te3_cpu_milli: int) -> list[NodeUsage]:
    """What a node agent would publish for te1-te4: te3 busy, its low pods measured (window averages)."""

    def sample(name: str, cpu: int, memory: int, pods: tuple[PodUsage, ...] = ()) -> NodeUsage:
        return NodeUsage(
            node=name,
            time=time.time(),
            cpu_milli=cpu,
            memory_bytes=memory,
            cpu_avg_milli=cpu,
            memory_avg_bytes=memory,
            window_s=120.0,
            pods=pods,
        )

    low = tuple(
        PodUsage(
            pod=f"default/low-{i}",
            cpu_milli=700,
            memory_bytes=100 << 20,
            cpu_avg_milli=700,
            memory_avg_bytes=100 << 20,
        )
        for i in range(3)
    )
    others = [sample(f"te{i}", 200, 1 << 30) for i in (1, 2, 4)]
    return [*others, sample("te3", te3_cpu_milli, 3 << 30, low)]


@pytest.mark.slow
async def test_with_metrics_type_lahar_it_reads_the_agents_samples_from_the_bus(
    stack: Stack, bus: Bus, eventually: Eventually, tmp_path: Path
) -> None:
    await stack.binder()
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    service_bus, etcd = await Bus.connect(stack.nats.url), await Etcd.connect(*stack.etcd_server.endpoint)
    stack.clients += [service_bus, etcd]
    config = DeschedulerConfig(
        policy_config_file=str(policy), descheduling_interval="1h", checkpoint_every_s=3600.0, dry_run=True
    )
    service = DeschedulerService(service_bus, etcd, config, registry=Registry(), tracer=stack.tracer)
    await stack._start(service)
    await seed(bus, eventually)
    await service.run_until_idle(30)
    book = service.usage_book
    assert book is not None  # the policy reads lahar's samples and none were handed to it

    async def te3_heard() -> bool:
        for message in encoded_reports("rack-1", 10.0, agent_samples(4000)):
            await bus.nc.publish(usage_subject("rack-1"), message)
        await bus.nc.flush()
        sample = book.latest("te3")
        return sample is not None and sample.cpu_avg_milli == 4000

    await eventually(te3_heard, what="the agents' samples in the descheduler's book")
    result = await service.deschedule()
    assert [e.pod for e in result.evictions] == ["default/low-0", "default/low-1"]
