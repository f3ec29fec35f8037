"""CronJobs and JobFlows in `lahar simulate`: Volcano's own examples run unchanged (the flow's DAG in
order, the cron job at its simulated schedule times until the horizon), the concurrency policies with
jobs that outlast the schedule, and what the report and the CLI say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contracts.parse import load_documents, load_files
from services.cli.main import main
from services.scheduler.core.conf import default_conf
from services.simulator.engine import SimulationRun, simulate

ROOT = Path(__file__).resolve().parents[2]
VOLCANO = ROOT / "examples" / "volcano"
NODES = VOLCANO / "lahar-nodes.yaml"
FLOW = [VOLCANO / "jobflow" / "JobTemplate.yaml", VOLCANO / "jobflow" / "JobFlow.yaml"]
CRON = VOLCANO / "cronjob" / "cronjob.yaml"


def run(*paths: Path, text: str = "", **options: Any) -> SimulationRun:
    objects = load_files([NODES, *paths]) + (load_documents(text, "test.yaml") if text else [])
    return simulate(objects, default_conf(), until_idle=True, **options)


def phases(run: SimulationRun) -> dict[str, str]:
    return {key: job.phase for key, job in run.world.jobs.items()}


def test_volcanos_jobflow_example_runs_its_dag_in_order() -> None:
    result = run(*FLOW)
    assert result.outcome == "idle"
    jobs = result.world.jobs
    assert set(phases(result).values()) == {"Completed"} and len(jobs) == 5

    def start(name: str) -> float:
        value = jobs[f"default/test-{name}"].start_time
        assert value is not None
        return value

    def finish(name: str) -> float:
        value = jobs[f"default/test-{name}"].finish_time
        assert value is not None
        return value

    assert finish("a") <= start("b")
    assert finish("b") <= min(start("c"), start("d"))
    assert max(finish("c"), finish("d")) <= start("e")
    # sleep 10s each: a, b, (c and d together), e
    assert finish("e") == pytest.approx(40, abs=5)
    assert result.workloads is not None
    assert result.workloads.jobflows["default/test"].phase == "Succeed"
    # jobRetainPolicy delete: every job deleted once the flow succeeded
    assert all(job.deleted_time is not None for job in jobs.values())


def test_volcanos_cronjob_example_runs_at_its_schedule_until_the_horizon() -> None:
    result = run(CRON, horizon_s=1800)
    assert result.outcome == "idle"
    jobs = result.world.jobs
    name = "default/volcano-cronjob-example"
    # every five minutes from 00:05 of the simulated clock's first day, named after the minute
    assert sorted(jobs, key=lambda k: jobs[k].submit_time) == [f"{name}-{m}" for m in (5, 10, 15, 20, 25)]
    assert [jobs[k].submit_time for k in sorted(jobs, key=lambda k: jobs[k].submit_time)] == [
        300,
        600,
        900,
        1200,
        1500,
    ]
    assert set(phases(result).values()) == {"Completed"}
    # successfulJobsHistoryLimit 5: none deleted yet; the CronJob is suspended at the horizon
    assert all(job.deleted_time is None for job in jobs.values())
    assert result.workloads is not None and result.workloads.cronjobs[name].cronjob.suspend


LONG_CRON = """
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {{name: slow}}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: {policy}
  startingDeadlineSeconds: 30
  jobTemplate:
    spec:
      tasks:
        - name: work
          replicas: 1
          template:
            metadata: {{annotations: {{lahar.dev/sim-duration: 150s}}}}
            spec:
              containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
"""


@pytest.mark.parametrize(
    ("policy", "submitted", "deleted"),
    [
        # a job every minute, running side by side; of the five completed, the default history limit
        # keeps three (the two oldest deleted as the fourth and fifth complete)
        ("Allow", [60, 120, 180, 240, 300], [390, 450]),
        # the 120 and 180 runs are skipped while the first runs; at 210 the latest (180) is 30 s late,
        # within the deadline only just not (earliest = 210 - 30 = 180, next run after it 240)
        ("Forbid", [60, 240], []),
        # each run replaces the one before it
        ("Replace", [60, 120, 180, 240, 300], [120, 180, 240, 300]),
    ],
)
def test_concurrency_policies_with_jobs_that_outlast_the_schedule(
    policy: str, submitted: list[int], deleted: list[int]
) -> None:
    result = run(text=LONG_CRON.format(policy=policy), horizon_s=330)
    jobs = sorted(result.world.jobs.values(), key=lambda job: job.submit_time)
    assert [job.submit_time for job in jobs] == submitted
    assert sorted(job.deleted_time for job in jobs if job.deleted_time is not None) == deleted


def test_the_report_and_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "-f", str(NODES), *(a for p in (*FLOW, CRON) for a in ("-f", str(p)))]
    assert main([*args, "--until-idle", "--horizon", "10m", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["jobflows"]["default/test"]["phase"] == "Succeed"
    assert report["jobflows"]["default/test"]["jobs"] == [f"test-{n}" for n in "abcde"]
    cron = report["cronjobs"]["default/volcano-cronjob-example"]
    assert cron["jobs"] == ["volcano-cronjob-example-5"] and cron["last_schedule_time"] == 300
    assert main([*args, "--until-idle", "--horizon", "10m"]) == 0
    table = capsys.readouterr().out
    assert "JOBFLOW" in table and "CRONJOB" in table and "test-a, test-b, test-c, test-d, test-e" in table
    assert main([*args, "--horizon", "soon"]) == 2
    assert "--horizon" in capsys.readouterr().err
