"""Volcano's series on the live services' /metrics: admission, the job- and queue-controllers, a scheduler
replica, the binder and a sim node agent run in this process against real nats-server and etcd, each
serving its own registry on /metrics. A workload over a hierarchy of queues makes a job complete, one
fail, one stay unschedulable, a queue reclaim from another and a high-priority job preempt in its queue;
every series of docs/metrics.md's Volcano list must then be on some service's page, with Volcano's labels
(and every queue of the hierarchy in the queue series, parents too)."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.waiting import Eventually

from services.admission.service import AdmissionConfig, AdmissionService
from services.binder.service import BinderConfig, BinderService
from services.job_controller.service import JobControllerConfig, JobControllerService
from services.node_agent.config import NodeAgentConfig
from services.node_agent.service import make_service
from services.queue_controller.service import QueueControllerConfig, QueueControllerService
from services.scheduler.core.conf import parse_conf
from services.scheduler.service import SchedulerConfig, SchedulerService
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream, plans_stream
from shared.client import LaharClient
from shared.runner import EventSourcedService
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Etcd
from shared.telemetry.metrics import MetricsServer, Registry

pytestmark = pytest.mark.slow

QUIET: dict[str, Any] = {
    "reconcile_interval_s": 0.2,
    "checkpoint_every_events": 1_000_000,
    "checkpoint_every_s": 3600.0,
    "leader_lease_ttl_s": 1,
}
CONF = parse_conf(
    """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""
)
QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: root}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: eng}
spec: {parent: root, weight: 1, deserved: {cpu: "8"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: dev}
spec: {parent: eng, weight: 1, reclaimable: true, deserved: {cpu: "4"}, capability: {cpu: "8"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: prod}
spec: {parent: eng, weight: 1, reclaimable: true, deserved: {cpu: "4"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""
# every queue of the hierarchy, and Volcano's `default`
ALL_QUEUES = {"root", "eng", "dev", "prod", "default"}


def job(
    name: str,
    queue: str,
    replicas: int,
    *,
    cpu: str = "1",
    seconds: int = 100_000,
    priority: str = "low",
    exit_code: int = 0,
) -> str:
    """A gang of `replicas` pods; sim pods last `seconds` x the agent's time scale and exit with
    `exit_code`. A failing job is restarted once, then Failed."""
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  queue: {queue}
  minAvailable: {replicas}
  maxRetry: 1
  priorityClassName: {priority}
  policies: [{{event: PodFailed, action: RestartJob}}]
  tasks:
    - name: worker
      replicas: {replicas}
      template:
        metadata:
          annotations: {{lahar.dev/sim-exit-code: "{exit_code}"}}
        spec:
          priorityClassName: {priority}
          containers:
            - name: main
              image: busybox
              command: [sleep, "{seconds}"]
              resources: {{requests: {{cpu: "{cpu}"}}}}
"""


class ScrapedStack:
    """Every service on connections of its own, each serving its own registry on /metrics."""

    def __init__(self, nats: NatsServer, etcd: EtcdServer) -> None:
        self.nats, self.etcd_server = nats, etcd
        self.services: dict[str, EventSourcedService[Any]] = {}
        self.endpoints: dict[str, MetricsServer] = {}
        self.clients: list[Bus | Etcd] = []

    async def start(self) -> None:
        builders = {
            "admission": lambda bus, etcd, r: AdmissionService(
                bus, etcd, AdmissionConfig(**QUIET, intake=False), registry=r
            ),
            "job-controller": lambda bus, etcd, r: JobControllerService(
                bus, etcd, JobControllerConfig(**QUIET, instance_id="jc-a"), registry=r
            ),
            "queue-controller": lambda bus, etcd, r: QueueControllerService(
                bus, etcd, QueueControllerConfig(**QUIET, instance_id="qc-a"), registry=r
            ),
            "scheduler": lambda bus, etcd, r: SchedulerService(
                bus,
                etcd,
                SchedulerConfig(**QUIET, replica_id="scheduler-0", schedule_period_s=0.3),
                CONF,
                registry=r,
            ),
            "binder": lambda bus, etcd, r: BinderService(
                bus, etcd, BinderConfig(**QUIET, instance_id="binder-a"), registry=r
            ),
            # two hollow nodes of 4 cpu; a pod's `sleep N` lasts N x 10 ms
            "node-agent": lambda bus, etcd, r: make_service(
                NodeAgentConfig(
                    **QUIET,
                    runtime="sim",
                    sim_nodes=2,
                    sim_cpu="4",
                    time_scale=0.01,
                    heartbeat_interval_s=0.2,
                ),
                bus,
                etcd,
                registry=r,
            ),
        }
        for name, build in builders.items():
            bus = await Bus.connect(self.nats.url, name=name)
            etcd = await Etcd.connect(*self.etcd_server.endpoint)
            self.clients += [bus, etcd]
            registry = Registry(process_metrics=True)
            self.services[name] = build(bus, etcd, registry)
            self.endpoints[name] = MetricsServer(registry, self.services[name].health)
            await self.endpoints[name].start()
        await asyncio.gather(*(service.run_until_idle(30) for service in self.services.values()))

    async def stop(self) -> None:
        for endpoint in self.endpoints.values():
            await endpoint.close()
        for service in reversed(self.services.values()):
            await asyncio.wait_for(service.shutdown(), 15)
        for client in self.clients:
            await client.close()
        for service in self.services.values():
            if service._task is not None:
                service._task.result()  # a service that crashed fails the test

    def scrape(self, name: str) -> str:
        url = f"http://127.0.0.1:{self.endpoints[name].port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())

    async def pages(self) -> dict[str, str]:
        return {name: await asyncio.to_thread(self.scrape, name) for name in self.endpoints}


@pytest.fixture
async def stack(
    nats_server: NatsServer, etcd_server: EtcdServer, bus: Bus, etcd: Etcd
) -> AsyncIterator[ScrapedStack]:
    await bus.ensure_streams([events_stream(), plans_stream()])  # an empty log, no earlier test's leases
    made = ScrapedStack(nats_server, etcd_server)
    try:
        yield made
    finally:
        if not all(service.stopped for service in made.services.values()):
            await made.stop()


_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$", re.M)


def samples(page: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (name, dict(re.findall(r'(\w+)="([^"]*)"', labels or "")), float(value))
        for name, labels, value in _SAMPLE.findall(page)
    ]


def find(pages: dict[str, str], name: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of `name` on any page, with the service it is on."""
    return [
        (service, labels, value)
        for service, page in pages.items()
        for n, labels, value in samples(page)
        if n == name
    ]


# Volcano's series (docs/metrics.md) and the labels each must carry ("le" of histograms aside)
HISTOGRAMS = {
    "volcano_e2e_scheduling_latency_milliseconds": set(),
    "volcano_open_session_duration_milliseconds": set(),
    "volcano_e2e_job_scheduling_latency_milliseconds": set(),
    "volcano_action_scheduling_latency_milliseconds": {"action"},
    "volcano_plugin_scheduling_latency_milliseconds": {"plugin", "OnSession"},
    "volcano_task_scheduling_latency_milliseconds": {"stage"},
    "volcano_scheduling_stage_duration_milliseconds": {"stage"},
    "volcano_controller_job_to_pod_creation_latency_milliseconds": set(),
}
GAUGES_AND_COUNTERS = {
    "volcano_e2e_job_scheduling_duration": {"job_name", "queue", "job_namespace"},
    "volcano_e2e_job_scheduling_start_time": {"job_name", "queue", "job_namespace"},
    "volcano_e2e_job_scheduling_last_time": {"job_name", "queue", "job_namespace"},
    "volcano_schedule_attempts_total": {"result"},
    "volcano_pod_preemption_victims": set(),
    "volcano_total_preemption_attempts": set(),
    "volcano_eviction_transactions_total": {"action"},
    "volcano_unschedule_task_count": {"job_id"},
    "volcano_unschedule_job_count": set(),
    "volcano_job_share": {"job_ns", "job_id"},
    "volcano_job_retry_counts": {"job_id"},
    "volcano_job_completed_phase_count": {"job_name", "queue_name"},
    "volcano_job_failed_phase_count": {"job_name", "queue_name"},
    **{
        f"volcano_queue_pod_group_{phase}_count": {"queue_name"}
        for phase in ("inqueue", "pending", "running", "unknown", "completed")
    },
    **{
        f"volcano_queue_{figure}_{unit}": {"queue_name"}
        for figure in ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue")
        for unit in ("milli_cpu", "memory_bytes")
    },
    "volcano_queue_share": {"queue_name"},
    "volcano_queue_weight": {"queue_name"},
    "volcano_queue_overused": {"queue_name"},
    "lahar_node_allocatable": {"node", "resource"},
    "lahar_node_allocated": {"node", "resource"},
    "lahar_tenant_allocated": {"namespace", "queue", "resource"},
}


async def test_every_volcano_series_is_on_the_live_services_pages(
    stack: ScrapedStack, nats_server: NatsServer, etcd_server: EtcdServer, eventually: Eventually
) -> None:
    await stack.start()
    host, port = etcd_server.endpoint
    async with await LaharClient.connect(nats_server.url, f"{host}:{port}") as lahar:

        async def apply(text: str) -> None:
            answer = await lahar.apply(text)
            assert answer.accepted, answer

        async def phase(name: str) -> str:
            found = await lahar.get("job", name, "default")
            return str(found.status.state.phase) if found is not None else ""  # type: ignore[union-attr]

        await apply(QUEUES)
        # a job that completes, one that fails (restarted once), one that never fits a node
        await apply(job("quick", "prod", 1, seconds=1))
        await apply(job("broken", "prod", 1, seconds=1, exit_code=1))
        await apply(job("huge", "dev", 1, cpu="16"))
        for name, wanted in (("quick", "Completed"), ("broken", "Failed")):
            await eventually(lambda n=name, w=wanted: _is(phase(n), w), what=f"{name} {wanted}", timeout_s=60)
        # dev fills the cluster beyond its deserved; prod, under its own, reclaims from it
        await apply(job("filler", "dev", 8))
        pages = await _pages_with(
            stack, eventually, "lahar_tenant_allocated", lambda v: v >= 8, "filler running"
        )
        await apply(job("claim", "prod", 2))
        await _pages_with(
            stack, eventually, "volcano_eviction_transactions_total", lambda v: v >= 1, "a reclaim"
        )
        # a high-priority job in dev preempts a filler pod
        await apply(job("urgent", "dev", 1, priority="high"))
        pages = await _pages_with(
            stack, eventually, "volcano_total_preemption_attempts", lambda v: v >= 1, "a preemption"
        )
        await eventually(lambda: _is(phase("urgent"), "Running"), what="urgent running", timeout_s=60)
        pages = await stack.pages()

    missing = []
    for name, labels in {**HISTOGRAMS, **GAUGES_AND_COUNTERS}.items():
        series = find(pages, f"{name}_bucket" if name in HISTOGRAMS else name)
        if not series:
            missing.append(name)
            continue
        extra = {"le"} if name in HISTOGRAMS else set()
        assert all(set(found) == labels | extra for _, found, _ in series), (name, series[:3])
    assert not missing, f"not on any page: {missing}"

    def values(name: str, label: str) -> set[str]:
        return {labels[label] for _, labels, _ in find(pages, name)}

    assert values("volcano_task_scheduling_latency_milliseconds_bucket", "stage") == {
        "Watched",
        "Assumed",
        "Bound",
    }
    assert values("volcano_scheduling_stage_duration_milliseconds_bucket", "stage") == {
        "Predicate",
        "Scoring",
        "PreBind",
        "Bind",
    }
    assert values("volcano_eviction_transactions_total", "action") == {"reclaim", "preempt"}
    assert values("volcano_plugin_scheduling_latency_milliseconds_bucket", "OnSession") == {
        "OnSessionOpen",
        "OnSessionClose",
    }
    for family in (
        "volcano_queue_allocated_milli_cpu",
        "volcano_queue_deserved_milli_cpu",
        "volcano_queue_share",
    ):
        assert values(family, "queue_name") == ALL_QUEUES, family  # parents too, not only leaves
    allocated = {labels["queue_name"]: v for _, labels, v in find(pages, "volcano_queue_allocated_milli_cpu")}
    assert allocated["eng"] == allocated["dev"] + allocated["prod"] > 0  # a parent holds its children's
    unready = {labels["job_id"]: v for _, labels, v in find(pages, "volcano_unschedule_task_count")}
    assert unready["default/huge"] == 1 and unready["default/urgent"] == 0
    assert values("volcano_job_completed_phase_count", "job_name") == {"default/quick"}
    assert values("volcano_job_failed_phase_count", "job_name") == {"default/broken"}
    # the standard process metrics, on every service's page
    for service, page in pages.items():
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes"):
            assert re.search(rf"^{name} ", page, re.M), (service, name)
    await stack.stop()


async def _is(value: Any, wanted: str) -> bool:
    return await value == wanted


async def _pages_with(
    stack: ScrapedStack, eventually: Eventually, name: str, test: Any, what: str
) -> dict[str, str]:
    """The pages once the sum of `name`'s samples passes `test`."""

    async def ready() -> dict[str, str] | None:
        pages = await stack.pages()
        return pages if test(sum(v for _, _, v in find(pages, name))) else None

    return await eventually(ready, what=what, timeout_s=60)  # type: ignore[no-any-return]
