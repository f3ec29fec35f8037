"""Telemetry: the Prometheus text format, the /metrics + /healthz endpoint, JSON logs carrying the
current span, and W3C trace context carried by envelopes."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import math
from collections.abc import Iterator
from typing import Any

import prometheus_client
import pytest
import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.metrics_core import Metric

from shared.bus.envelope import Envelope
from shared.telemetry.logs import setup_logging
from shared.telemetry.metrics import (
    MetricsServer,
    Registry,
    default_registry,
    exponential_buckets,
    exponential_buckets_range,
)
from shared.telemetry.tracing import (
    JOB_ATTRIBUTE,
    POD_ATTRIBUTE,
    extract_context,
    records_spans,
    setup_tracing,
    trace_fields,
    trace_headers,
)


def test_counters_and_gauges_render_in_the_text_format() -> None:
    registry = Registry()
    scheduled = registry.counter("volcano_schedule_attempts_total", "Scheduling attempts", ("result",))
    scheduled.labels("scheduled").inc(3)
    scheduled.labels(result="error").inc()
    registry.gauge("volcano_unschedule_job_count", "Jobs that could not be scheduled").set(2.5)
    registry.gauge("lahar_odd_label", "help with \\ and\nnewline", ("v",)).labels('a"b\\c\nd').set(-1)
    assert registry.render() == (
        "# HELP volcano_schedule_attempts_total Scheduling attempts\n"
        "# TYPE volcano_schedule_attempts_total counter\n"
        'volcano_schedule_attempts_total{result="scheduled"} 3.0\n'
        'volcano_schedule_attempts_total{result="error"} 1.0\n'
        "# HELP volcano_unschedule_job_count Jobs that could not be scheduled\n"
        "# TYPE volcano_unschedule_job_count gauge\n"
        "volcano_unschedule_job_count 2.5\n"
        "# HELP lahar_odd_label help with \\\\ and\\nnewline\n"
        "# TYPE lahar_odd_label gauge\n"
        'lahar_odd_label{v="a\\"b\\\\c\\nd"} -1.0\n'
    )


def test_a_counter_not_named_total_keeps_its_name() -> None:
    """Volcano's volcano_job_retry_counts: prometheus-client would expose it as ..._counts_total."""
    registry = Registry()
    retries = registry.counter("volcano_job_retry_counts", "Retries", ("job_id",))
    retries.labels("ns/a").inc(2)
    assert registry.render() == (
        "# HELP volcano_job_retry_counts Retries\n"
        "# TYPE volcano_job_retry_counts untyped\n"
        'volcano_job_retry_counts{job_id="ns/a"} 2.0\n'
    )
    assert retries.labels("ns/a").value == 2
    retries.remove("ns/a")
    assert "ns/a" not in registry.render()


def test_scraped_families_read_their_sources_at_each_scrape() -> None:
    registry = Registry()
    shares = {"q1": 0.5}
    family = registry.scraped("volcano_queue_share", "Share", ("queue_name",))
    family.source(lambda: [((q,), v) for q, v in shares.items()])
    assert registry.scraped("volcano_queue_share", "Share", ("queue_name",)) is family
    assert 'volcano_queue_share{queue_name="q1"} 0.5' in registry.render()
    shares = {"q2": 1.0}
    text = registry.render()
    assert 'volcano_queue_share{queue_name="q2"} 1.0' in text and "q1" not in text
    registry.scraped("lahar_things_total", "Things", kind="counter").source(lambda: [((), 3)])
    assert "# TYPE lahar_things_total counter\nlahar_things_total 3.0\n" in registry.render()
    with pytest.raises(ValueError, match="scraped gauge"):
        registry.scraped("volcano_queue_share", "Share", ("queue_name",), kind="counter")


HELP = 'help with \\ and\nnewline "quoted"'


class _AsPrometheusClientWrites:
    """The rows of a scraped family as prometheus-client's own samples, for its generate_latest."""

    def __init__(self, name: str, help: str, labels: tuple[str, ...], kind: str, rows: list[Any]) -> None:
        self.args = (name, help, labels, kind, rows)

    def collect(self) -> Iterator[Any]:
        name, help, labels, kind, rows = self.args
        if kind == "counter" and name.endswith("_total"):
            family = Metric(name[: -len("_total")], help, "counter")
        else:
            family = Metric(name, help, "gauge" if kind == "gauge" else "unknown")
        for values, value in rows:
            family.add_sample(name, dict(zip(labels, values, strict=True)), value)
        yield family


@pytest.mark.parametrize(
    ("name", "kind"),
    [("lahar_node_allocated", "gauge"), ("lahar_things_total", "counter"), ("volcano_job_counts", "counter")],
)
def test_a_scraped_family_is_written_as_prometheus_client_writes_its_rows(name: str, kind: str) -> None:
    labels = ("resource", "node")  # not in name order: prometheus-client sorts them
    rows = [
        (("cpu", "node-1"), 2.5),
        (("memory", 'odd"\\name\n'), 8589934592.0),
        (("pods", "node-2"), 0),
        (("gpu", "node-3"), math.inf),
        (("disk", "node-4"), -math.inf),
        (("net", "node-5"), 1e-7),
    ]
    registry = Registry()
    registry.scraped(name, HELP, labels, kind).source(lambda: rows)
    ours = registry.render()
    expected = prometheus_client.generate_latest(
        _AsPrometheusClientWrites(name, HELP, labels, kind, rows)
    ).decode()
    assert ours == expected
    assert registry.render() == expected  # the second scrape, from the lines kept
    # values changed, a row gone and a new one: each line is written again from what it says now
    rows[0] = (("cpu", "node-1"), 3.0)
    rows[1] = (("memory", 'odd"\\name\n'), 1.5)
    rows[2] = (("pods", "node-9"), 7)
    expected = prometheus_client.generate_latest(
        _AsPrometheusClientWrites(name, HELP, labels, kind, rows)
    ).decode()
    assert registry.render() == expected
    nan = Registry()
    nan.scraped("lahar_nan", "", ()).source(lambda: [((), math.nan)])
    assert nan.render().endswith("\nlahar_nan NaN\n")


def test_the_process_wide_registry_has_the_process_metrics() -> None:
    text = default_registry().render()
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "python_info"):
        assert f"\n{name}" in text, name
    assert "_created" not in text


def test_histograms_render_cumulative_buckets() -> None:
    registry = Registry()
    latency = registry.histogram(
        "volcano_e2e_scheduling_latency_milliseconds",
        "Session latency",
        buckets=exponential_buckets(1, 10, 3),
    )
    for value in (0.5, 5, 7, 5000):
        latency.observe(value)
    assert registry.render().splitlines()[2:] == [
        'volcano_e2e_scheduling_latency_milliseconds_bucket{le="1.0"} 1.0',
        'volcano_e2e_scheduling_latency_milliseconds_bucket{le="10.0"} 3.0',
        'volcano_e2e_scheduling_latency_milliseconds_bucket{le="100.0"} 3.0',
        'volcano_e2e_scheduling_latency_milliseconds_bucket{le="+Inf"} 4.0',
        "volcano_e2e_scheduling_latency_milliseconds_count 4.0",
        "volcano_e2e_scheduling_latency_milliseconds_sum 5012.5",
    ]
    assert latency.count == 4
    per_action = registry.histogram("volcano_action_scheduling_latency_milliseconds", "", ("action",), (1.0,))
    per_action.labels("allocate").observe(2)
    assert (
        'volcano_action_scheduling_latency_milliseconds_bucket{action="allocate",le="+Inf"} 1.0'
        in registry.render()
    )


def test_volcanos_bucket_ranges() -> None:
    """Go's ExponentialBucketsRange(1, 5000, 20), Volcano's session latency buckets."""
    buckets = exponential_buckets_range(1, 5000, 20)
    assert len(buckets) == 20 and buckets[0] == 1 and math.isclose(buckets[-1], 5000)
    assert math.isclose(buckets[1] / buckets[0], buckets[-1] / buckets[-2])


@pytest.mark.parametrize(
    ("define", "error"),
    [
        (lambda r: r.counter("bad name", ""), "invalid metric name"),
        (lambda r: r.counter("ok", "", ("bad-label",)), "invalid label name"),
        (lambda r: r.histogram("h", "", ("le",)), "reserved"),
        (lambda r: r.gauge("lahar_x_total", ""), "already defined as a counter"),
        (lambda r: r.counter("lahar_x_total", "", ("other",)), "already defined"),
        (lambda r: r.counter("lahar_x_total", "", ("kind",)).labels("a", "b"), "Incorrect label count"),
        (lambda r: r.counter("lahar_x_total", "", ("kind",)).labels(wrong="a"), "Incorrect label names"),
        (lambda r: r.counter("lahar_x_total", "", ("kind",)).labels("a").inc(-1), "non-negative"),
        (lambda r: r.histogram("lahar_h", "", (), (1.0, 1.0)), "distinct"),
        (lambda r: exponential_buckets(0, 2, 3), "start > 0"),
        (lambda r: exponential_buckets_range(5, 1, 3), "0 < low < high"),
    ],
)
def test_invalid_definitions_are_refused(define: Any, error: str) -> None:
    registry = Registry()
    registry.counter("lahar_x_total", "", ("kind",))
    with pytest.raises(ValueError, match=error):
        define(registry)


def test_defining_a_metric_again_returns_the_same_one() -> None:
    registry = Registry()
    first = registry.counter("lahar_events_total", "Events", ("service",))
    first.labels("a").inc()
    assert registry.counter("lahar_events_total", "Events", ("service",)) is first
    assert registry.get("lahar_events_total").labels("a").value == 1  # type: ignore[union-attr]


async def http_get(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return int(status_line.split()[1]), headers, body


async def test_the_endpoint_serves_metrics_and_health() -> None:
    registry = Registry()
    registry.counter("lahar_requests_total", "Requests").inc()
    health: dict[str, Any] = {"ok": True, "seq": 7}
    server = MetricsServer(registry, lambda: health)
    await server.start()
    try:
        assert server.port > 0
        status, headers, body = await http_get(server.port, "/metrics")
        assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert b"lahar_requests_total 1.0\n" in body
        assert int(headers["Content-Length"]) == len(body)

        status, headers, body = await http_get(server.port, "/healthz?verbose=1")
        assert (status, headers["Content-Type"], json.loads(body)) == (200, "application/json", health)
        health["ok"] = False
        status, _, body = await http_get(server.port, "/healthz")
        assert (status, json.loads(body)["ok"]) == (503, False)

        assert (await http_get(server.port, "/nope"))[0] == 404
        assert (await http_get(server.port, "/metrics", "POST"))[0] == 405
        status, _, body = await http_get(server.port, "/metrics", "HEAD")
        assert (status, body) == (200, b"")
    finally:
        await server.close()


async def test_a_failing_health_check_reports_unhealthy() -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("nats gone")

    server = MetricsServer(Registry(), broken)
    await server.start()
    try:
        status, _, body = await http_get(server.port, "/healthz")
        assert status == 503 and "nats gone" in json.loads(body)["error"]
    finally:
        await server.close()


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    setup_logging("binder", level="info", stream=stream)
    yield stream
    structlog.reset_defaults()
    root.handlers, root.level = saved[0], saved[1]


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_logs_are_json_lines_with_the_current_span(log_stream: io.StringIO) -> None:
    tracer = setup_tracing("binder", InMemorySpanExporter(), set_global=False).get_tracer("tests")
    log = structlog.get_logger("tests")
    log.info("outside any span", plan="p1")
    log.debug("below the level")
    with tracer.start_as_current_span(
        "bind", attributes={JOB_ATTRIBUTE: "default/train", POD_ATTRIBUTE: "default/train-0"}
    ) as span:
        log.warning("bound", node="n1")
        logging.getLogger("nats.aio.client").error("library message %s", "via stdlib")
    first, second, third = lines(log_stream)
    assert {k: first[k] for k in ("event", "level", "service", "plan")} == {
        "event": "outside any span",
        "level": "info",
        "service": "binder",
        "plan": "p1",
    }
    assert "timestamp" in first and "trace_id" not in first
    ctx = span.get_span_context()
    expected = {
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "job": "default/train",
        "pod": "default/train-0",
        "service": "binder",
    }
    assert {k: second[k] for k in expected} == expected and second["level"] == "warning"
    assert {k: third[k] for k in expected} == expected
    assert (third["event"], third["level"], third["logger"]) == (
        "library message via stdlib",
        "error",
        "nats.aio.client",
    )


def test_explicit_context_wins_over_the_span(log_stream: io.StringIO) -> None:
    tracer = setup_tracing("binder", InMemorySpanExporter(), set_global=False).get_tracer("tests")
    with tracer.start_as_current_span("x", attributes={JOB_ATTRIBUTE: "a/b"}):
        structlog.contextvars.bind_contextvars(pod="ns/p")
        try:
            structlog.get_logger().info("hello", job="explicit")
        finally:
            structlog.contextvars.clear_contextvars()
    (line,) = lines(log_stream)
    assert (line["job"], line["pod"]) == ("explicit", "ns/p")


def test_an_envelope_carries_the_producers_span_to_the_consumer() -> None:
    exporter = InMemorySpanExporter()
    tracer = setup_tracing("admission", exporter, set_global=False).get_tracer("tests")
    assert trace_headers() == {} and trace_fields() == {"traceparent": None, "tracestate": None}
    with tracer.start_as_current_span("accept") as producer:
        env = Envelope.create(
            "JobDeleted", time=1.0, producer="admission", correlation_id="ns/j", **trace_fields()
        )
        headers = trace_headers()
    decoded = Envelope.decode(env.encode())
    assert headers["traceparent"] == decoded.traceparent
    for carrier in (decoded, headers):
        with tracer.start_as_current_span("consume", context=extract_context(carrier)) as consumer:
            pass
        assert consumer.get_span_context().trace_id == producer.get_span_context().trace_id
        assert consumer.parent is not None and consumer.parent.span_id == producer.get_span_context().span_id
    resource = exporter.get_finished_spans()[0].resource.attributes
    assert resource["service.name"] == "admission"


def test_missing_or_invalid_context_starts_a_new_trace() -> None:
    tracer = setup_tracing("x", InMemorySpanExporter(), set_global=False).get_tracer("tests")
    for carrier in ({}, {"traceparent": "garbage"}, object()):
        with tracer.start_as_current_span("root", context=extract_context(carrier)) as span:
            assert span.parent is None
    assert not trace.get_current_span().get_span_context().is_valid


def test_without_an_exporter_spans_are_not_recorded_but_trace_ids_flow() -> None:
    unexported = setup_tracing("binder", set_global=False, env={}).get_tracer("tests")
    assert not records_spans(unexported)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with unexported.start_as_current_span("bind", context=extract_context({"traceparent": parent})) as span:
        assert not span.is_recording()
        assert trace_headers()["traceparent"].split("-")[1] == "0af7651916cd43dd8448eb211c80319c"
    with unexported.start_as_current_span("root"):
        assert len(trace_headers()["traceparent"].split("-")[1]) == 32  # a new trace, still with an id
    # an exporter, or a sampler asked for, records
    assert records_spans(setup_tracing("binder", InMemorySpanExporter(), set_global=False).get_tracer("t"))
    sampled = setup_tracing("binder", set_global=False, env={"OTEL_TRACES_SAMPLER": "always_on"})
    assert records_spans(sampled.get_tracer("t"))
