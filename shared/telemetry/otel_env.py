"""The standard OpenTelemetry environment variables, read into what a process's tracing should be.

Pure: the environment is a mapping, every bad value becomes a problem naming the variable (the caller logs
it and goes on, as OpenTelemetry's specification asks: a bad setting never stops a service).

- OTEL_TRACES_EXPORTER: comma-separated `otlp`, `console`, `none`. Unset, it is `otlp` when an OTLP
  endpoint is set and `none` otherwise (the specification's default is `otlp`, but most machines have no
  collector on localhost, and every export would then fail and log).
- OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf` (default) or
  `grpc`. The endpoint, headers, timeout, compression and certificate variables are read by the exporter
  itself.
- OTEL_SERVICE_NAME: the resource's service.name; default: the name the process passes (the service's).
- OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG: `always_on`, `always_off`, `traceidratio`,
  `parentbased_always_on` (default), `parentbased_always_off`, `parentbased_traceidratio`; the argument
  is the ratio, 0 to 1 (default 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)

OTLP = "otlp"
CONSOLE = "console"
NONE = "none"
EXPORTERS = (OTLP, CONSOLE, NONE)
HTTP_PROTOBUF = "http/protobuf"
GRPC = "grpc"
PROTOCOLS = (HTTP_PROTOBUF, GRPC)
SAMPLERS = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


@dataclass(frozen=True, slots=True)
class TraceSettings:
    service_name: str
    exporters: tuple[str, ...]  # otlp and/or console, each once; empty: nothing is exported
    protocol: str  # the OTLP exporter's protocol
    sampler: Sampler  # what decides which traces are recorded when something exports them
    sampler_requested: bool  # OTEL_TRACES_SAMPLER was set: record spans even with nothing to export
    problems: tuple[str, ...] = ()  # one sentence per bad variable, naming it and what it accepts

    @property
    def exports(self) -> bool:
        return bool(self.exporters)


def trace_settings(default_service_name: str, env: Mapping[str, str]) -> TraceSettings:
    problems: list[str] = []
    exporters = _exporters(env, problems)
    protocol = _protocol(env, problems) if OTLP in exporters else HTTP_PROTOBUF
    sampler = _sampler(env, problems)
    return TraceSettings(
        service_name=env.get("OTEL_SERVICE_NAME", "").strip() or default_service_name,
        exporters=exporters,
        protocol=protocol,
        sampler=sampler,
        sampler_requested=bool(env.get("OTEL_TRACES_SAMPLER", "").strip()),
        problems=tuple(problems),
    )


def _exporters(env: Mapping[str, str], problems: list[str]) -> tuple[str, ...]:
    raw = env.get("OTEL_TRACES_EXPORTER", "").strip()
    if not raw:
        return (OTLP,) if any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES) else ()
    chosen: list[str] = []
    for name in (part.strip().lower() for part in raw.split(",")):
        if name not in EXPORTERS:
            problems.append(
                f"OTEL_TRACES_EXPORTER: unknown exporter {name!r} ignored (known: {', '.join(EXPORTERS)})"
            )
        elif name != NONE and name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def _protocol(env: Mapping[str, str], problems: list[str]) -> str:
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(variable, "").strip()
        if not value:
            continue
        if value in PROTOCOLS:
            return value
        problems.append(
            f"{variable}: unsupported protocol {value!r}, using {HTTP_PROTOBUF} "
            f"(supported: {', '.join(PROTOCOLS)})"
        )
        return HTTP_PROTOBUF
    return HTTP_PROTOBUF


def _sampler(env: Mapping[str, str], problems: list[str]) -> Sampler:
    name = env.get("OTEL_TRACES_SAMPLER", "").strip().lower() or "parentbased_always_on"
    if name not in SAMPLERS:
        problems.append(
            f"OTEL_TRACES_SAMPLER: unknown sampler {name!r}, using parentbased_always_on "
            f"(known: {', '.join(SAMPLERS)})"
        )
        return DEFAULT_ON
    fixed: dict[str, Sampler] = {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "parentbased_always_on": DEFAULT_ON,
        "parentbased_always_off": DEFAULT_OFF,
    }
    if name in fixed:
        return fixed[name]
    ratio = _ratio(env.get("OTEL_TRACES_SAMPLER_ARG", "").strip(), problems)
    return TraceIdRatioBased(ratio) if name == "traceidratio" else ParentBasedTraceIdRatio(ratio)


def _ratio(text: str, problems: list[str]) -> float:
    if not text:
        return 1.0
    try:
        ratio = float(text)
    except ValueError:
        ratio = math.nan
    if not 0.0 <= ratio <= 1.0:  # NaN fails too
        problems.append(f"OTEL_TRACES_SAMPLER_ARG: expected a ratio from 0 to 1, got {text!r}; using 1")
        return 1.0
    return ratio
