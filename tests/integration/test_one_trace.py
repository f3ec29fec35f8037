"""One job's trace across the control plane: admission, the job- and queue-controllers, a scheduler replica,
the binder and a sim node agent run in this process against real nats-server and etcd, each with a
TracerProvider of its own (resource service.name = the service) exporting to memory. A job applied through
admission's API runs to Completed; its trace must hold spans of every service under the one trace id of
the admission request, and form a single tree rooted at that request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.resources import SERVICE_NAME
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from contracts.events import ADMISSION, BINDER, JOB_CONTROLLER, NODE_AGENT, QUEUE_CONTROLLER, SCHEDULER
from services.admission.service import AdmissionConfig, AdmissionService
from services.binder.service import BinderConfig, BinderService
from services.job_controller.service import JobControllerConfig, JobControllerService
from services.node_agent.config import NodeAgentConfig
from services.node_agent.service import make_service
from services.queue_controller.service import QueueControllerConfig, QueueControllerService
from services.scheduler.service import SchedulerConfig, SchedulerService
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream, plans_stream
from shared.client import LaharClient
from shared.runner import EventSourcedService
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry
from shared.telemetry.tracing import JOB_ATTRIBUTE, setup_tracing

# reconcile often, never checkpoint (nothing restarts here), short leases
QUIET: dict[str, Any] = {
    "reconcile_interval_s": 0.2,
    "checkpoint_every_events": 1_000_000,
    "checkpoint_every_s": 3600.0,
    "leader_lease_ttl_s": 1,
}
# the services a job's trace must cross, in the order its work flows through them
CHAIN = (ADMISSION, JOB_CONTROLLER, SCHEDULER, BINDER, NODE_AGENT)
JOB = "traced"
MANIFEST = f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {JOB}, namespace: default}}
spec:
  minAvailable: 2
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: main
              image: busybox
              command: [sleep, "5"]
              resources: {{requests: {{cpu: 500m}}}}
"""

Build = Callable[[Bus, Etcd, Tracer], EventSourcedService[Any]]
BUILDERS: dict[str, Build] = {
    ADMISSION: lambda bus, etcd, tracer: AdmissionService(
        bus, etcd, AdmissionConfig(**QUIET, intake=False), registry=Registry(), tracer=tracer
    ),
    JOB_CONTROLLER: lambda bus, etcd, tracer: JobControllerService(
        bus, etcd, JobControllerConfig(**QUIET, instance_id="jc-a"), registry=Registry(), tracer=tracer
    ),
    QUEUE_CONTROLLER: lambda bus, etcd, tracer: QueueControllerService(
        bus, etcd, QueueControllerConfig(**QUIET, instance_id="qc-a"), registry=Registry(), tracer=tracer
    ),
    SCHEDULER: lambda bus, etcd, tracer: SchedulerService(
        bus,
        etcd,
        SchedulerConfig(**QUIET, replica_id="scheduler-0", schedule_period_s=0.5),
        registry=Registry(),
        tracer=tracer,
    ),
    BINDER: lambda bus, etcd, tracer: BinderService(
        bus, etcd, BinderConfig(**QUIET, instance_id="binder-a"), registry=Registry(), tracer=tracer
    ),
    # a 5 s pod lasts 50 ms on the hollow nodes
    NODE_AGENT: lambda bus, etcd, tracer: make_service(
        NodeAgentConfig(**QUIET, runtime="sim", sim_nodes=2, time_scale=0.01, heartbeat_interval_s=0.2),
        bus,
        etcd,
        registry=Registry(),
        tracer=tracer,
    ),
}


class TracedStack:
    """Every service on connections of its own, each traced by its own provider into its own exporter."""

    def __init__(self, nats: NatsServer, etcd: EtcdServer) -> None:
        self.nats, self.etcd_server = nats, etcd
        self.services: list[EventSourcedService[Any]] = []
        self.clients: list[Bus | Etcd] = []
        self.providers: list[TracerProvider] = []
        self.exporters: list[InMemorySpanExporter] = []

    async def start(self) -> None:
        for name, build in BUILDERS.items():
            exporter = InMemorySpanExporter()
            provider = setup_tracing(name, exporter, set_global=False)
            bus, etcd = (
                await Bus.connect(self.nats.url, name=name),
                await Etcd.connect(*self.etcd_server.endpoint),
            )
            self.clients += [bus, etcd]
            self.providers.append(provider)
            self.exporters.append(exporter)
            self.services.append(build(bus, etcd, provider.get_tracer("lahar")))
        await self.idle()

    async def idle(self) -> None:
        await asyncio.gather(*(service.run_until_idle(30) for service in self.services))

    async def stop(self) -> None:
        """Stop every service (their spans all end) and close their connections."""
        for service in reversed(self.services):
            await asyncio.wait_for(service.shutdown(), 15)
        for client in self.clients:
            await client.close()
        for service in self.services:
            if service._task is not None:
                service._task.result()  # a service that crashed fails the test

    def spans(self) -> list[ReadableSpan]:
        return [span for exporter in self.exporters for span in exporter.get_finished_spans()]

    def close(self) -> None:
        for provider in self.providers:
            provider.shutdown()


@pytest.fixture
async def stack(
    nats_server: NatsServer, etcd_server: EtcdServer, bus: Bus, etcd: Etcd
) -> AsyncIterator[TracedStack]:
    # `bus` and `etcd` leave the servers empty: no stream, checkpoint or lease of an earlier test
    await bus.ensure_streams([events_stream(), plans_stream()])
    made = TracedStack(nats_server, etcd_server)
    try:
        yield made
    finally:
        if not all(service.stopped for service in made.services):
            await made.stop()
        made.close()


def service_of(span: ReadableSpan) -> str:
    return str(span.resource.attributes.get(SERVICE_NAME, "?"))


def render(spans: Sequence[ReadableSpan]) -> str:
    """The spans as an indented tree (service, name, span id, parent id); orphans at the top level."""
    ids = {span.context.span_id for span in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    lines: list[str] = []

    def walk(span: ReadableSpan, depth: int) -> None:
        parent = f"{span.parent.span_id:016x}" if span.parent is not None else "-"
        where = f"span={span.context.span_id:016x} parent={parent}"
        lines.append(f"{'  ' * depth}[{service_of(span)}] {span.name}  {where}")
        for child in children.get(span.context.span_id, []):
            walk(child, depth + 1)

    for top in children.get(None, []):
        walk(top, 0)
    return "\n".join(lines)


def chain_of(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    """The services from the root down to span, each once per stretch of consecutive spans."""
    services: list[str] = []
    current: ReadableSpan | None = span
    while current is not None:
        name = service_of(current)
        if not services or services[-1] != name:
            services.append(name)
        current = by_id.get(current.parent.span_id) if current.parent is not None else None
    return services[::-1]


def explain(
    root: ReadableSpan, trace: Sequence[ReadableSpan], spans: Sequence[ReadableSpan], job: str
) -> str:
    """The job's trace as a tree, then every other trace holding a span about the job (where a service
    started a new trace instead of continuing the job's)."""
    parts = [f"trace {root.context.trace_id:032x}:\n{render(trace)}"]
    strays = {s.context.trace_id for s in spans if s.attributes.get(JOB_ATTRIBUTE) == job} - {
        root.context.trace_id
    }
    for trace_id in sorted(strays):
        stray = [s for s in spans if s.context.trace_id == trace_id]
        parts.append(f"another trace about {job}, {trace_id:032x}:\n{render(stray)}")
    return "\n\n".join(parts)


def is_subsequence(wanted: Sequence[str], seen: Sequence[str]) -> bool:
    remaining = iter(seen)
    return all(name in remaining for name in wanted)


async def test_a_jobs_trace_crosses_every_service_as_one_tree(
    stack: TracedStack, nats_server: NatsServer, etcd_server: EtcdServer
) -> None:
    await stack.start()
    host, port = etcd_server.endpoint
    async with await LaharClient.connect(nats_server.url, f"{host}:{port}") as lahar:
        answer = await lahar.apply(MANIFEST)
        assert answer.accepted, answer
        result = await lahar.wait_job(JOB, phase="Completed", timeout_s=60)
    assert result.reached, result
    await stack.idle()  # the events the completion caused are all applied
    await stack.stop()  # every span has ended and been exported

    spans = stack.spans()
    key = f"default/{JOB}"
    requests = [s for s in spans if s.name == "admission apply" and s.attributes.get(JOB_ATTRIBUTE) == key]
    assert len(requests) == 1, f"expected one admission request span for the job:\n{render(spans)}"
    root = requests[0]
    trace = [s for s in spans if s.context.trace_id == root.context.trace_id]
    shown = explain(root, trace, spans, key)
    assert root.parent is None, f"the admission request should start the job's trace\n{shown}"

    by_id = {s.context.span_id: s for s in trace}
    orphans = [s for s in trace if s is not root and (s.parent is None or s.parent.span_id not in by_id)]
    assert not orphans, f"spans whose parent is not in the trace: {[s.name for s in orphans]}\n{shown}"

    # Every service applies every event, so "apply ..." spans of all of them join any trace; what counts
    # is each service's own work in it (a request, a publish, a plan, a commit, a pod start).
    working = {service_of(s) for s in trace if not s.name.startswith("apply ")}
    missing = [name for name in CHAIN if name not in working]
    assert not missing, f"no span of the work of {missing} in the job's trace\n{shown}"

    # Each pod was started at the end of one causal chain through every service, in order (the chain
    # passes job-controller, scheduler and binder twice: the PodGroup is admitted before its pods exist).
    starts = [s for s in trace if s.name == "start pod" and service_of(s) == NODE_AGENT]
    assert len(starts) == 2, f"expected the node agent to start 2 pods in the job's trace\n{shown}"
    for start in starts:
        chain = chain_of(start, by_id)
        assert chain[0] == ADMISSION and chain[-3:] == [SCHEDULER, BINDER, NODE_AGENT], f"{chain}\n{shown}"
        assert is_subsequence(CHAIN, chain), f"{chain}\n{shown}"
    # and what the pods did is reported in the same trace
    succeeded = [s for s in trace if s.name == "publish PodSucceeded" and service_of(s) == NODE_AGENT]
    assert len(succeeded) == 2, f"expected the node agent's 2 PodSucceeded in the job's trace\n{shown}"
