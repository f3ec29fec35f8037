"""The CLI's own span: when the environment asks for traces (shared/telemetry/otel_env.py), a command that
talks to the cluster runs inside a span `lahar <command>` of service `lahar`, so a request's trace starts
at the user's command and goes on through admission and every service after it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from shared.telemetry.tracing import exports_traces, setup_tracing

CLI_SERVICE_NAME = "lahar"


@contextlib.contextmanager
def traced_command(command: str) -> Iterator[Span]:
    """The command's span (a non-recording one when nothing is exported: then this costs nothing). The
    provider is flushed before the command returns: the process ends right after."""
    if not exports_traces():
        yield trace.INVALID_SPAN
        return
    provider = setup_tracing(CLI_SERVICE_NAME, set_global=False)
    try:
        tracer = provider.get_tracer("lahar.cli")
        with tracer.start_as_current_span(f"lahar {command}", kind=SpanKind.CLIENT) as span:
            yield span
    finally:
        provider.shutdown()
