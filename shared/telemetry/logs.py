"""Structured logs: one JSON object per line on stderr, for structlog and the standard library alike.

Every line carries timestamp, level, service, and, when logged inside a span, trace_id and span_id plus
the job and pod the span is about (its lahar.job / lahar.pod attributes), so a job's lines can be found
across services and joined with its trace. Values bound with structlog.contextvars are merged in too.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from opentelemetry import trace
from structlog.typing import EventDict, Processor, WrappedLogger

from shared.telemetry.tracing import JOB_ATTRIBUTE, POD_ATTRIBUTE

_SPAN_ATTRIBUTES = (("job", JOB_ATTRIBUTE), ("pod", POD_ATTRIBUTE))


def add_trace_context(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: trace_id, span_id, job and pod from the current OpenTelemetry span."""
    span = trace.get_current_span()
    ctx = span.get_span_context()
    if not ctx.is_valid:
        return event_dict
    event_dict.setdefault("trace_id", format(ctx.trace_id, "032x"))
    event_dict.setdefault("span_id", format(ctx.span_id, "016x"))
    # SDK spans expose their attributes; a non-recording span has none to offer.
    attributes = getattr(span, "attributes", None) or {}
    for key, attribute in _SPAN_ATTRIBUTES:
        value = attributes.get(attribute)
        if value is not None:
            event_dict.setdefault(key, value)
    return event_dict


def _add_service(service: str) -> Processor:
    def add(_logger: WrappedLogger, _method: str, event_dict: MutableMapping[str, Any]) -> EventDict:
        event_dict.setdefault("service", service)
        return event_dict

    return add


def setup_logging(service: str, *, level: str = "info", stream: TextIO | None = None) -> None:
    """Configure structlog and the standard library's root logger to write JSON lines to stream
    (default: stderr) at level and above."""
    out = stream if stream is not None else sys.stderr
    levelno = logging.getLevelNamesMapping()[level.upper()]
    common: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
        _add_service(service),
        add_trace_context,
        structlog.processors.format_exc_info,
    ]
    structlog.configure(
        processors=[*common, structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(levelno),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        # Modules create their loggers at import, before this runs: they must pick the configuration up.
        cache_logger_on_first_use=False,
    )
    # Libraries (nats-py, grpc, asyncio) log through the standard library: same format, same stream.
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*common, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(levelno)
