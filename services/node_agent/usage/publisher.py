"""The node agent's usage loop: every period, sample the nodes (a source per runtime, sources.py), fold
the samples into the window averages, publish them as usage reports (shared/usage/wire.py) and show them
as Prometheus node metrics. The first sample is taken once the agent has caught up with the log (it knows
which pods run where). A sample that cannot be read (a /proc file missing) is skipped, counted and
logged; a publish that fails (disconnected) too: the next period's sample replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import nats.errors
import structlog
from nats.aio.client import Client as NatsClient

from contracts.usage import NodeUsage
from services.node_agent.usage.sources import UsageSource
from services.node_agent.usage.window import UsageWindow, usage_entries
from shared.telemetry.metrics import Registry
from shared.usage.wire import encoded_reports, usage_subject

log = structlog.get_logger(__name__)


class UsageMetrics:
    """The node metrics a node agent exports (one series per node it hosts)."""

    def __init__(self, registry: Registry, agent: str) -> None:
        labels = ("node",)
        self.cpu = registry.gauge(
            "lahar_node_cpu_usage_millicores", "A node's cpu use in its latest sample", labels
        )
        self.memory = registry.gauge(
            "lahar_node_memory_usage_bytes", "A node's memory use in its latest sample", labels
        )
        self.cpu_avg = registry.gauge(
            "lahar_node_cpu_usage_avg_millicores", "A node's mean cpu use over the usage window", labels
        )
        self.memory_avg = registry.gauge(
            "lahar_node_memory_usage_avg_bytes", "A node's mean memory use over the usage window", labels
        )
        self.pods = registry.gauge("lahar_node_usage_pods", "Pods measured in a node's latest sample", labels)
        self.samples = registry.counter(
            "lahar_node_agent_usage_samples_total", "Usage samples taken, by outcome", ("agent", "outcome")
        )
        self.agent = agent

    def show(self, nodes: list[NodeUsage]) -> None:
        for node in nodes:
            self.cpu.labels(node.node).set(node.cpu_milli)
            self.memory.labels(node.node).set(node.memory_bytes)
            self.cpu_avg.labels(node.node).set(node.cpu_avg_milli)
            self.memory_avg.labels(node.node).set(node.memory_avg_bytes)
            self.pods.labels(node.node).set(len(node.pods))
        self.samples.labels(self.agent, "ok").inc()

    def failed(self) -> None:
        self.samples.labels(self.agent, "failed").inc()


async def publish_usage(
    nc: NatsClient,
    agent: str,
    source: UsageSource,
    window: UsageWindow,
    period_s: float,
    clock: Callable[[], float],
    stopping: asyncio.Event,
    metrics: UsageMetrics,
) -> None:
    """Sample, show and publish every period_s until stopping is set."""
    subject = usage_subject(agent)
    while not stopping.is_set():
        try:
            samples = source.sample()
        except (OSError, ValueError, IndexError, KeyError) as exc:
            metrics.failed()
            log.warning("cannot sample the nodes' usage", error=repr(exc))
        else:
            nodes = usage_entries(samples, window, clock())
            metrics.show(nodes)
            for message in encoded_reports(agent, period_s, nodes):
                try:
                    await nc.publish(subject, message)
                except (nats.errors.OutboundBufferLimitError, nats.errors.ConnectionClosedError):
                    break  # disconnected: the next period's sample replaces this one
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), period_s)
