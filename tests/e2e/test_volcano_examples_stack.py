"""Volcano's example directory on the running stack, as a Volcano user tries it: hollow nodes described
by examples/volcano/lahar-nodes.yaml (`lahar up --sim-nodes-file`, a GPU node among them), every example
file of a kind lahar reads applied unchanged with `lahar apply` (with --validate=warn where a file has a
field no API knows, tests/support/volcano_typos.py), every Job waited for to Completed.
Examples that share a name (Volcano's four `lm-mpi-job`s, two `high-pri` priority classes) run in
later waves, after the earlier ones are deleted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support.volcano_typos import needs_warn

from contracts.parse import SUPPORTED_KINDS
from tests.e2e.conftest import Stack, start_stack, stop_stack

pytestmark = pytest.mark.slow  # a stack of its own and some twenty jobs run to completion on it

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "volcano"
NODES = EXAMPLES / "lahar-nodes.yaml"
TIME_SCALE = "0.02"  # a hollow pod "runs" 60 s (Volcano's examples say nothing shorter): 1.2 s here
# the kinds a wave deletes before the next reuses their names, in the order they go
DELETED_BETWEEN_WAVES = ("Job", "PriorityClass")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    running = start_stack(home, "--sim-nodes-file", str(NODES), env={"LAHAR_TIME_SCALE": TIME_SCALE})
    try:
        yield running
    finally:
        stop_stack(running.supervisor)


Names = set[tuple[str, str, str]]


def names(path: Path) -> Names:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return {(d["kind"], d["metadata"].get("namespace", "default"), d["metadata"]["name"]) for d in docs}


def waves() -> list[list[Path]]:
    """The example files in waves, each wave free of names taken by an earlier one still there; queues
    first in their wave (the jobs submit to them), then priority classes, then the rest."""
    files = [
        p
        for p in sorted(EXAMPLES.rglob("*.yaml"))
        if "invalid_jobs" not in p.parts and p != NODES and {k for k, _, _ in names(p)} <= SUPPORTED_KINDS
    ]
    order = {"Queue": 0, "PriorityClass": 1}
    files.sort(key=lambda p: min(order.get(kind, 2) for kind, _, _ in names(p)))
    placed: list[tuple[list[Path], Names]] = []
    for path in files:
        wave = next((w for w in placed if not (w[1] & names(path))), None)
        if wave is None:
            wave = ([], set())
            placed.append(wave)
        wave[0].append(path)
        wave[1].update(names(path))
    return [files_of_wave for files_of_wave, _ in placed]


def test_every_volcano_example_job_completes_on_hollow_nodes(stack: Stack) -> None:
    planned = waves()
    assert len(planned) >= 2  # the shared names do need waves
    completed: list[str] = []
    for wave in planned:
        paths = [str(p) for p in wave]
        warn = needs_warn([p.relative_to(EXAMPLES).as_posix() for p in wave])
        flags = ("--validate=warn",) if warn else ()
        applied = stack.lahar("apply", *(a for p in paths for a in ("-f", p)), *flags, "-o", "json")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        jobs = sorted(name for p in wave for kind, _, name in names(p) if kind == "Job")
        for job in jobs:
            waited = stack.lahar("wait", "job", job, "--for", "Completed", "--timeout", "120s", timeout_s=150)
            assert waited.returncode == 0, f"{job}: {waited.stdout}{waited.stderr}"
            completed.append(job)
            events = history(stack, job)
            bound = {e["object"]: e["payload"]["node"] for e in events if e["type"] == "PodBound"}
            assert bound, f"{job}: no pod was bound"
            if job == "mindspore-gpu":  # its workers ask for GPUs under limits only, as Kubernetes allows
                workers = {pod: node for pod, node in bound.items() if "-mpiworker-" in pod}
                assert len(workers) == 2 and set(workers.values()) == {"gpu-0"}, bound
        for kind in DELETED_BETWEEN_WAVES:
            for name in sorted({n for p in wave for k, _, n in names(p) if k == kind}):
                deleted = stack.lahar("delete", kind.lower(), name, "-o", "json")
                assert json.loads(deleted.stdout)["accepted"], deleted.stdout + deleted.stderr
        for job in jobs:
            gone = stack.lahar("wait", "job", job, "--for", "Deleted", "--timeout", "60s", timeout_s=90)
            assert gone.returncode == 0, f"{job}: {gone.stdout}{gone.stderr}"
    assert len(completed) >= 20 and "mindspore-gpu" in completed  # every Job of the examples


def history(stack: Stack, job: str) -> list[dict]:
    result = stack.lahar("events", job, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)
