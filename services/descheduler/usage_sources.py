"""Where LoadAware's usage comes from (the I/O side): a `UsageSource` gives, before a run, the latest
usage of each node with its age (services/descheduler/core/usage.py). Two kinds, as the policy's
`metrics.type` names them:

- `Prometheus`: a real Prometheus server, asked with Volcano's queries (node_exporter's metrics, the
  `instance` label being the node's name): cpu = 1 - the average idle rate over `duration`, memory =
  1 - MemAvailable / MemTotal averaged over `duration`, each a fraction of the node's capacity. One query
  per resource for every node at once. Prometheus has no per-pod series for lahar's pods (Volcano asks
  cAdvisor's), so a pod's use is taken to be its requests.
- `Lahar`: the node agents' own usage samples, through any reader with `latest(node)`: the service keeps
  a UsageBook fed by the usage subjects (shared/usage/, docs/usage.md). LoadAware reads the samples'
  window averages, over the agents' `--usage-window-s` (2m by default) rather than the policy's
  `duration`.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import structlog

from contracts.objects import Node
from contracts.resources import CPU, MEMORY, Resources
from services.descheduler.core.policy import LAHAR_METRICS, PROMETHEUS, MetricsSource
from services.descheduler.core.usage import NodeLoad, sample_load

log = structlog.get_logger(__name__)

SUBQUERY_STEP = "30s"  # Volcano's resolution of the averaged subquery, and the rate's window


class UsageSource(Protocol):
    async def node_loads(self, nodes: Sequence[Node], duration_s: float, now: float) -> dict[str, NodeLoad]:
        """The latest usage of each of `nodes` it knows, averaged over `duration_s`, with its age."""
        ...


class UsageUnavailable(Exception):
    """The source could not be read (the run judges no node by usage)."""


def go_duration(seconds: float) -> str:
    """A duration as PromQL writes it (whole seconds)."""
    return f"{max(1, round(seconds))}s"


def cpu_query(duration_s: float) -> str:
    """The fraction of cpu in use per instance, averaged over the window (Volcano's query, every node)."""
    rate = f'irate(node_cpu_seconds_total{{mode="idle"}}[{SUBQUERY_STEP}])'
    return f"avg_over_time((1 - avg by (instance) ({rate}))[{go_duration(duration_s)}:{SUBQUERY_STEP}])"


def memory_query(duration_s: float) -> str:
    ratio = "node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes"
    return f"avg_over_time((1 - {ratio})[{go_duration(duration_s)}:{SUBQUERY_STEP}])"


def instance_node(instance: str, names: Mapping[str, Node]) -> str | None:
    """The node an `instance` label names: the node's name, or its name with the exporter's port."""
    if instance in names:
        return instance
    host = instance.rsplit(":", 1)[0]
    return host if host in names else None


class PrometheusUsage:
    def __init__(self, address: str, *, timeout_s: float = 10.0) -> None:
        self.address = address.rstrip("/")
        self.timeout_s = timeout_s

    async def node_loads(self, nodes: Sequence[Node], duration_s: float, now: float) -> dict[str, NodeLoad]:
        names = {n.meta.name: n for n in nodes}
        cpu, memory = await asyncio.gather(
            asyncio.to_thread(self.query, cpu_query(duration_s)),
            asyncio.to_thread(self.query, memory_query(duration_s)),
        )
        loads = {}
        for instance, cpu_fraction in cpu.items():
            name = instance_node(instance, names)
            memory_fraction = memory.get(instance)
            if name is None or memory_fraction is None:
                continue
            node = names[name]
            capacity = node.capacity if node.capacity else node.allocatable
            used = Resources(
                {
                    CPU: int(capacity.get(CPU, 0) * cpu_fraction),
                    MEMORY: int(capacity.get(MEMORY, 0) * memory_fraction),
                }
            )
            loads[name] = NodeLoad(used, age_s=0.0)  # evaluated now, over the window
        return loads

    def query(self, promql: str) -> dict[str, float]:
        """instance -> value of an instant vector query; UsageUnavailable when Prometheus does not answer
        with one."""
        url = f"{self.address}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:
                body = json.loads(response.read())
        except (OSError, ValueError, urllib.error.URLError) as exc:
            raise UsageUnavailable(f"Prometheus at {self.address}: {exc}") from exc
        data = body.get("data") if isinstance(body, dict) else None
        if (
            not isinstance(data, dict)
            or body.get("status") != "success"
            or data.get("resultType") != "vector"
        ):
            raise UsageUnavailable(f"Prometheus at {self.address} answered {str(body)[:200]!r} to {promql!r}")
        out = {}
        for item in data.get("result", []):
            try:
                instance = item["metric"]["instance"]
                out[str(instance)] = float(item["value"][1])
            except (KeyError, IndexError, TypeError, ValueError):
                continue  # a series without an instance, or a value that is not a number
        return out


class SupportsLatest(Protocol):
    def latest(self, node: str) -> Any: ...


class LaharUsage:
    """The node agents' own samples, read through `reader.latest(node)` (None: no sample of that node),
    each turned into a NodeLoad by `convert(sample, now)` (default: sample_load, with the reader's age
    of the sample when it tells one: shared/usage/book.py's UsageBook does)."""

    def __init__(
        self, reader: SupportsLatest, convert: Callable[[Any, float], NodeLoad] = sample_load
    ) -> None:
        self.reader = reader
        self.convert = convert

    async def node_loads(self, nodes: Sequence[Node], duration_s: float, now: float) -> dict[str, NodeLoad]:
        loads = {}
        age = getattr(self.reader, "age", None) if self.convert is sample_load else None
        for node in nodes:
            name = node.meta.name
            sample = self.reader.latest(name)
            if sample is not None:
                loads[name] = sample_load(sample, now, age(name, now)) if age else self.convert(sample, now)
        return loads


def source_for(metrics: MetricsSource, lahar_reader: SupportsLatest | None) -> UsageSource | None:
    """The source a policy's metrics name (None: lahar's samples, and no reader to read them with)."""
    if metrics.type == PROMETHEUS:
        return PrometheusUsage(metrics.address)
    if metrics.type == LAHAR_METRICS and lahar_reader is not None:
        return LaharUsage(lahar_reader)
    return None
