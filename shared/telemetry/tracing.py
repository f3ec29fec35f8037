"""OpenTelemetry tracing: per-service SDK setup and W3C trace context on the bus.

A job's trace spans every service because the context travels with each event: the producer puts its
current span into the envelope's traceparent/tracestate (and the NATS headers, see shared.bus), and the
consumer starts its span with extract_context(envelope) as parent.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any, TypedDict

import structlog
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = structlog.get_logger(__name__)

# Span attributes naming the job and pod a span works on; the log processor copies them into log lines.
JOB_ATTRIBUTE = "lahar.job"
POD_ATTRIBUTE = "lahar.pod"

_PROPAGATOR = TraceContextTextMapPropagator()
_OTLP_EXPORTERS = {
    "http/protobuf": "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "grpc": "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
}


def setup_tracing(
    service_name: str,
    exporter: SpanExporter | None = None,
    *,
    set_global: bool = True,
    env: Mapping[str, str] = os.environ,
) -> TracerProvider:
    """A tracer provider whose spans carry resource service.name = service_name.

    With an exporter (tests pass an InMemorySpanExporter), spans are exported synchronously as they end.
    Otherwise, if OTEL_EXPORTER_OTLP_ENDPOINT is set and the OTLP exporter package is installed, spans are
    batched to it; else they are not exported, and not recorded either unless OTEL_TRACES_SAMPLER asks:
    a recorded span costs tens of microseconds and every event makes several. Unrecorded spans still
    carry trace ids, so a job's events keep one trace id across services and the logs show it. set_global
    installs the provider for trace.get_tracer(); OpenTelemetry allows that once per process.
    """
    resource = Resource.create({SERVICE_NAME: service_name})
    otlp = _otlp_exporter(env) if exporter is None else None
    if exporter is None and otlp is None and not env.get("OTEL_TRACES_SAMPLER"):
        provider = TracerProvider(resource=resource, sampler=ALWAYS_OFF)
    else:
        provider = TracerProvider(resource=resource)
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif otlp is not None:
        provider.add_span_processor(BatchSpanProcessor(otlp))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider


def _otlp_exporter(env: Mapping[str, str]) -> SpanExporter | None:
    if not env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    protocol = env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    module_name = _OTLP_EXPORTERS.get(protocol)
    if module_name is None:
        log.warning("unknown OTLP protocol, traces are not exported", protocol=protocol)
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but no OTLP exporter is installed; traces are not exported",
            package=module_name,
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
