"""Traces of the running stack reach an OTLP backend: `lahar up` on hollow nodes with only the standard
OpenTelemetry variables set (an endpoint: a receiver on loopback standing in for a collector, Jaeger or
Tempo), a job applied with the CLI, and the spans that arrive hold one trace that goes from the user's
`lahar apply` through admission to the job-controller, each span under its own service's name."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.conftest import Stack, start_stack, stop_stack
from support.otlp_receiver import OtlpHttpReceiver, ReceivedSpan

from services.cli.stack.layout import process_alive

pytestmark = pytest.mark.slow  # a local stack of its own, and a job run to completion on it

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: traced
  annotations: {lahar.dev/sim-duration: 1s}
spec:
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - {name: main, image: busybox, resources: {requests: {cpu: 500m}}}
"""


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpHttpReceiver]:
    made = OtlpHttpReceiver()
    try:
        yield made
    finally:
        made.close()


def otel_env(receiver: OtlpHttpReceiver) -> dict[str, str]:
    # the only settings a user gives; the batch delay is shortened so that spans arrive within the test
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, receiver: OtlpHttpReceiver) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    running = start_stack(home, "--sim-nodes", "2", env=otel_env(receiver))
    try:
        yield running
    finally:
        stop_stack(running.supervisor)
        leftovers = [s.name for s in running.state.services if process_alive(s.pid)]
        assert not leftovers, f"processes left running after the stack stopped: {leftovers}"


def lahar(stack: Stack, env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "LAHAR_HOME": str(stack.home), **env},
        timeout=120,
        input=stdin,
    )
    assert result.returncode == 0, f"lahar {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


def trace_through(spans: list[ReceivedSpan], services: tuple[str, ...]) -> list[ReceivedSpan] | None:
    """The spans of the trace the CLI's `lahar apply` started, once it holds spans of every service and
    the parent of each of its spans (each service exports its spans in its own batches, so a child may
    arrive before its parent)."""
    roots = [s for s in spans if s.service == "lahar" and s.name == "lahar apply"]
    if not roots:
        return None
    trace = [s for s in spans if s.trace_id == roots[0].trace_id]
    ids = {s.span_id for s in trace}
    if any(s.parent_span_id and s.parent_span_id not in ids for s in trace):
        return None
    return trace if all(any(s.service == name for s in trace) for name in services) else None


def test_a_jobs_trace_reaches_the_backend_from_the_cli_through_admission_to_the_job_controller(
    stack: Stack, receiver: OtlpHttpReceiver, tmp_path: Path
) -> None:
    env = otel_env(receiver)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(JOB)
    lahar(stack, env, "apply", "-f", str(manifest))
    lahar(stack, {}, "wait", "job", "traced", "--for", "Completed", "--timeout", "90s")

    wanted = ("lahar", "admission", "job-controller")
    spans = receiver.wait_for(
        lambda got: trace_through(got, wanted) is not None,
        60,
        "one trace from lahar apply to the job-controller",
    )
    trace = trace_through(spans, wanted)
    assert trace is not None
    by_id = {s.span_id: s for s in trace}
    (root,) = [s for s in trace if s.parent_span_id == ""]
    assert (root.service, root.name) == ("lahar", "lahar apply")
    request = next(s for s in trace if s.service == "admission" and s.name == "admission apply")
    assert request.parent_span_id == root.span_id  # admission continues the CLI's span
    assert request.attributes.get("lahar.job") == "default/traced"
    # the job-controller's work on the job is a descendant of admission's request
    worked = [s for s in trace if s.service == "job-controller" and not s.name.startswith("apply ")]
    assert worked, f"no job-controller work in the trace: {sorted({(s.service, s.name) for s in trace})}"

    def ancestors(span: ReceivedSpan) -> list[str]:
        chain = []
        while span.parent_span_id in by_id:
            span = by_id[span.parent_span_id]
            chain.append(span.service)
        return chain

    assert all("admission" in ancestors(s) for s in worked)
    # every service is named after itself: the stack's processes all inherit the same environment
    services = {s.service for s in spans}
    assert {"admission", "job-controller", "scheduler", "binder", "node-agent"} <= services, services
