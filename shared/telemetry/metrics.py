"""Prometheus metrics without dependencies: a registry of counters, gauges and histograms with labels,
rendered in the text exposition format 0.0.4, and a loopback HTTP endpoint serving /metrics and /healthz.

Services define their own metrics, named like Volcano's where one exists (reference: Volcano's
pkg/scheduler/metrics, e.g. volcano_e2e_scheduling_latency_milliseconds) and lahar_* otherwise.
Updates happen on the event loop's thread; nothing here is meant to be shared across threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from http import HTTPStatus
from typing import Any, Generic, TypeVar

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# Prometheus' default buckets, in seconds.
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
_REQUEST_TIMEOUT_S = 5.0


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """count upper bounds start, start*factor, ... (Prometheus' ExponentialBuckets)."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError("exponential buckets need start > 0, factor > 1 and count >= 1")
    return tuple(start * factor**i for i in range(count))


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels_text(pairs: Sequence[tuple[str, str]]) -> str:
    if not pairs:
        return ""
    return "{" + ",".join(f'{name}="{_escape_label(value)}"' for name, value in pairs) + "}"


class CounterChild:
    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self.value += amount


class GaugeChild:
    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class HistogramChild:
    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.bucket_counts = [0] * len(bounds)  # per bucket, not cumulative
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                self.bucket_counts[i] += 1
                break


ChildT = TypeVar("ChildT", CounterChild, GaugeChild, HistogramChild)
M = TypeVar("M", bound="Metric[Any]")


class Metric(Generic[ChildT]):
    """One metric family; labels(...) selects (creating on first use) the series of one label set."""

    kind = ""

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        if not _METRIC_NAME.match(name):
            raise ValueError(f"invalid metric name {name!r}")
        for label in labels:
            if not _LABEL_NAME.match(label) or label.startswith("__"):
                raise ValueError(f"invalid label name {label!r} for metric {name}")
        self.name = name
        self.help = help
        self.label_names = tuple(labels)
        self._series: dict[tuple[str, ...], ChildT] = {}
        if not self.label_names:
            self._series[()] = self._new_child()  # an unlabelled metric is exposed from the start, at 0

    def _new_child(self) -> ChildT:
        raise NotImplementedError

    def labels(self, *values: object, **by_name: object) -> ChildT:
        if values and by_name:
            raise ValueError("give label values by position or by name, not both")
        if by_name:
            if set(by_name) != set(self.label_names):
                raise ValueError(f"{self.name} has labels {self.label_names}, got {tuple(by_name)}")
            values = tuple(by_name[name] for name in self.label_names)
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name} has labels {self.label_names}, got {len(values)} value(s)")
        key = tuple(str(v) for v in values)
        child = self._series.get(key)
        if child is None:
            child = self._series[key] = self._new_child()
        return child

    def series(self) -> Iterator[tuple[tuple[tuple[str, str], ...], ChildT]]:
        for key, child in sorted(self._series.items()):
            yield tuple(zip(self.label_names, key, strict=True)), child

    def render(self) -> list[str]:
        help_text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        lines = [f"# HELP {self.name} {help_text}", f"# TYPE {self.name} {self.kind}"]
        for pairs, child in self.series():
            lines.extend(self._render_series(pairs, child))
        return lines

    def _render_series(self, pairs: tuple[tuple[str, str], ...], child: ChildT) -> list[str]:
        raise NotImplementedError


def _scalar_series(name: str, pairs: tuple[tuple[str, str], ...], value: float) -> list[str]:
    return [f"{name}{_labels_text(pairs)} {_number(value)}"]


class Counter(Metric[CounterChild]):
    kind = "counter"

    def _new_child(self) -> CounterChild:
        return CounterChild()

    def _render_series(self, pairs: tuple[tuple[str, str], ...], child: CounterChild) -> list[str]:
        return _scalar_series(self.name, pairs, child.value)

    def inc(self, amount: float = 1.0) -> None:
        self.labels().inc(amount)


class Gauge(Metric[GaugeChild]):
    kind = "gauge"

    def _new_child(self) -> GaugeChild:
        return GaugeChild()

    def _render_series(self, pairs: tuple[tuple[str, str], ...], child: GaugeChild) -> list[str]:
        return _scalar_series(self.name, pairs, child.value)

    def set(self, value: float) -> None:
        self.labels().set(value)


class Histogram(Metric[HistogramChild]):
    kind = "histogram"

    def __init__(
        self, name: str, help: str, labels: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS
    ) -> None:
        bounds = tuple(sorted(float(b) for b in buckets if not math.isinf(b)))
        if not bounds or len(set(bounds)) != len(bounds):
            raise ValueError(f"{name}: buckets must be distinct finite numbers")
        if "le" in labels:
            raise ValueError(f"{name}: 'le' is reserved for histogram buckets")
        self.bounds = bounds
        super().__init__(name, help, labels)

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self.bounds)

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def _render_series(self, pairs: tuple[tuple[str, str], ...], child: HistogramChild) -> list[str]:
        lines = []
        cumulative = 0
        for bound, count in zip(child.bounds, child.bucket_counts, strict=True):
            cumulative += count
            lines.append(f"{self.name}_bucket{_labels_text((*pairs, ('le', _number(bound))))} {cumulative}")
        lines.append(f"{self.name}_bucket{_labels_text((*pairs, ('le', '+Inf')))} {child.count}")
        lines.append(f"{self.name}_sum{_labels_text(pairs)} {_number(child.sum)}")
        lines.append(f"{self.name}_count{_labels_text(pairs)} {child.count}")
        return lines


class Registry:
    """Metric families by name. Defining a metric again with the same type and labels returns the
    existing one (several instances of a component in one process share it); anything else is an error."""

    def __init__(self) -> None:
        self._metrics: dict[str, Metric[Any]] = {}

    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        return self._define(name, Counter, labels, lambda: Counter(name, help, labels))

    def gauge(self, name: str, help: str, labels: Sequence[str] = ()) -> Gauge:
        return self._define(name, Gauge, labels, lambda: Gauge(name, help, labels))

    def histogram(
        self, name: str, help: str, labels: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS
    ) -> Histogram:
        metric = self._define(name, Histogram, labels, lambda: Histogram(name, help, labels, buckets))
        if metric.bounds != tuple(sorted(float(b) for b in buckets if not math.isinf(b))):
            raise ValueError(f"metric {name} is already defined with other buckets")
        return metric

    def _define(self, name: str, kind: type[M], labels: Sequence[str], make: Callable[[], M]) -> M:
        existing = self._metrics.get(name)
        if existing is None:
            metric = self._metrics[name] = make()
            return metric
        if not isinstance(existing, kind) or existing.label_names != tuple(labels):
            raise ValueError(
                f"metric {name} is already defined as a {existing.kind} with labels {existing.label_names}"
            )
        return existing

    def get(self, name: str) -> Metric[Any]:
        return self._metrics[name]

    def render(self) -> str:
        """The whole registry in the Prometheus text format."""
        lines = [line for name in sorted(self._metrics) for line in self._metrics[name].render()]
        return "\n".join(lines) + "\n"


_DEFAULT = Registry()


def default_registry() -> Registry:
    """The process-wide registry that run_main serves on /metrics."""
    return _DEFAULT


HealthCheck = Callable[[], Mapping[str, Any]]


class MetricsServer:
    """GET /metrics (the registry) and GET /healthz (the health callback as JSON: 200 when its "ok" is
    true, 503 otherwise) over plain HTTP/1.1 on host:port (port 0: a free one, see .port after start)."""

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
            return HTTPStatus.OK, "text/plain; version=0.0.4; charset=utf-8", self.registry.render().encode()
        if path == "/healthz":
            try:
                report = dict(self.health())
            except Exception as exc:  # a failing health check is itself a health report
                report = {"ok": False, "error": repr(exc)}
            status = HTTPStatus.OK if report.get("ok") is True else HTTPStatus.SERVICE_UNAVAILABLE
            return status, "application/json", json.dumps(report, default=str).encode() + b"\n"
        return HTTPStatus.NOT_FOUND, "text/plain", b"try /metrics or /healthz\n"
