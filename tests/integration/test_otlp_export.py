"""Spans reach an OTLP backend over either protocol, as the standard OpenTelemetry variables say: a
receiver on loopback plays the collector, setup_tracing reads the process's environment as a service's
main does, and what arrives is decoded with opentelemetry-proto."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.otlp_receiver import OtlpGrpcReceiver, OtlpHttpReceiver, ReceivedSpan

from shared.telemetry.tracing import setup_tracing

Receiver = OtlpHttpReceiver | OtlpGrpcReceiver
RECEIVERS = {"http/protobuf": OtlpHttpReceiver, "grpc": OtlpGrpcReceiver}


@pytest.fixture(params=sorted(RECEIVERS))
def receiver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    made = RECEIVERS[request.param]()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", made.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", request.param)
    try:
        yield made
    finally:
        made.close()


def named(service: str, span: str) -> object:
    return lambda spans: any(s.service == service and s.name == span for s in spans)


def test_an_endpoint_alone_exports_spans_named_after_the_service(receiver: Receiver) -> None:
    provider = setup_tracing("binder", set_global=False)
    with provider.get_tracer("tests").start_as_current_span("commit plan", attributes={"lahar.job": "a/b"}):
        pass
    provider.force_flush()
    spans = receiver.wait_for(named("binder", "commit plan"), 10, "the binder's span")
    (span,) = spans
    assert span.attributes["lahar.job"] == "a/b" and span.parent_span_id == ""
    provider.shutdown()


def test_service_name_and_headers_come_from_the_environment(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "lahar-binder-eu")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-scope-orgid=team-a")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    provider = setup_tracing("binder", set_global=False)
    with provider.get_tracer("tests").start_as_current_span("commit plan"):
        pass
    provider.force_flush()
    receiver.wait_for(named("lahar-binder-eu", "commit plan"), 10, "the renamed service's span")
    assert receiver.headers[0]["x-scope-orgid"] == "team-a"  # Tempo's tenant header, say
    provider.shutdown()


def test_the_sampler_and_none_keep_spans_home(receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    def export_one(name: str) -> None:
        provider = setup_tracing("binder", set_global=False)
        with provider.get_tracer("tests").start_as_current_span(name):
            pass
        provider.force_flush()  # synchronous: whatever is exported has arrived when it returns
        provider.shutdown()

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    export_one("unsampled")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0")
    export_one("ratio zero")
    monkeypatch.delenv("OTEL_TRACES_SAMPLER")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    export_one("not exported")
    assert receiver.spans() == [] and receiver.requests == 0
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    export_one("exported")
    spans: list[ReceivedSpan] = receiver.wait_for(named("binder", "exported"), 10, "the exported span")
    assert [s.name for s in spans] == ["exported"]
