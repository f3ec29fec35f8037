"""Telemetry for every service: JSON logs (logs), OpenTelemetry traces (tracing), Prometheus metrics and
the /metrics + /healthz endpoint (metrics).

Import from the submodules; this module imports nothing, so that using one part does not load the others
(the tracing SDK in particular).
"""
