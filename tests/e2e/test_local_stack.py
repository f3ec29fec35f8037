"""The whole system on this machine: `lahar up`'s supervisor with every service as its own process and a
process-runtime node agent. Jobs are applied with the CLI and run to completion; the event history, the
etcd read model and the pods' logs are checked through the CLI as a user would."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a local stack of its own and jobs run to completion on it: seconds a test

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def lahar_json(stack, *args: str):
    result = stack.lahar(*args, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def completed_jobs(stack):
    for example in ("distcc-job.yaml", "gang-job.yaml"):
        result = stack.lahar("apply", "-f", str(EXAMPLES / example))
        assert result.returncode == 0, result.stderr
    for job in ("distcc", "gang-demo"):
        waited = stack.lahar("wait", "job", job, "--for", "Completed", "--timeout", "90s", timeout_s=120)
        assert waited.returncode == 0, waited.stdout + waited.stderr + stack.service_log("node-agent")[-3000:]
    return stack


def test_the_jobs_complete_and_the_read_model_shows_it(completed_jobs) -> None:
    job = lahar_json(completed_jobs, "get", "job", "distcc")
    assert job["status"]["state"]["phase"] == "Completed"
    assert job["status"]["succeeded"] == 11
    pods = lahar_json(completed_jobs, "get", "pods")["items"]
    distcc_pods = [p for p in pods if p["metadata"]["name"].startswith("distcc-")]
    assert len(distcc_pods) == 11
    assert {p["status"]["phase"] for p in distcc_pods} == {"Succeeded"}
    assert all(p["spec"]["nodeName"] for p in distcc_pods)
    queue = lahar_json(completed_jobs, "get", "queue", "distcc")
    assert queue["status"]["state"] == "Open"


def test_the_master_read_the_workers_from_the_svc_hosts_file(completed_jobs) -> None:
    result = completed_jobs.lahar("logs", "distcc-master-0")
    assert result.returncode == 0, result.stderr
    hosts = result.stdout.split("compiling with", 1)[1].split()
    assert hosts == [f"distcc-worker-{i}.distcc" for i in range(10)]
    gang = completed_jobs.lahar("logs", "gang-demo-worker-2")
    assert "gang member 2" in gang.stdout


def test_the_event_history_tells_the_whole_story_once(completed_jobs) -> None:
    history = lahar_json(completed_jobs, "events", "distcc")
    types = Counter(e["type"] for e in history)
    assert types["JobSubmitted"] == 1
    assert types["PodGroupCreated"] == 1
    assert types["PodCreated"] == 11
    assert types["PodBound"] == 11
    assert types["PodRunning"] == 11
    assert types["PodSucceeded"] == 11
    phases = [e["payload"]["phase"] for e in history if e["type"] == "JobStatusChanged"]
    assert phases[-1] == "Completed"
    assert phases.count("Completed") == 1
    order = [e["type"] for e in history]
    assert order.index("JobSubmitted") < order.index("PodGroupCreated") < order.index("PodCreated")
    assert order.index("PodCreated") < order.index("PodBound") < order.index("PodRunning")
    # gang scheduling: the first plan binds at least minAvailable (6) pods together; the rest follow
    plans = Counter(e["payload"]["plan"] for e in history if e["type"] == "PodBound")
    first_plan = next(e["payload"]["plan"] for e in history if e["type"] == "PodBound")
    assert plans[first_plan] >= 6
