"""OpenTelemetry tracing: per-service SDK setup and W3C trace context on the bus.

A job's trace spans every service because the context travels with each event: the producer puts its
current span into the envelope's traceparent/tracestate (and the NATS headers, see shared.bus), and the
consumer starts its span with extract_context(envelope) as parent.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import Any, TypedDict

import structlog
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from shared.telemetry.otel_env import CONSOLE, GRPC, HTTP_PROTOBUF, OTLP, trace_settings

log = structlog.get_logger(__name__)

# Span attributes naming the job and pod a span works on; the log processor copies them into log lines.
JOB_ATTRIBUTE = "lahar.job"
POD_ATTRIBUTE = "lahar.pod"

_PROPAGATOR = TraceContextTextMapPropagator()
# the module of each OTLP protocol's span exporter, and the package that ships it
_OTLP_EXPORTERS = {
    HTTP_PROTOBUF: (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "opentelemetry-exporter-otlp-proto-http",
    ),
    GRPC: ("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "opentelemetry-exporter-otlp-proto-grpc"),
}


def setup_tracing(
    service_name: str,
    exporter: SpanExporter | None = None,
    *,
    set_global: bool = True,
    env: Mapping[str, str] = os.environ,
) -> TracerProvider:
    """A tracer provider whose spans carry resource service.name = OTEL_SERVICE_NAME, else service_name.

    With an exporter (tests pass an InMemorySpanExporter), spans are exported synchronously as they end.
    Otherwise the standard OpenTelemetry variables choose (shared/telemetry/otel_env.py): OTLP (batched,
    to OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT over http/protobuf or grpc) and/or the console (stderr, as
    they end), sampled by OTEL_TRACES_SAMPLER. With nothing to export, spans are not recorded either
    unless OTEL_TRACES_SAMPLER asks: a recorded span costs tens of microseconds and every event makes
    several. Unrecorded spans still carry trace ids, so a job's events keep one trace id across services
    and the logs show it. set_global installs the provider for trace.get_tracer(); OpenTelemetry allows
    that once per process.
    """
    settings = trace_settings(service_name, env)
    for problem in settings.problems:
        log.warning("tracing setting ignored", problem=problem)
    resource = Resource.create({SERVICE_NAME: settings.service_name})
    processors: list[SpanProcessor] = []
    if exporter is not None:
        processors.append(SimpleSpanProcessor(exporter))
    else:
        if OTLP in settings.exporters and (otlp := _otlp_exporter(settings.protocol)) is not None:
            processors.append(BatchSpanProcessor(otlp))
        if CONSOLE in settings.exporters:
            # stderr: a CLI's stdout is its output, and a service's goes to the same log file anyway
            processors.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    records = bool(processors) or settings.sampler_requested
    provider = TracerProvider(resource=resource, sampler=settings.sampler if records else ALWAYS_OFF)
    for processor in processors:
        provider.add_span_processor(processor)
    if set_global:
        trace.set_tracer_provider(provider)
    return provider


def exports_traces(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces to be exported (so that a short-lived process, the CLI,
    sets tracing up only then)."""
    return trace_settings("", env).exports


def _otlp_exporter(protocol: str) -> SpanExporter | None:
    module_name, package = _OTLP_EXPORTERS[protocol]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        log.warning(
            "OTLP export asked for but its exporter is not installed; traces are not exported",
            package=package,
        )
        return None
    exporter: SpanExporter = module.OTLPSpanExporter()  # reads the endpoint and headers from the environment
    return exporter


def records_spans(tracer: trace.Tracer) -> bool:
    """Whether the tracer can record spans at all. When it cannot (no exporter, see setup_tracing), hot
    paths pass the trace context along themselves instead of making spans nobody will see."""
    if isinstance(tracer, trace.NoOpTracer):
        return False
    return getattr(tracer, "sampler", None) is not ALWAYS_OFF


def trace_headers(context: Context | None = None) -> dict[str, str]:
    """The W3C trace context (traceparent, and tracestate if any) of context or the current span, as NATS
    headers for a request; empty when there is no span."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=context)
    return carrier


class TraceFields(TypedDict):
    """An event's trace context, as Envelope.create's keyword arguments of the same names."""

    traceparent: str | None
    tracestate: str | None


def trace_fields(context: Context | None = None) -> TraceFields:
    """traceparent and tracestate (None when absent) of context or the current span: keyword arguments
    for Envelope.create, so the event carries its producer's span."""
    headers = trace_headers(context)
    return {"traceparent": headers.get("traceparent"), "tracestate": headers.get("tracestate")}


def extract_context(source: Mapping[str, str] | Any) -> Context:
    """The trace context carried by NATS headers (a mapping) or by an object with traceparent/tracestate
    attributes (an Envelope, a runner Event). Use it as the parent of the consumer's span; an empty or
    invalid context makes that span a new root."""
    if isinstance(source, Mapping):
        carrier = {k: v for k, v in source.items() if k in ("traceparent", "tracestate")}
    else:
        carrier = {
            key: value
            for key in ("traceparent", "tracestate")
            if isinstance(value := getattr(source, key, None), str)
        }
    return _PROPAGATOR.extract(carrier)
