"""Prometheus metrics on prometheus-client: a registry of counters, gauges and histograms with labels,
series computed when Prometheus scrapes (`scraped`), and a loopback HTTP endpoint serving /metrics and
/healthz.

Services define their own metrics, named like Volcano's where one exists (reference: Volcano's
pkg/scheduler/metrics, e.g. volcano_e2e_scheduling_latency_milliseconds) and lahar_* otherwise; the
list, with who exports what, is docs/metrics.md. The process-wide registry (`default_registry()`) also
carries prometheus-client's process, platform and garbage-collector series (process_cpu_seconds_total,
process_resident_memory_bytes, python_info, ...).

Updates must happen on the event loop's thread (see _LoopValue). Two choices keep the exposition what it
was before prometheus-client, and like Volcano's (Go's client):
- no `_created` series (OpenMetrics' creation timestamps): they would double the series count;
- a counter whose name does not end in `_total` keeps its name: prometheus-client, following
  OpenMetrics, would expose `<name>_total`, so such a counter (Volcano's `volcano_job_retry_counts`,
  `volcano_job_completed_phase_count`) is exposed untyped under its own name (docs/deviations.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from http import HTTPStatus
from typing import Any, TypeVar

import prometheus_client
from prometheus_client import CollectorRegistry, generate_latest, values
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.samples import Sample

from shared.telemetry.scraped import Scraped, SeriesGroup

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]


class _LoopValue:
    """A metric's value without prometheus-client's per-value lock. Services update and read their
    metrics on their event loop's thread only (the scheduler's session thread touches none), and the
    lock made every update about 5x slower: 0.6 against 0.1 µs, on every event each service folds, which
    showed as a few percent of the whole stack's CPU per pod (docs/benchmarks.md). `values.ValueClass` is
    prometheus-client's own switch (its multiprocess mode sets it the same way), read when a metric is
    made."""

    __slots__ = ("_value",)

    def __init__(self, *_: Any, **__: Any) -> None:
        self._value = 0.0

    def inc(self, amount: float) -> None:
        self._value += amount

    def set(self, value: float, timestamp: float | None = None) -> None:
        self._value = value

    def get(self) -> float:
        return self._value

    def set_exemplar(self, exemplar: Any) -> None:
        pass  # lahar attaches no exemplars

    def get_exemplar(self) -> None:
        return None


values.ValueClass = _LoopValue

# Prometheus' default buckets, in seconds.
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # the format generate_latest writes
_REQUEST_TIMEOUT_S = 5.0
# Prometheus' classic names (prometheus-client would also take any UTF-8 name; a query could not)
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """count upper bounds start, start*factor, ... (Prometheus' ExponentialBuckets)."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError("exponential buckets need start > 0, factor > 1 and count >= 1")
    return tuple(start * factor**i for i in range(count))


def exponential_buckets_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """count upper bounds from low to high, each the same factor above the last (Go client's
    ExponentialBucketsRange, which Volcano's histograms use)."""
    if low <= 0 or high <= low or count < 2:
        raise ValueError("exponential bucket ranges need 0 < low < high and count >= 2")
    factor = (high / low) ** (1 / (count - 1))
    return tuple(low * factor**i for i in range(count))


# volcano_scheduling_stage_duration_milliseconds: one histogram family that two services write (the
# scheduler its Predicate and Scoring stages, the binder PreBind and Bind), so one set of buckets
STAGE_BUCKETS = exponential_buckets_range(0.1, 500, 20)


class _Unlabelled:
    """`labels()` with no values on a metric without labels is the metric itself (the hand-written
    registry allowed it, and code reads `metric.labels().value` either way)."""

    _labelnames: tuple[str, ...]

    def labels(self, *values: object, **by_name: object) -> Any:
        if not values and not by_name and not self._labelnames:
            return self
        return super().labels(*values, **by_name)  # type: ignore[misc]


class Counter(_Unlabelled, prometheus_client.Counter):
    @property
    def value(self) -> float:
        """The count of this (child) series."""
        return float(self._value.get())


class UntypedCounter(Counter):
    """A counter exposed under its own name, not `<name>_total` (see the module's docstring)."""

    _type = "unknown"

    def _child_samples(self) -> Iterable[Sample]:
        return (Sample("", {}, self._value.get(), None, None),)


class Gauge(_Unlabelled, prometheus_client.Gauge):
    @property
    def value(self) -> float:
        return float(self._value.get())


class Histogram(_Unlabelled, prometheus_client.Histogram):
    @property
    def count(self) -> int:
        """Observations of this (child) series."""
        return int(sum(bucket.get() for bucket in self._buckets))

    @property
    def bounds(self) -> tuple[float, ...]:
        return tuple(b for b in self._upper_bounds if not math.isinf(b))


M = TypeVar("M", Counter, Gauge, Histogram, Scraped)


class Registry:
    """Metric families by name, on a prometheus-client CollectorRegistry. Defining a metric again with
    the same type and labels returns the existing one (several instances of a component in one process
    share it); anything else is an error."""

    def __init__(self, *, process_metrics: bool = False) -> None:
        """`process_metrics`: also the process, platform and GC collectors (the process-wide registry)."""
        self.collectors = CollectorRegistry(auto_describe=True)
        self.generation = 0  # scrapes so far (a SeriesGroup computes its rows once per scrape)
        self._metrics: dict[str, Counter | Gauge | Histogram | Scraped] = {}
        if process_metrics:
            ProcessCollector(registry=self.collectors)
            PlatformCollector(registry=self.collectors)
            GCCollector(registry=self.collectors)

    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        kind = Counter if name.endswith("_total") else UntypedCounter
        return self._define(name, Counter, labels, lambda: kind(name, help, labels, registry=None))

    def gauge(self, name: str, help: str, labels: Sequence[str] = ()) -> Gauge:
        return self._define(name, Gauge, labels, lambda: Gauge(name, help, labels, registry=None))

    def histogram(
        self, name: str, help: str, labels: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS
    ) -> Histogram:
        bounds = tuple(sorted(float(b) for b in buckets if not math.isinf(b)))
        if not bounds or len(set(bounds)) != len(bounds):
            raise ValueError(f"{name}: buckets must be distinct finite numbers")
        if "le" in labels:
            raise ValueError(f"{name}: 'le' is reserved for histogram buckets")
        metric = self._define(
            name, Histogram, labels, lambda: Histogram(name, help, labels, buckets=bounds, registry=None)
        )
        if metric.bounds != bounds:
            raise ValueError(f"metric {name} is already defined with other buckets")
        return metric

    def scraped(
        self,
        name: str,
        help: str,
        labels: Sequence[str] = (),
        kind: str = "gauge",
        *,
        group: SeriesGroup | None = None,
    ) -> Scraped:
        """A family read at scrape time; its rows come from `group`, or from sources given later with
        `.source(read)`."""
        metric = self._define(name, Scraped, labels, lambda: Scraped(name, help, labels, kind))
        if metric.kind != kind:
            raise ValueError(f"metric {name} is already defined as a scraped {metric.kind}")
        if group is not None:
            metric.source(group.family(name))
        return metric

    def _define(self, name: str, kind: type[M], labels: Sequence[str], make: Callable[[], Any]) -> M:
        existing = self._metrics.get(name)
        if existing is None:
            if not _METRIC_NAME.match(name):
                raise ValueError(f"invalid metric name {name!r}")
            for label in labels:
                if not _LABEL_NAME.match(label) or label.startswith("__"):
                    raise ValueError(f"invalid label name {label!r} for metric {name}")
            metric = make()
            self.collectors.register(metric)  # validates the name and the labels
            self._metrics[name] = metric
            return metric  # type: ignore[no-any-return]
        if not isinstance(existing, kind) or _label_names(existing) != tuple(labels):
            raise ValueError(
                f"metric {name} is already defined as a {type(existing).__name__.lower()} "
                f"with labels {_label_names(existing)}"
            )
        return existing

    def get(self, name: str) -> Counter | Gauge | Histogram | Scraped:
        return self._metrics[name]

    def scrape(self) -> bytes:
        """The whole registry in the Prometheus text format: prometheus-client's families, then the
        scraped ones."""
        self.generation += 1
        scraped = [m.exposition() for m in self._metrics.values() if isinstance(m, Scraped)]
        return generate_latest(self.collectors) + "".join(scraped).encode()

    def render(self) -> str:
        return self.scrape().decode()


def _label_names(metric: Counter | Gauge | Histogram | Scraped) -> tuple[str, ...]:
    return metric.label_names if isinstance(metric, Scraped) else tuple(metric._labelnames)


_DEFAULT = Registry(process_metrics=True)


def default_registry() -> Registry:
    """The process-wide registry that run_main serves on /metrics."""
    return _DEFAULT


HealthCheck = Callable[[], Mapping[str, Any]]


class MetricsServer:
    """GET /metrics (the registry) and GET /healthz (the health callback as JSON: 200 when its "ok" is
    true, 503 otherwise) over plain HTTP/1.1 on host:port (port 0: a free one, see .port after start).
    On the event loop, so that scraped families read the service's state between two of its steps."""

    def __init__(
        self, registry: Registry, health: HealthCheck, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.registry = registry
        self.health = health
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), _REQUEST_TIMEOUT_S)
            while (await asyncio.wait_for(reader.readline(), _REQUEST_TIMEOUT_S)).strip():
                pass  # headers: nothing here depends on them
            parts = request.decode("latin-1").split()
            if len(parts) != 3:
                return
            method, target, _version = parts
            status, content_type, body = self._respond(method, target.split("?", 1)[0])
            head = (
                f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (TimeoutError, ConnectionError, ValueError):
            pass  # a broken or slow client: just hang up
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _respond(self, method: str, path: str) -> tuple[HTTPStatus, str, bytes]:
        if method not in ("GET", "HEAD"):
            return HTTPStatus.METHOD_NOT_ALLOWED, "text/plain", b"only GET and HEAD\n"
        if path == "/metrics":
            return HTTPStatus.OK, CONTENT_TYPE, self.registry.scrape()
        if path == "/healthz":
            try:
                report = dict(self.health())
            except Exception as exc:  # a failing health check is itself a health report
                report = {"ok": False, "error": repr(exc)}
            status = HTTPStatus.OK if report.get("ok") is True else HTTPStatus.SERVICE_UNAVAILABLE
            return status, "application/json", json.dumps(report, default=str).encode() + b"\n"
        return HTTPStatus.NOT_FOUND, "text/plain", b"try /metrics or /healthz\n"
