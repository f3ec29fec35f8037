"""`lahar advise` on a recorded workload, end to end: a stack of hollow nodes runs a few jobs in a queue of
its own, arriving at different times; `lahar export workload` writes them out with their arrival and
observed run times; `lahar simulate` and `lahar advise` replay the file, and `lahar advise --from-log`
reads the same workload straight from the log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from e2e.conftest import Stack, start_stack, stop_stack

from contracts.parse import duration_seconds
from services.cli.stack.layout import process_alive

pytestmark = pytest.mark.slow  # a local stack of its own, and jobs run to completion on it

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 2, reclaimable: true}
"""
JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: %(name)s
  annotations: {lahar.dev/sim-duration: %(seconds)ss}
spec:
  queue: research
  minAvailable: %(pods)s
  tasks:
  - name: worker
    replicas: %(pods)s
    template:
      spec:
        containers:
        - {name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}
"""
JOBS = (("first", 2, 1), ("second", 3, 2), ("third", 1, 1))  # name, pods, seconds


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    running = start_stack(home, "--sim-nodes", "2")
    try:
        yield running
    finally:
        stop_stack(running.supervisor)
        leftovers = [s.name for s in running.state.services if process_alive(s.pid)]
        assert not leftovers, f"processes left running after the stack stopped: {leftovers}"


def ok(stack: Stack, *args: str, stdin: str | None = None, code: int = 0) -> str:
    result = stack.lahar(*args, stdin=stdin)
    assert result.returncode == code, f"lahar {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


def test_a_recorded_workload_is_exported_and_advised_on(stack: Stack, tmp_path: Path) -> None:
    ok(stack, "apply", "-f", "-", stdin=QUEUE)
    for name, pods, seconds in JOBS:
        ok(stack, "apply", "-f", "-", stdin=JOB % {"name": name, "pods": pods, "seconds": seconds})
        # each job arrives once the one before it has finished: arrival times that differ
        ok(stack, "wait", "job", name, "--for", "Completed", "--timeout", "60s")

    exported = tmp_path / "recorded.yaml"
    ok(stack, "export", "workload", "-o", str(exported))
    docs = [d for d in yaml.safe_load_all(exported.read_text()) if d]
    assert [d["kind"] for d in docs] == ["Node", "Node", "Queue", "Job", "Job", "Job"]
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "Node"} == {"sim-0", "sim-1"}
    (queue,) = [d for d in docs if d["kind"] == "Queue"]
    assert (queue["metadata"]["name"], queue["spec"]["weight"]) == ("research", 2)
    jobs = [d for d in docs if d["kind"] == "Job"]
    assert [j["metadata"]["name"] for j in jobs] == ["first", "second", "third"]
    arrivals = [duration_seconds(j["metadata"]["annotations"]["lahar.dev/sim-arrival"]) for j in jobs]
    assert arrivals[0] == 0.0 and arrivals[0] < arrivals[1] < arrivals[2]
    for job, (_, _, seconds) in zip(jobs, JOBS, strict=True):
        (task,) = job["spec"]["tasks"]
        observed = duration_seconds(task["template"]["metadata"]["annotations"]["lahar.dev/sim-duration"])
        # the agent's start and end stamps, a timer apart: within a tenth of a second below, a few above
        assert seconds - 0.1 <= observed < seconds + 5, (job["metadata"]["name"], observed)

    simulated = json.loads(ok(stack, "simulate", "--until-idle", "-f", str(exported), "-o", "json"))
    assert simulated["outcome"] == "idle"
    assert {key: job["phase"] for key, job in simulated["jobs"].items()} == {
        f"default/{name}": "Completed" for name, _, _ in JOBS
    }

    advice = json.loads(ok(stack, "advise", "-f", str(exported), "-o", "json"))
    finishing = [c for c in advice["candidates"] if c["outcome"] == "finished"]
    assert (
        advice["recommended"] == advice["candidates"][0]["conf"] and finishing[0] == advice["candidates"][0]
    )
    assert all(c["jobs"] == 3 for c in advice["candidates"])
    assert {c["conf"] for c in finishing} >= {"default", "binpack", "fifo"}
    assert advice["why"].startswith(f"Use {advice['recommended']}: ")

    inline = json.loads(
        ok(stack, "advise", "--from-log", "--conf", "default", "--conf", "pod-by-pod", "-o", "json")
    )
    assert [c["jobs"] for c in inline["candidates"]] == [3, 3]
    assert inline["recommended"] == "default"
    # the same workload either way: the default's figures agree
    from_file = next(c for c in advice["candidates"] if c["conf"] == "default")
    assert inline["candidates"][0]["makespan_s"] == from_file["makespan_s"]
