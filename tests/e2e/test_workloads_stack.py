"""CronJobs and JobFlows on a running stack of hollow nodes, as a Volcano user tries them: Volcano's
jobflow example applied unchanged runs its five jobs in DAG order and, its jobRetainPolicy being delete,
removes them once it succeeded; Volcano's cronjob example is accepted unchanged (it fires every five
minutes, longer than a test should wait), and a CronJob of the test's own firing every few seconds
makes a job that completes; deleting that CronJob deletes its jobs. Everything goes through the CLI, as
a user would (`lahar apply`, `get`, `delete`); the job-controller asks admission for every job."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.log_invariants import binding_violations, duplicate_facts
from e2e.test_crash_recovery import read_log

from contracts.parse_fields import timestamp_seconds
from tests.e2e.conftest import Stack, start_stack, stop_stack

pytestmark = pytest.mark.slow  # a stack of its own, a five-job flow and a CronJob's runs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "volcano"
TIME_SCALE = "0.05"  # the flow's pods "sleep 10s": half a second here
OWN_CRONJOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: often}
spec:
  schedule: "@every 3s"
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      tasks:
        - name: task-1
          replicas: 1
          template:
            spec:
              containers: [{name: c, image: busybox, command: [sh, -c, "sleep 2"]}]
              restartPolicy: OnFailure
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    running = start_stack(home, "--sim-nodes", "4", env={"LAHAR_TIME_SCALE": TIME_SCALE})
    try:
        yield running
    finally:
        stop_stack(running.supervisor)


def get(stack: Stack, *args: str) -> Any:
    result = stack.lahar("get", *args, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def until(check: Callable[[], Any], what: str, timeout_s: float = 120.0) -> Any:
    """Poll check() until it returns something truthy; fail naming `what` after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        time.sleep(0.5)


def apply(stack: Stack, *paths: Path) -> None:
    result = stack.lahar("apply", *(a for p in paths for a in ("-f", str(p))), "-o", "json")
    assert result.returncode == 0 and json.loads(result.stdout)["accepted"], result.stdout + result.stderr


def test_volcanos_jobflow_example_runs_its_dag_in_order(stack: Stack) -> None:
    apply(stack, EXAMPLES / "jobflow" / "JobTemplate.yaml", EXAMPLES / "jobflow" / "JobFlow.yaml")

    def succeeded() -> Any:
        flow = get(stack, "jf", "test")
        return flow if flow["status"]["state"]["phase"] == "Succeed" else None

    flow = until(succeeded, "the JobFlow to succeed")
    runs = {s["name"]: s for s in flow["status"]["jobStatusList"]}
    assert sorted(runs) == [f"test-{n}" for n in "abcde"]
    assert all(s["state"] == "Completed" for s in runs.values())

    def made(name: str) -> float:
        return timestamp_seconds(runs[f"test-{name}"]["startTimestamp"])

    def ended(name: str) -> float:
        return timestamp_seconds(runs[f"test-{name}"]["endTimestamp"])

    # each job is made only once everything it depends on completed
    assert ended("a") <= made("b")
    assert ended("b") <= min(made("c"), made("d"))
    assert max(ended("c"), ended("d")) <= made("e")
    # jobRetainPolicy delete: the flow's jobs are gone once it succeeded; the templates stay
    until(
        lambda: not [j for j in get(stack, "vcjob")["items"] if j["metadata"]["name"].startswith("test-")],
        "the flow's jobs deleted",
    )
    assert sorted(t["metadata"]["name"] for t in get(stack, "jt")["items"]) == list("abcde")
    table = stack.lahar("get", "jobflows")
    assert table.returncode == 0 and table.stdout.splitlines()[1].split()[:2] == ["test", "Succeed"]


def test_cronjobs_make_jobs_that_complete_and_go_with_their_cronjob(stack: Stack, tmp_path: Path) -> None:
    apply(stack, EXAMPLES / "cronjob" / "cronjob.yaml")  # Volcano's example, unchanged: every 5 minutes
    own = tmp_path / "often.yaml"
    own.write_text(OWN_CRONJOB)
    apply(stack, own)

    def completed_one() -> Any:
        cron = get(stack, "cj", "often")
        return cron if cron["status"].get("lastSuccessfulTime") else None

    cron = until(completed_one, "a job of the CronJob to complete")
    assert cron["status"]["lastScheduleTime"]
    jobs = [j for j in get(stack, "vcjob")["items"] if j["metadata"]["name"].startswith("often-")]
    assert jobs and all(
        j["metadata"]["annotations"]["owner.lahar.dev/controller"].startswith("CronJob/often/") for j in jobs
    )
    table = stack.lahar("get", "cronjobs")
    rows = {line.split()[0]: line for line in table.stdout.splitlines()[1:]}
    assert "*/5 * * * *" in rows["volcano-cronjob-example"] and "@every 3s" in rows["often"]

    deleted = stack.lahar("delete", "cronjob", "often", "-o", "json")
    assert json.loads(deleted.stdout)["accepted"], deleted.stdout + deleted.stderr
    until(
        lambda: not [j for j in get(stack, "vcjob")["items"] if j["metadata"]["name"].startswith("often-")],
        "the deleted CronJob's jobs to go",
    )
    assert [c["metadata"]["name"] for c in get(stack, "cj")["items"]] == ["volcano-cronjob-example"]


def test_every_job_was_made_once_and_bound_once(stack: Stack) -> None:
    """After the tests above: a job asked for again (each reconcile asks until the log answers) was
    written once, and its pods bound once."""
    events = asyncio.run(read_log(stack.state))
    made = [e for e in events if e.type == "JobSubmitted" and e.name.startswith(("test-", "often-"))]
    assert len(made) >= 6 and all(e.producer == "admission" for e in made)
    assert duplicate_facts(events) + binding_violations(events) == []
