"""Volcano's own example directory, as a Volcano user brings it (examples/volcano/, copied unchanged):
every manifest of a kind lahar reads passes `lahar validate` (those with a field no API knows,
tests/support/volcano_typos.py, with --validate=warn, and strict names exactly those fields), Volcano's
examples of refused Jobs are refused for Volcano's reasons, and every Job runs to completion in the
simulator on examples/volcano/lahar-nodes.yaml (the stack's run is
tests/e2e/test_volcano_examples_stack.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.volcano_typos import VOLCANO_UNKNOWN_FIELDS, needs_warn

from contracts.parse import SUPPORTED_KINDS, load_files
from services.admission.validate_cmd import validate_files
from services.scheduler.core.conf import default_conf
from services.simulator.engine import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "volcano"
NODES = EXAMPLES / "lahar-nodes.yaml"
REFUSED = EXAMPLES / "invalid_jobs"
# files that need others beside them, as a user applies them together
COMPANIONS = {"hierarchical-jobs/jobs.yaml": ("hierarchical-jobs/queues.yaml",)}


def kinds(path: Path) -> set[str]:
    return {doc["kind"] for doc in yaml.safe_load_all(path.read_text()) if doc}


def example_files() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*.yaml") if REFUSED not in p.parents and p != NODES)


def readable(path: Path) -> bool:
    return kinds(path) <= SUPPORTED_KINDS


def with_companions(path: Path) -> list[Path]:
    relative = path.relative_to(EXAMPLES).as_posix()
    return [*(EXAMPLES / c for c in COMPANIONS.get(relative, ())), path]


def test_the_corpus_is_volcano_examples_directory() -> None:
    files = example_files()
    assert len(files) >= 25
    assert all(kinds(path) for path in files)  # none empty
    assert sum("Job" in kinds(path) for path in files) >= 18
    # every file of the copied corpus is of a kind lahar reads (the others were left out when copying)
    assert [p for p in files if not readable(p)] == []
    assert {"CronJob", "JobTemplate", "JobFlow"} <= {kind for path in files for kind in kinds(path)}


def readable_files() -> list[Path]:
    return [p for p in example_files() if readable(p)]


@pytest.mark.parametrize("path", readable_files(), ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_every_example_of_a_kind_lahar_reads_passes_validate_unchanged(path: Path) -> None:
    paths = [str(p) for p in with_companions(path)]
    relative = path.relative_to(EXAMPLES).as_posix()
    documents, errors = validate_files(paths, validate="warn" if needs_warn([relative]) else "strict")
    assert documents >= 1
    assert errors == []
    if needs_warn([relative]):
        _, strict = validate_files(paths)
        assert tuple(e.path for e in strict) == VOLCANO_UNKNOWN_FIELDS[relative]


# each of Volcano's refused examples, with what its webhook says (the reason, in lahar's words)
REFUSALS = {
    "duplicatedPolicyEvent-webhook-deny.yaml": ("spec.policies[1].event", "duplicate event 'PodFailed'"),
    "duplicatedTaskName-webhook-deny.yaml": ("spec.tasks[1].name", "duplicated task name 'task-1'"),
    "minAvailable-webhook-deny.yaml": ("spec.minAvailable", "should not be greater than total replicas"),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_volcano_refused_examples_are_refused_for_its_reasons(name: str) -> None:
    _, errors = validate_files([str(REFUSED / name)])
    path, reason = REFUSALS[name]
    assert [(e.path, reason in e.message) for e in errors] == [(path, True)]


def test_every_refused_example_is_checked() -> None:
    assert sorted(p.name for p in REFUSED.glob("*.yaml")) == sorted(REFUSALS)


def job_files() -> list[Path]:
    return [p for p in readable_files() if "Job" in kinds(p)]


@pytest.mark.parametrize("path", job_files(), ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_every_example_job_runs_to_completion_in_the_simulator(path: Path) -> None:
    warn = needs_warn([path.relative_to(EXAMPLES).as_posix()])
    objects = load_files([NODES, *with_companions(path)], validate="warn" if warn else "strict")
    run = simulate(objects, default_conf(), until_idle=True)
    assert run.outcome == "idle"
    phases = {key: job.phase for key, job in run.world.jobs.items()}
    assert phases and set(phases.values()) == {"Completed"}, phases


def test_gpu_workers_written_with_limits_only_run_on_the_gpu_node() -> None:
    """Volcano's MindSpore GPU example asks for its GPUs under `limits` only, as Kubernetes allows."""
    path = EXAMPLES / "MindSpore-example" / "mindspore_gpu" / "mindspore-gpu.yaml"
    run = simulate(load_files([NODES, path]), default_conf(), until_idle=True)
    workers = {pod: node for pod, node in run.binds.items() if "-mpiworker-" in pod}
    assert len(workers) == 2 and set(workers.values()) == {"gpu-0"}  # the master asks for no GPU
