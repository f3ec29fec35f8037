"""Tiny OTLP receivers for tests: what an OpenTelemetry collector, Jaeger or Tempo would be, on loopback.

`OtlpHttpReceiver` takes OTLP/HTTP protobuf (POST /v1/traces, gzip or not), `OtlpGrpcReceiver` OTLP/gRPC
(TraceService/Export); both decode the ExportTraceServiceRequest with the opentelemetry-proto package that
comes with the exporter and keep every span with its resource's service.name. `wait_for` waits on a
condition variable the receiver notifies at every export, never by sleeping.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str  # "" for a root span
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)


_SCALARS = ("string_value", "bool_value", "int_value", "double_value")


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in _SCALARS else None


def decode_request(body: bytes) -> list[ReceivedSpan]:
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        service=str(resource.get("service.name", "")),
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={kv.key: _value(kv.value) for kv in span.attributes},
                        resource=resource,
                    )
                )
    return spans


class _Collected:
    def __init__(self) -> None:
        self._spans: list[ReceivedSpan] = []
        self._changed = threading.Condition()
        self.requests = 0
        self.headers: list[dict[str, str]] = []

    def add(self, spans: list[ReceivedSpan], headers: dict[str, str]) -> None:
        with self._changed:
            self._spans.extend(spans)
            self.requests += 1
            self.headers.append(headers)
            self._changed.notify_all()

    def spans(self) -> list[ReceivedSpan]:
        with self._changed:
            return list(self._spans)

    def wait_for(
        self, check: Callable[[list[ReceivedSpan]], bool], timeout_s: float, what: str
    ) -> list[ReceivedSpan]:
        """The spans received once check(spans) holds; AssertionError naming `what` after timeout_s."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not check(self._spans):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    got = sorted({(s.service, s.name) for s in self._spans})
                    raise AssertionError(f"timed out waiting for {what}; received {got}")
                self._changed.wait(remaining)
            return list(self._spans)


class OtlpHttpReceiver(_Collected):
    def __init__(self) -> None:
        super().__init__()
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != TRACES_PATH:
                    self.send_response(404)
                    self.end_headers()
                    return
                received.add(decode_request(body), {k.lower(): v for k, v in self.headers.items()})
                reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (the exporter adds /v1/traces)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class OtlpGrpcReceiver(_Collected):
    def __init__(self) -> None:
        super().__init__()
        received = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                metadata = {k: v for k, v in context.invocation_metadata()}
                received.add(decode_request(request.SerializeToString()), metadata)
                return trace_service_pb2.ExportTraceServiceResponse()

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self._server)
        self._port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def close(self) -> None:
        self._server.stop(grace=None)
