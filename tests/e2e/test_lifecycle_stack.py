"""Volcano's job lifecycle on the running local stack, driven and checked through the CLI as a user would:
suspend and resume a running job, a task-level RestartTask policy, a dependsOn chain, and a queue closed
while one of its jobs runs. The jobs run as local processes (`sh -c` with short sleeps) and ask for little
cpu so that they fit a small machine; what happened is read back from `lahar events` and the read model."""

from __future__ import annotations

import json
import shlex
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contracts.job_shape import POD_GENERATION

pytestmark = pytest.mark.slow  # a local stack of its own and jobs run to completion on it: seconds a test

REQUESTS = {"cpu": "100m", "memory": "32Mi"}


# --- helpers ---------------------------------------------------------------------------------------


def task(name: str, script: str, *, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    container = {"name": name, "image": "busybox", "command": ["sh", "-c", script]}
    container["resources"] = {"requests": REQUESTS}
    spec = {"restartPolicy": "Never", "containers": [container]}
    return {"name": name, "replicas": replicas, "template": {"spec": spec}, **extra}


def job(name: str, tasks: list[dict[str, Any]], *, min_available: int, queue: str = "default") -> str:
    spec = {"minAvailable": min_available, "queue": queue, "tasks": tasks}
    manifest = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}}
    return json.dumps({**manifest, "spec": spec})  # JSON is YAML


def lahar_json(stack, *args: str) -> Any:
    result = stack.lahar(*args, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def apply(stack, tmp_path: Path, name: str, manifest: str) -> dict[str, Any]:
    """`lahar apply -o json` of one manifest; admission's answer."""
    path = tmp_path / f"{name}.json"
    path.write_text(manifest)
    return json.loads(stack.lahar("apply", "-f", str(path), "-o", "json").stdout)


def submit(stack, tmp_path: Path, name: str, manifest: str) -> None:
    answer = apply(stack, tmp_path, name, manifest)
    assert answer["accepted"], answer


def wait_for(stack, name: str, phase: str, timeout: str = "40s") -> None:
    result = stack.lahar("wait", "job", name, "--for", phase, "--timeout", timeout, timeout_s=90)
    assert result.returncode == 0, (
        f"job {name} never {phase}: {result.stdout}{result.stderr}\n{story(stack, name)}"
    )


def history(stack, name: str) -> list[dict[str, Any]]:
    return lahar_json(stack, "events", name)


def story(stack, name: str) -> str:
    """The job's history as a table, for failure messages."""
    return stack.lahar("events", name).stdout


def phases(events: list[dict[str, Any]]) -> list[str]:
    """The job's published phases in order, each run of one phase once."""
    seen = [e["payload"]["phase"] for e in events if e["type"] == "JobStatusChanged"]
    return [p for i, p in enumerate(seen) if i == 0 or seen[i - 1] != p]


def created(events: list[dict[str, Any]], pod: str) -> list[int]:
    """The generations of pod `pod` the job-controller created, in order."""
    return [
        int(e["payload"]["object"]["object"]["meta"]["annotations"][POD_GENERATION])
        for e in events
        if e["type"] == "PodCreated" and e["object"] == f"pod/{pod}"
    ]


def first(events: list[dict[str, Any]], kind: str, obj: str) -> int:
    """Position of the first `kind` event about `obj` in the history (fails if there is none)."""
    found = [i for i, e in enumerate(events) if e["type"] == kind and e["object"] == obj]
    assert found, f"no {kind} about {obj}"
    return found[0]


def is_subsequence(wanted: list[str], seen: list[str]) -> bool:
    remaining = iter(seen)
    return all(any(s == w for s in remaining) for w in wanted)


def pods_of(stack, name: str) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p
        for p in lahar_json(stack, "get", "pods")["items"]
        if p["metadata"]["annotations"].get("volcano.sh/job-name") == name
    }


def eventually(read: Callable[[], Any], ok: Callable[[Any], bool], timeout_s: float = 15.0) -> Any:
    """Read until `ok` holds (each read is a CLI call, so the loop paces itself) or the time runs out;
    the last value read."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(0.2)
        value = read()
    return value


def queue_state(stack, name: str) -> str:
    return lahar_json(stack, "queue", "get", "-n", name)["status"]["state"]


# --- suspend and resume ----------------------------------------------------------------------------


def test_suspend_stops_the_pods_and_resume_starts_a_new_generation(stack, tmp_path: Path) -> None:
    name = "suspended"
    pods = [f"{name}-worker-0", f"{name}-worker-1"]
    submit(stack, tmp_path, name, job(name, [task("worker", "sleep 30", replicas=2)], min_available=2))
    wait_for(stack, name, "Running")

    suspend = stack.lahar("job", "suspend", "-N", name)
    assert suspend.returncode == 0, suspend.stderr
    wait_for(stack, name, "Aborted")
    status = lahar_json(stack, "job", "view", "-N", name)["status"]
    # Kubernetes' shape leaves zero counts out, as Volcano's API does
    assert [status.get(count, 0) for count in ("running", "pending", "terminating")] == [0, 0, 0]
    left = eventually(lambda: pods_of(stack, name), lambda pods: not pods)
    assert not left, f"the suspended job's pods are still in the read model: {sorted(left)}"
    events = history(stack, name)
    assert phases(events)[-3:] == ["Running", "Aborting", "Aborted"], story(stack, name)
    abort = first(events, "CommandIssued", f"command/{name}-abortjob")
    for pod in pods:
        asked = first(events, "PodDeletionRequested", f"pod/{pod}")
        assert abort < asked < first(events, "PodTerminated", f"pod/{pod}")
        assert events[asked]["payload"]["reason"] == "AbortJob"

    resume = stack.lahar("job", "resume", "-N", name)
    assert resume.returncode == 0, resume.stderr
    wait_for(stack, name, "Running")
    events = history(stack, name)
    expected = ["Running", "Aborting", "Aborted", "Restarting", "Pending", "Running"]
    assert is_subsequence(expected, phases(events)), story(stack, name)
    resumed = first(events, "CommandIssued", f"command/{name}-resumejob")
    for pod in pods:
        assert created(events, pod) == [0, 1], story(stack, name)
        recreated = [
            i for i, e in enumerate(events) if e["type"] == "PodCreated" and e["object"] == f"pod/{pod}"
        ][-1]
        assert resumed < recreated
        assert any(e["type"] == "PodRunning" and e["object"] == f"pod/{pod}" for e in events[recreated:])
    running = eventually(
        lambda: pods_of(stack, name),
        lambda pods: [p["status"]["phase"] for p in pods.values()] == ["Running"] * 2,
    )
    assert sorted(running) == pods
    assert {p["status"]["phase"] for p in running.values()} == {"Running"}
    assert {p["metadata"]["annotations"][POD_GENERATION] for p in running.values()} == {"1"}
    # Volcano's ResumeJob counts a retry (aborted.go: RetryCount++)
    assert lahar_json(stack, "job", "view", "-N", name)["status"]["retryCount"] == 1

    assert stack.lahar("job", "delete", "-N", name).returncode == 0


# --- RestartTask -----------------------------------------------------------------------------------


def test_restart_task_recreates_only_the_failed_task(stack, tmp_path: Path) -> None:
    name = "restart-task"
    marker = shlex.quote(str(tmp_path / "a-failed-once"))
    # the first generation of `a` fails and leaves the marker; the second finds it and succeeds
    flaky = f"if [ -e {marker} ]; then echo second try; else touch {marker}; exit 1; fi"
    policy = [{"event": "PodFailed", "action": "RestartTask"}]
    tasks = [task("a", flaky, policies=policy), task("b", "sleep 3")]
    submit(stack, tmp_path, name, job(name, tasks, min_available=2))
    wait_for(stack, name, "Completed")

    events = history(stack, name)
    a, b = f"{name}-a-0", f"{name}-b-0"
    assert created(events, a) == [0, 1], story(stack, name)
    assert created(events, b) == [0], f"task b was restarted too:\n{story(stack, name)}"
    failed = first(events, "PodFailed", f"pod/{a}")
    assert events[failed]["payload"]["exit_code"] == 1
    restarted = [e for e in events if e["type"] == "PodDeletionRequested"]
    assert {e["object"] for e in restarted} == {f"pod/{a}"}
    assert {e["payload"]["reason"] for e in restarted} == {"RestartTask"}
    assert "Restarting" in phases(events)
    succeeded = Counter(e["object"] for e in events if e["type"] == "PodSucceeded")
    assert succeeded == {f"pod/{a}": 1, f"pod/{b}": 1}

    status = lahar_json(stack, "job", "view", "-N", name)["status"]
    assert status["retryCount"] == 1
    assert status["succeeded"] == 2

    def generations(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
        return {n: p["metadata"]["annotations"][POD_GENERATION] for n, p in pods.items()}

    # in the read model: a's second generation, b's first
    pods = eventually(lambda: pods_of(stack, name), lambda pods: generations(pods) == {a: "1", b: "0"})
    assert generations(pods) == {a: "1", b: "0"}
    assert {p["status"]["phase"] for p in pods.values()} == {"Succeeded"}
    assert "second try" in stack.lahar("logs", a).stdout


# --- dependsOn -------------------------------------------------------------------------------------


def test_workers_are_created_only_once_the_master_runs(stack, tmp_path: Path) -> None:
    name = "depends-on"
    tasks = [
        task("master", "sleep 2"),
        task("worker", "sleep 1", replicas=2, dependsOn={"name": ["master"]}),
    ]
    # minAvailable 1: a gang of all three would wait for workers that wait for the master
    submit(stack, tmp_path, name, job(name, tasks, min_available=1))
    wait_for(stack, name, "Completed")

    events = history(stack, name)
    master_running = first(events, "PodRunning", f"pod/{name}-master-0")
    assert first(events, "PodCreated", f"pod/{name}-master-0") < master_running
    for index in range(2):
        worker = f"pod/{name}-worker-{index}"
        assert first(events, "PodCreated", worker) > master_running, story(stack, name)
        assert first(events, "PodSucceeded", worker) > master_running
    assert sum(e["type"] == "PodSucceeded" for e in events) == 3


# --- a queue closed while its job runs -------------------------------------------------------------

QUEUE = "closing"
QUEUE_JOB = "in-closing"


@pytest.fixture(scope="module")
def closed_while_running(stack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Queue `closing` with a job that runs until the test releases it, closed while the job runs; what was
    seen on the way."""
    tmp = tmp_path_factory.mktemp("queue")
    release = tmp / "release"
    assert stack.lahar("queue", "create", "-n", QUEUE).returncode == 0
    # runs until `release` exists (pods are local processes): still running however long the steps take
    until_released = f"while [ ! -e {shlex.quote(str(release))} ]; do sleep 0.1; done"
    manifest = job(QUEUE_JOB, [task("worker", until_released)], min_available=1, queue=QUEUE)
    submit(stack, tmp, QUEUE_JOB, manifest)
    try:
        wait_for(stack, QUEUE_JOB, "Running")
        # its bound pod counts against the queue (admission's view, from the binding): not deletable
        refused = stack.lahar("queue", "delete", "-n", QUEUE)
        seen_delete = {"delete_while_running": (refused.returncode, refused.stdout + refused.stderr)}
        close = stack.lahar("queue", "operate", "-n", QUEUE, "-a", "close")
        assert close.returncode == 0, close.stderr
        seen = {"closing": eventually(lambda: queue_state(stack, QUEUE), lambda s: s != "Open")}
        seen["job_phase"] = lahar_json(stack, "job", "view", "-N", QUEUE_JOB)["status"]["state"]["phase"]
        late = job("too-late", [task("worker", "true")], min_available=1, queue=QUEUE)
        seen["refused_while_closing"] = apply(stack, tmp, "too-late", late)
    finally:
        release.touch()
    wait_for(stack, QUEUE_JOB, "Completed")
    seen["after_end"] = eventually(lambda: queue_state(stack, QUEUE), lambda s: s == "Closed", 5.0)
    return {"tmp": tmp, "late": late, **seen, **seen_delete}


def test_a_queue_closed_while_its_job_runs_is_closing(closed_while_running) -> None:
    assert closed_while_running["job_phase"] == "Running", "the job ended before the queue was closed"
    assert closed_while_running["closing"] == "Closing"
    answer = closed_while_running["refused_while_closing"]
    assert not answer["accepted"]
    messages = [e["message"] for r in answer["results"] for e in r["errors"]]
    assert messages == [f"can only submit job to a queue in state Open, queue '{QUEUE}' is Closing"]


def test_a_queue_whose_job_runs_cannot_be_deleted(closed_while_running) -> None:
    code, output = closed_while_running["delete_while_running"]
    assert code != 0, output
    assert f"queue '{QUEUE}' can not be deleted because it has 1 allocated pods" in output, output


def test_the_closing_queue_is_closed_once_its_job_ends(closed_while_running) -> None:
    assert closed_while_running["after_end"] == "Closed"


def test_the_closed_queue_refuses_new_jobs(stack, closed_while_running) -> None:
    assert stack.lahar("job", "delete", "-N", QUEUE_JOB).returncode == 0
    assert eventually(lambda: queue_state(stack, QUEUE), lambda s: s == "Closed") == "Closed"
    listed = {q["metadata"]["name"]: q for q in lahar_json(stack, "queue", "list")["items"]}
    assert listed[QUEUE]["status"]["state"] == "Closed"
    answer = apply(stack, closed_while_running["tmp"], "too-late", closed_while_running["late"])
    assert not answer["accepted"]
    messages = [e["message"] for r in answer["results"] for e in r["errors"]]
    assert messages == [f"can only submit job to a queue in state Open, queue '{QUEUE}' is Closed"]

    assert stack.lahar("queue", "operate", "-n", QUEUE, "-a", "open").returncode == 0
    assert eventually(lambda: queue_state(stack, QUEUE), lambda s: s == "Open") == "Open"
