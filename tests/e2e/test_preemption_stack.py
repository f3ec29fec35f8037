"""Transactional preemption on a running stack of two hollow 4-core nodes, with preempt and reclaim in the
scheduler's conf (examples/preemption/preempt.conf): `low` (priority 10) fills both nodes. A gang of
priority 100 that could not fit even if everything evictable were evicted (three 4-core pods) evicts
nothing, and its PodGroup says why. One that fits (two 2-core pods, minAvailable 2) evicts exactly one
pod of `low`: the evictions and the room reserved for its pods are one plan in the event log, and its
pods are then bound into that room. Everything goes through the CLI and the log, as a user would see it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.test_crash_recovery import read_log

from tests.e2e.conftest import Stack, start_stack, stop_stack

pytestmark = pytest.mark.slow  # a stack of its own

CONF = Path(__file__).resolve().parents[2] / "examples" / "preemption" / "preempt.conf"
NODES = """
apiVersion: v1
kind: Node
metadata: {name: pre-0}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: pre-1}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"""
CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 100
"""


def job(name: str, priority: str, replicas: int, cpu: int) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  annotations: {{lahar.dev/sim-duration: 3600s}}
spec:
  priorityClassName: {priority}
  minAvailable: {replicas if priority == "high" else 1}
  tasks:
  - name: main
    replicas: {replicas}
    template:
      spec:
        priorityClassName: {priority}
        restartPolicy: Never
        containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    nodes = home / "nodes.yaml"
    nodes.write_text(NODES)
    running = start_stack(home, "--sim-nodes-file", str(nodes), "--scheduler-conf", str(CONF))
    try:
        yield running
    finally:
        stop_stack(running.supervisor)


def apply(stack: Stack, text: str) -> None:
    result = stack.lahar("apply", "-f", "-", "-o", "json", stdin=text)
    assert result.returncode == 0 and json.loads(result.stdout)["accepted"], result.stdout + result.stderr


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


def condition(stack: Stack, podgroup: str, kind: str) -> dict[str, Any] | None:
    conditions = get(stack, "podgroup", podgroup).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c.get("type") == kind), None)


def log(stack: Stack, *types: str) -> list[Any]:
    return [e for e in asyncio.run(read_log(stack.state)) if e.type in types]


def test_preemption_evicts_nothing_or_exactly_what_it_needs_in_one_plan(stack: Stack) -> None:
    apply(stack, CLASSES)
    apply(stack, job("low", "low", 2, 4))
    waited = stack.lahar("wait", "job", "low", "--for", "Running", "--timeout", "90s", timeout_s=120)
    assert waited.returncode == 0, waited.stdout + waited.stderr

    # three 4-core pods on two 4-core nodes: no eviction could make room for the whole gang
    apply(stack, job("huge", "high", 3, 4))
    why = until(
        lambda: (c := condition(stack, "huge", "Preempting")) and c.get("reason") == "WouldNotMakeRoom" and c,
        "huge's Preempting condition",
    )
    assert why["status"] == "False"
    assert why["message"].startswith("preempt would not make room, nothing evicted: ")
    assert log(stack, "PodEvicting", "PodNominated") == []
    deleted = stack.lahar("delete", "job", "huge", "-o", "json")
    assert json.loads(deleted.stdout)["accepted"], deleted.stdout + deleted.stderr
    gone = stack.lahar("wait", "job", "huge", "--for", "Deleted", "--timeout", "60s", timeout_s=90)
    assert gone.returncode == 0, gone.stdout + gone.stderr

    # two 2-core pods that must run together: one 4-core victim makes room for both
    apply(stack, job("fits", "high", 2, 2))
    waited = stack.lahar("wait", "job", "fits", "--for", "Running", "--timeout", "90s", timeout_s=120)
    history = stack.lahar("events", "fits").stdout
    assert waited.returncode == 0, waited.stdout + waited.stderr + history

    events = log(stack, "PodEvicting", "PodNominated", "PodBound")
    evicting = [e for e in events if e.type == "PodEvicting"]
    assert len(evicting) == 1, evicting
    (victim,) = evicting
    assert victim.name.startswith("low-main-")
    assert victim.data.reason.startswith("preempt: for default/fits-main-")
    nominated = [e for e in events if e.type == "PodNominated"]
    assert sorted(e.name for e in nominated) == ["fits-main-0", "fits-main-1"]
    # the victim and the room it frees: one plan, committed as one batch
    assert {e.data.plan for e in nominated} == {victim.data.plan}
    assert {e.data.node for e in nominated} == {victim.data.node}
    # then the gang is bound where its room was made, by a later plan
    bound = {e.name: e.data for e in events if e.type == "PodBound" and e.name.startswith("fits-")}
    assert {name: b.node for name, b in bound.items()} == {e.name: e.data.node for e in nominated}
    assert {b.plan for b in bound.values()} != {victim.data.plan}
    reserved = condition(stack, "fits", "Preempting")
    assert reserved is not None and reserved["reason"] == "ReservationBound", reserved
