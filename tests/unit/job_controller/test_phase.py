"""Job phase on the plain path (Volcano's SyncJob rules for the Pending and Running states)."""

from __future__ import annotations

import pytest

from contracts.objects import Job, ObjectMeta, TaskSpec
from services.job_controller.core.phase import TaskCounts, next_phase


def job(
    *tasks: tuple[str, int, int], min_available: int | None = None, min_success: int | None = None
) -> Job:
    """A defaulted job from (task name, replicas, task minAvailable); job minAvailable defaults to the sum."""
    specs = tuple(TaskSpec(name=n, replicas=r, min_available=m) for n, r, m in tasks)
    total = sum(m for _, _, m in tasks)
    return Job(
        meta=ObjectMeta("j"),
        tasks=specs,
        min_available=total if min_available is None else min_available,
        min_success=min_success,
    )


def counts(**tasks: str) -> dict[str, TaskCounts]:
    """counts(ps="2r", worker="1s 3f"): per task, how many pods are pending (p), running (r), succeeded (s)
    and failed (f)."""
    table = {}
    for name, spec in tasks.items():
        n = {item[-1]: int(item[:-1]) for item in spec.split()}
        table[name] = TaskCounts(n.get("p", 0), n.get("r", 0), n.get("s", 0), n.get("f", 0))
    return table


# 2 ps (all needed) + 4 workers of which 2 are needed: job minAvailable 4 = Σ task minAvailable
PS_WORKER = job(("ps", 2, 2), ("worker", 4, 2))
# the same tasks with a job minimum below the tasks' sum: per-task minimums are not enforced at the end
LOOSE = job(("ps", 2, 2), ("worker", 4, 2), min_available=3)
MIN_SUCCESS = job(("ps", 2, 2), ("worker", 4, 2), min_success=3)
# minimums of 1 per task, but 4 successes wanted
MIN_SUCCESS_4 = job(("ps", 2, 1), ("worker", 4, 1), min_success=4)

CASES = [
    # --- Pending → Running once minAvailable pods run or have finished
    ("pending, 3 of 4 running", PS_WORKER, "Pending", counts(ps="2r", worker="1r 3p"), "Pending"),
    ("pending, 4 running", PS_WORKER, "Pending", counts(ps="2r", worker="2r 2p"), "Running"),
    ("pending, finished pods count", PS_WORKER, "Pending", counts(ps="1r 1s", worker="1f 1r"), "Running"),
    ("pending, no pods counted", PS_WORKER, "Pending", {}, "Pending"),
    # --- Running → Completed / Failed once every replica finished
    ("all succeeded", PS_WORKER, "Running", counts(ps="2s", worker="4s"), "Completed"),
    ("enough succeeded", PS_WORKER, "Running", counts(ps="2s", worker="2s 2f"), "Completed"),
    ("too few succeeded", PS_WORKER, "Running", counts(ps="2s", worker="1s 3f"), "Failed"),
    # per-task minimum: 4 succeeded ≥ job min 4, but ps has only 1 of its 2
    ("task minimum missed", PS_WORKER, "Running", counts(ps="1s 1f", worker="4s"), "Failed"),
    # job min 3 < Σ task min 4: the per-task rule does not apply, 3 succeeded ≥ 3
    ("task minimum not enforced", LOOSE, "Running", counts(ps="1s 1f", worker="2s 2f"), "Completed"),
    ("loose but too few", LOOSE, "Running", counts(ps="1s 1f", worker="1s 3f"), "Failed"),
    # --- minSuccess
    ("minSuccess reached early", MIN_SUCCESS, "Running", counts(ps="2r", worker="3s 1r"), "Completed"),
    ("minSuccess not yet", MIN_SUCCESS, "Running", counts(ps="2r", worker="2s 2r"), "Running"),
    ("minSuccess missed at the end", MIN_SUCCESS_4, "Running", counts(ps="1s 1f", worker="2s 2f"), "Failed"),
    # --- Running → Pending when more pods are pending than the job can spare (replicas − minAvailable = 2)
    ("3 pending of 6", PS_WORKER, "Running", counts(ps="2r", worker="1r 3p"), "Pending"),
    ("2 pending of 6", PS_WORKER, "Running", counts(ps="2r", worker="2r 2p"), "Running"),
    ("running with some finished", PS_WORKER, "Running", counts(ps="2r", worker="2s 2p"), "Running"),
    # --- finished phases are final; phases of other state machines are left alone
    ("completed stays", PS_WORKER, "Completed", counts(ps="2p", worker="4p"), "Completed"),
    ("failed stays", PS_WORKER, "Failed", counts(ps="2s", worker="4s"), "Failed"),
    ("aborted stays", PS_WORKER, "Aborted", counts(ps="2r", worker="4r"), "Aborted"),
    ("restarting untouched", PS_WORKER, "Restarting", counts(ps="2r", worker="4r"), "Restarting"),
]


@pytest.mark.parametrize(
    ("given", "phase", "tally", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_next_phase(given: Job, phase: str, tally: dict[str, TaskCounts], expected: str) -> None:
    assert next_phase(given, phase, tally) == expected


def test_task_counts_finished() -> None:
    assert TaskCounts(pending=1, running=2, succeeded=3, failed=4).finished == 7
