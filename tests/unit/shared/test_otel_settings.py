"""The standard OpenTelemetry variables as lahar reads them (shared/telemetry/otel_env.py), and what
setup_tracing makes of them without a backend: the console exporter, the service name, nothing at all."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    TraceIdRatioBased,
)

from shared.telemetry.otel_env import trace_settings
from shared.telemetry.tracing import exports_traces, records_spans, setup_tracing

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}


def test_nothing_set_exports_nothing_and_an_endpoint_alone_means_otlp() -> None:
    quiet = trace_settings("binder", {})
    assert (quiet.exporters, quiet.service_name, quiet.problems) == ((), "binder", ())
    assert not exports_traces({})
    for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        settings = trace_settings("binder", {variable: "http://collector:4318/v1/traces"})
        assert (settings.exporters, settings.protocol) == (("otlp",), "http/protobuf")
    assert trace_settings("x", {**ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}).exporters == ()


def test_exporters_are_a_list_and_unknown_ones_are_named() -> None:
    settings = trace_settings("x", {"OTEL_TRACES_EXPORTER": "console, OTLP,zipkin,console"})
    assert settings.exporters == ("console", "otlp")
    (problem,) = settings.problems
    assert problem.startswith("OTEL_TRACES_EXPORTER: unknown exporter 'zipkin'") and "otlp" in problem


def test_the_traces_protocol_wins_over_the_general_one() -> None:
    env = {**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    assert trace_settings("x", env).protocol == "http/protobuf"
    assert trace_settings("x", {**env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}).protocol == "grpc"
    bad = trace_settings("x", {**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    assert bad.protocol == "http/protobuf"
    assert bad.problems[0].startswith("OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol 'http/json'")


def test_service_name_defaults_to_the_services() -> None:
    named = trace_settings("admission", {"OTEL_SERVICE_NAME": "lahar-admission"})
    assert named.service_name == "lahar-admission"
    assert trace_settings("admission", {"OTEL_SERVICE_NAME": " "}).service_name == "admission"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("always_on", ALWAYS_ON),
        ("always_off", ALWAYS_OFF),
        ("parentbased_always_on", DEFAULT_ON),
        ("parentbased_always_off", DEFAULT_OFF),
        ("", DEFAULT_ON),
    ],
)
def test_fixed_samplers(name: str, expected: object) -> None:
    settings = trace_settings("x", {"OTEL_TRACES_SAMPLER": name})
    assert settings.sampler is expected and settings.sampler_requested == bool(name)


def test_ratio_samplers_take_their_argument_and_bad_values_are_named() -> None:
    ratio = trace_settings("x", {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"})
    assert isinstance(ratio.sampler, TraceIdRatioBased) and ratio.sampler.rate == 0.25
    parent = trace_settings("x", {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio"})
    assert isinstance(parent.sampler, ParentBasedTraceIdRatio) and not parent.problems
    for bad in ("1.5", "half", "nan"):
        env = {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": bad}
        assert trace_settings("x", env).problems == (
            f"OTEL_TRACES_SAMPLER_ARG: expected a ratio from 0 to 1, got {bad!r}; using 1",
        )
    unknown = trace_settings("x", {"OTEL_TRACES_SAMPLER": "jaeger_remote"})
    assert unknown.sampler is DEFAULT_ON and "OTEL_TRACES_SAMPLER: unknown sampler" in unknown.problems[0]


def test_the_console_exporter_writes_spans_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "lahar-test"}
    provider = setup_tracing("binder", set_global=False, env=env)
    tracer = provider.get_tracer("tests")
    assert records_spans(tracer)
    with tracer.start_as_current_span("commit plan"):
        pass
    provider.shutdown()
    captured = capsys.readouterr()
    assert captured.out == ""  # a CLI's stdout is its output
    span = json.loads(captured.err)
    assert span["name"] == "commit plan" and span["resource"]["attributes"]["service.name"] == "lahar-test"


def test_none_records_nothing_unless_a_sampler_is_asked_for() -> None:
    none = setup_tracing("x", set_global=False, env={"OTEL_TRACES_EXPORTER": "none"})
    assert not records_spans(none.get_tracer("t"))
    sampled = setup_tracing("x", set_global=False, env={"OTEL_TRACES_SAMPLER": "always_on"})
    assert records_spans(sampled.get_tracer("t"))
