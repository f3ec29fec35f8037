"""Volcano's job lifecycle through `lahar simulate --until-idle`: one scenario per lifecycle action, with the
manifests of examples/lifecycle. The simulator runs the job-controller's and queue-controller's cores over
its simulated event log, so what these tests read from the report's event log (`--events`) is what the
stack's log would hold."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
LIFECYCLE = ROOT / "examples" / "lifecycle"
RECLAIM_CONF = ROOT / "examples" / "queues" / "reclaim.conf"


def simulate(capsys: pytest.CaptureFixture[str], manifest: Path, *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["simulate", "--until-idle", "--events", "-o", "json", "-f", str(manifest), *args])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def scenario(capsys: pytest.CaptureFixture[str], name: str, *args: str) -> dict[str, Any]:
    """A scenario that must run to the end (outcome idle, exit code 0)."""
    code, report = simulate(capsys, LIFECYCLE / name, *args)
    assert (code, report["outcome"]) == (0, "idle")
    return report


def events(report: dict[str, Any], type: str, name: str = "") -> list[dict[str, Any]]:
    """The events of `type` (about object `name`, if given), in log order."""
    return [
        e for e in report["events"] if e["type"] == type and (not name or e["subject"].endswith(f"/{name}"))
    ]


def phases(report: dict[str, Any], job: str) -> list[str]:
    """Every phase the job went through, consecutive repeats collapsed."""
    seen: list[str] = []
    for e in events(report, "JobStatusChanged", job):
        if not seen or seen[-1] != e["payload"]["phase"]:
            seen.append(e["payload"]["phase"])
    return seen


def generations(report: dict[str, Any]) -> Counter[str]:
    """How many pods of each name the job-controller created."""
    return Counter(e["subject"].rpartition("/")[2] for e in events(report, "PodCreated"))


def stops(report: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """Pod name -> (time, reason) of the job-controller's last deletion request for it."""
    return {
        e["subject"].rpartition("/")[2]: (e["time"], e["payload"]["reason"])
        for e in events(report, "PodDeletionRequested")
    }


def cause_of(report: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    (cause,) = [e for e in report["events"] if e["id"] == event["causation_id"]]
    return cause


# --- exitCode → RestartJob ----------------------------------------------------------------------------


def test_exit_code_3_restarts_the_job_until_max_retry_then_it_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = scenario(capsys, "restart-job-exit-code.yaml")
    job = report["jobs"]["default/flaky"]
    assert (job["phase"], job["retry_count"], job["reason"]) == ("Failed", 3, "MaxRetryExceeded")
    assert (job["start"], job["finish"]) == (0.0, 30.0)
    # three generations of the pod, each failing with code 3 after its 10 s
    assert generations(report) == {"flaky-main-0": 3}
    failures = events(report, "PodFailed", "flaky-main-0")
    assert [(e["time"], e["payload"]["exit_code"]) for e in failures] == [(10.0, 3), (20.0, 3), (30.0, 3)]
    run = ["Restarting", "Pending", "Running"]
    assert phases(report, "flaky") == ["Pending", "Running", *run, *run, "Restarting", "Failed"]
    # each restart was caused by a failure, and counted
    restarts = [
        e for e in events(report, "JobStatusChanged", "flaky") if e["payload"]["phase"] == "Restarting"
    ]
    assert [cause_of(report, e)["type"] for e in restarts] == ["PodFailed"] * 3
    assert [e["payload"]["retry_count"] for e in restarts] == [1, 2, 3]


# --- PodFailed → RestartTask --------------------------------------------------------------------------


def test_restart_task_recreates_only_that_tasks_pods(capsys: pytest.CaptureFixture[str]) -> None:
    report = scenario(capsys, "restart-task.yaml")
    job = report["jobs"]["default/train"]
    assert (job["phase"], job["retry_count"], job["finish"]) == ("Completed", 1, 60.0)
    # the workers failed once (exit code 1, then 0): both recreated; the parameter server kept its pod
    assert generations(report) == {"train-ps-0": 1, "train-worker-0": 2, "train-worker-1": 2}
    assert stops(report) == {"train-worker-0": (10.0, "RestartTask"), "train-worker-1": (10.0, "RestartTask")}
    assert [e["time"] for e in events(report, "PodRunning", "train-ps-0")] == [0.0]
    assert [e["time"] for e in events(report, "PodSucceeded", "train-worker-0")] == [20.0]
    assert phases(report, "train") == ["Pending", "Running", "Restarting", "Pending", "Running", "Completed"]


# --- PodFailed → AbortJob -----------------------------------------------------------------------------


def test_abort_job_stops_the_rest_and_the_job_is_aborted(capsys: pytest.CaptureFixture[str]) -> None:
    report = scenario(capsys, "abort-job.yaml")
    job = report["jobs"]["default/fragile"]
    assert (job["phase"], job["reason"], job["finish"], job["retry_count"]) == (
        "Aborted",
        "AbortJob on PodFailed",
        10.0,
        0,
    )
    assert phases(report, "fragile") == ["Pending", "Running", "Aborting", "Aborted"]
    # the sidecar still ran: it is stopped; nothing is created again
    assert stops(report) == {"fragile-sidecar-0": (10.0, "AbortJob")}
    assert [e["payload"]["reason"] for e in events(report, "PodTerminated", "fragile-sidecar-0")] == [
        "Deleted"
    ]
    assert generations(report) == {"fragile-main-0": 1, "fragile-sidecar-0": 1}


# --- TaskCompleted → CompleteJob ----------------------------------------------------------------------


def test_the_master_completing_completes_the_job_and_stops_the_workers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = scenario(capsys, "complete-job.yaml")
    job = report["jobs"]["default/distcc"]
    assert (job["phase"], job["reason"], job["finish"]) == ("Completed", "CompleteJob on TaskCompleted", 30.0)
    assert phases(report, "distcc") == ["Pending", "Running", "Completing", "Completed"]
    workers = [f"distcc-worker-{i}" for i in range(3)]
    assert stops(report) == {name: (30.0, "CompleteJob") for name in workers}
    for name in workers:
        assert [(e["time"], e["payload"]["reason"]) for e in events(report, "PodTerminated", name)] == [
            (30.0, "Deleted")
        ]
        assert events(report, "PodSucceeded", name) == []
    # the sleep 600 of the workers never ran out: the run ends with the job
    assert report["sim_time_s"] < 60


# --- PodEvicted → RestartJob (reclaim) ----------------------------------------------------------------


def test_a_reclaimed_pod_restarts_its_job_and_counts_a_retry(capsys: pytest.CaptureFixture[str]) -> None:
    report = scenario(capsys, "evicted-restart.yaml", "--conf", str(RECLAIM_CONF))
    assert report["evictions"] == ["default/victim-main-0"]
    (evicting,) = events(report, "PodEvicting", "victim-main-0")
    assert (evicting["time"], evicting["payload"]["reason"]) == (
        30.0,
        "reclaim: for default/reclaimer-main-0 (job default/reclaimer, queue test2)",
    )
    (restart,) = [
        e for e in events(report, "JobStatusChanged", "victim") if e["payload"]["phase"] == "Restarting"
    ]
    assert cause_of(report, restart)["id"] == evicting["id"]
    victim = report["jobs"]["default/victim"]
    assert victim["retry_count"] == 1
    assert phases(report, "victim") == ["Pending", "Running", "Restarting", "Pending", "Running", "Completed"]
    assert generations(report)["victim-main-0"] == 2
    # the reclaimer runs from the next cycle; the victim's new pod waits until it is done
    assert report["jobs"]["default/reclaimer"]["start"] == 31.0
    assert (victim["phase"], victim["finish"]) == ("Completed", 231.0)


def test_without_a_policy_an_evicted_pod_is_created_again_without_a_restart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Control: the plain path also creates the pod again, but neither restarts the job nor counts."""
    text = (LIFECYCLE / "evicted-restart.yaml").read_text()
    policy = "  policies:\n  - {event: PodEvicted, action: RestartJob}\n"
    assert policy in text
    manifest = tmp_path / "evicted.yaml"
    manifest.write_text(text.replace(policy, ""))
    code, report = simulate(capsys, manifest, "--conf", str(RECLAIM_CONF))
    assert (code, report["evictions"]) == (0, ["default/victim-main-0"])
    victim = report["jobs"]["default/victim"]
    assert (victim["retry_count"], victim["finish"]) == (0, 231.0)
    assert "Restarting" not in phases(report, "victim")
    assert generations(report)["victim-main-0"] == 2


# --- PodPending with a timeout → TerminateJob ---------------------------------------------------------


def test_a_pod_pending_too_long_terminates_its_job(capsys: pytest.CaptureFixture[str]) -> None:
    report = scenario(capsys, "pending-timeout.yaml")
    job = report["jobs"]["default/picky"]
    assert (job["phase"], job["reason"], job["start"], job["finish"]) == (
        "Terminated",
        "TerminateJob on PodPending",
        None,
        60.0,
    )
    assert report["binds"] == {}
    assert phases(report, "picky") == ["Pending", "Terminating", "Terminated"]
    # the pod was never placed: its deletion names no node and no node reports anything
    (created,) = events(report, "PodCreated", "picky-main-0")
    assert created["time"] == 0.0
    assert stops(report) == {"picky-main-0": (60.0, "TerminateJob")}
    assert events(report, "PodTerminated") == []


def test_without_the_timeout_the_pod_waits_forever(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (LIFECYCLE / "pending-timeout.yaml").read_text()
    policy = "  policies:\n  - {event: PodPending, action: TerminateJob, timeout: 60s}\n"
    assert policy in text
    manifest = tmp_path / "waits.yaml"
    manifest.write_text(text.replace(policy, ""))
    code, report = simulate(capsys, manifest)
    assert (code, report["outcome"]) == (3, "unschedulable")
    assert report["jobs"]["default/picky"]["phase"] == "Pending"


# --- minSuccess ---------------------------------------------------------------------------------------


def test_min_success_completes_the_job_early(capsys: pytest.CaptureFixture[str]) -> None:
    report = scenario(capsys, "min-success.yaml")
    job = report["jobs"]["default/search"]
    assert (job["phase"], job["reason"], job["finish"]) == ("Completed", "MinSuccess", 10.0)
    succeeded = {e["subject"].rpartition("/")[2] for e in events(report, "PodSucceeded")}
    assert succeeded == {"search-quick-0", "search-quick-1"}
    assert stops(report) == {"search-slow-0": (10.0, "JobFinished"), "search-slow-1": (10.0, "JobFinished")}


# --- dependsOn ----------------------------------------------------------------------------------------


def test_workers_are_created_only_once_the_master_runs(capsys: pytest.CaptureFixture[str]) -> None:
    report = scenario(capsys, "depends-on.yaml")
    created = {e["subject"].rpartition("/")[2]: e for e in events(report, "PodCreated")}
    assert sorted(created) == ["pipeline-master-0", "pipeline-worker-0", "pipeline-worker-1"]
    (master_runs,) = events(report, "PodRunning", "pipeline-master-0")
    # the master waited for its node (it joins at 30 s); the workers did not exist before it ran
    assert created["pipeline-master-0"]["time"] == 0.0
    assert master_runs["time"] == 30.0
    for worker in ("pipeline-worker-0", "pipeline-worker-1"):
        assert created[worker]["time"] == 30.0
        assert created[worker]["seq"] > master_runs["seq"]
        assert report["binds"][f"default/{worker}"] == "node-1"
    assert report["binds"]["default/pipeline-master-0"] == "master-node"
    job = report["jobs"]["default/pipeline"]
    assert (job["phase"], job["start"], job["finish"]) == ("Completed", 30.0, 90.0)


# --- ttlSecondsAfterFinished --------------------------------------------------------------------------


def test_a_finished_job_is_cleaned_up_after_its_ttl(capsys: pytest.CaptureFixture[str]) -> None:
    report = scenario(capsys, "ttl.yaml")
    job = report["jobs"]["default/short-lived"]
    assert (job["phase"], job["finish"], job["deleted"]) == ("Completed", 10.0, 40.0)
    (cleaned,) = events(report, "JobCleanedUp", "short-lived")
    assert (cleaned["time"], cleaned["producer"]) == (40.0, "job-controller")
    assert [e["time"] for e in events(report, "PodGroupDeleted", "short-lived")] == [40.0]
    # gone: no PodGroup left, and nothing happens to it after the clean-up
    assert report["podgroups"] == {}
    about_it = [e["type"] for e in report["events"] if "short-lived" in e["subject"]]
    assert about_it[-2:] == ["JobCleanedUp", "PodGroupDeleted"]
    assert report["makespan_s"] == 10.0


# --- commands -----------------------------------------------------------------------------------------

COMMANDS = """
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  name: abort-it
  annotations: {lahar.dev/sim-arrival: 20s}
action: AbortJob
target: {kind: Job, name: distcc}
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  name: resume-it
  annotations: {lahar.dev/sim-arrival: 50s}
action: ResumeJob
target: {kind: Job, name: distcc}
"""


def test_commands_abort_and_resume_a_job(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = tmp_path / "commands.yaml"
    manifest.write_text((LIFECYCLE / "complete-job.yaml").read_text() + COMMANDS)
    code, report = simulate(capsys, manifest)
    assert (code, report["outcome"]) == (0, "idle")
    issued = events(report, "CommandIssued")
    assert [(e["time"], e["payload"]["action"], e["producer"]) for e in issued] == [
        (20.0, "AbortJob", "admission"),
        (50.0, "ResumeJob", "admission"),
    ]
    assert phases(report, "distcc") == [
        "Pending",
        "Running",
        "Aborting",
        "Aborted",
        "Restarting",
        "Pending",
        "Running",
        "Completing",
        "Completed",
    ]
    job = report["jobs"]["default/distcc"]
    # resumed at 50 s, the master compiles its 30 s again
    assert (job["retry_count"], job["finish"], job["reason"]) == (1, 80.0, "CompleteJob on TaskCompleted")


CLOSED_QUEUE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: batch}
spec: {weight: 1}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: waits
  annotations: {lahar.dev/sim-duration: 10s}
spec:
  queue: batch
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        containers: [{name: main, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: close-batch}
action: CloseQueue
target: {kind: Queue, name: batch}
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  name: open-batch
  annotations: {lahar.dev/sim-arrival: 45s}
action: OpenQueue
target: {kind: Queue, name: batch}
"""


def test_a_closing_queue_holds_its_job_until_it_is_opened(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "queue.yaml"
    manifest.write_text(CLOSED_QUEUE)
    code, report = simulate(capsys, manifest)
    assert (code, report["outcome"]) == (0, "idle")
    # closed before the job's PodGroup was folded (it would be Closing otherwise); the scheduler admits no
    # PodGroup of a queue that is not Open, so the job waits until the queue is opened at 45 s
    states = [(e["time"], e["payload"]["state"]) for e in events(report, "QueueStateChanged", "batch")]
    assert states == [(0.0, "Closed"), (45.0, "Open")]
    group = [(e["time"], e["payload"]["phase"]) for e in events(report, "PodGroupStatusChanged", "waits")]
    assert min(t for t, phase in group if phase != "Pending") == 45.0
    job = report["jobs"]["default/waits"]
    assert (job["phase"], job["start"], job["finish"]) == ("Completed", 45.0, 55.0)
