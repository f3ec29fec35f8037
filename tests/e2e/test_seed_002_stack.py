"""Seed 002's experiment on the running stack (issue 13): hollow nodes te1..te8 from
examples/descheduler/seed-002-nodes.yaml, the scheduler with the usage plugin, and the descheduler with
seed 002's thresholds reading the node agent's usage samples (metrics type Lahar), every two seconds.
The low-priority job starts on te3; the stress pod pinned to te3 pushes it past its targets; the
descheduler moves the low-priority pods elsewhere and leaves the stress pod; no pod moves twice; once te3
is below its targets nothing more is evicted. The samples come every half second and average over two,
so the whole experiment takes seconds (LAHAR_USAGE_PERIOD_S, LAHAR_USAGE_WINDOW_S)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Stack, start_stack, stop_stack

pytestmark = pytest.mark.slow  # a stack of its own, and the descheduler's runs to watch

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "descheduler"
JOB = "low-priority-workload"
LOW = [f"{JOB}-workload-{i}" for i in range(3)]
STRESS = "stress-pod-on-te3"
HOT = "te3"
INTERVAL = "2s"
USAGE = {"LAHAR_USAGE_PERIOD_S": "0.5", "LAHAR_USAGE_WINDOW_S": "2"}
QUIET_RUNS = 3  # runs that find te3 below its targets, watched for evictions after the last one
NOTHING_ABOVE = "no node is above its targets"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    running = start_stack(
        home,
        "--sim-nodes-file",
        str(EXAMPLE / "seed-002-nodes.yaml"),
        "--scheduler-conf",
        str(EXAMPLE / "seed-002-scheduler.conf"),
        "--descheduler-policy",
        str(EXAMPLE / "seed-002-policy.yaml"),
        "--descheduling-interval",
        INTERVAL,
        env=USAGE,
    )
    try:
        yield running
    finally:
        stop_stack(running.supervisor)


def lahar_json(stack: Stack, *args: str) -> Any:
    result = stack.lahar(*args, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def history(stack: Stack, name: str) -> list[dict[str, Any]]:
    return lahar_json(stack, "events", name)


def eventually(read: Callable[[], Any], ok: Callable[[Any], bool], what: str, timeout_s: float = 90.0) -> Any:
    """Read until `ok` holds (each read is a CLI call or a file read, paced by a short pause); fails
    naming `what` with the last value read when the time runs out."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while not ok(value):
        assert time.monotonic() < deadline, f"{what} within {timeout_s:.0f}s; last read: {value}"
        time.sleep(0.2)
        value = read()
    return value


def descheduler_log(stack: Stack) -> list[dict[str, Any]]:
    """The descheduler's log lines (JSON), in the order it wrote them."""
    lines = []
    for line in stack.service_log("descheduler").splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by the read
    return lines


def settled(lines: list[dict[str, Any]]) -> bool:
    """Three pods evicted, then QUIET_RUNS runs that found no node above its targets."""
    evicting = [i for i, line in enumerate(lines) if line.get("event") == "evicting"]
    if len(evicting) < len(LOW):
        return False
    quiet = [line for line in lines[evicting[-1] :] if line.get("why") == NOTHING_ABOVE]
    return len(quiet) >= QUIET_RUNS


def of_type(events: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == event_type]


def pod(event: dict[str, Any]) -> str:
    return event["object"].removeprefix("pod/")


def test_seed_002_the_descheduler_moves_the_low_priority_pods_off_te3(stack: Stack) -> None:
    applied = stack.lahar("apply", "-f", str(EXAMPLE / "seed-002-jobs.yaml"))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    started = eventually(
        lambda: of_type(history(stack, JOB), "PodRunning"),
        lambda running: len(running) == len(LOW),
        "the low-priority pods running",
    )
    assert {pod(e): e["payload"]["node"] for e in started} == dict.fromkeys(LOW, HOT)  # they prefer te3

    applied = stack.lahar("apply", "-f", str(EXAMPLE / "seed-002-stress-pod.yaml"))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    lines = eventually(lambda: descheduler_log(stack), settled, "three evictions, then te3 below its targets")

    events = history(stack, JOB)
    evicting = of_type(events, "PodEvicting")
    # no pod is evicted twice, each of the three once, from te3, for te3's load
    assert Counter(pod(e) for e in evicting) == Counter(LOW), evicting
    for e in evicting:
        assert e["payload"]["node"] == HOT
        assert e["payload"]["reason"].startswith(
            "deschedule: LoadAware: node te3 is above its targetThresholds"
        )
    # each runs elsewhere now: its last binding is after its eviction, on another node, and it runs
    for name in LOW:
        evicted_at = next(e["seq"] for e in evicting if pod(e) == name)
        rebound = [e for e in of_type(events, "PodBound") if pod(e) == name and e["seq"] > evicted_at]
        assert len(rebound) == 1 and rebound[0]["payload"]["node"] != HOT, rebound
        running = [e for e in of_type(events, "PodRunning") if pod(e) == name and e["seq"] > evicted_at]
        assert [e["payload"]["node"] for e in running] == [rebound[0]["payload"]["node"]]
    # the pinned pod: bound to te3, running there, never evicted (the binder's events about a plain pod
    # are in the history of the PodGroup lahar gave it, its own reports in the pod's)
    stress = history(stack, STRESS)
    (group,) = [e["object"].removeprefix("podgroup/") for e in of_type(stress, "PodGroupCreated")]
    decided = history(stack, group)
    assert [(pod(e), e["payload"]["node"]) for e in of_type(decided, "PodBound")] == [(STRESS, HOT)]
    assert [e["payload"]["node"] for e in of_type(stress, "PodRunning")] == [HOT]
    for events_of_stress in (stress, decided):
        assert not of_type(events_of_stress, "PodEvicting") and not of_type(events_of_stress, "PodTerminated")
    # the descheduler sent exactly what the binder committed, and nothing once te3 was below its targets
    sent = [line for line in lines if line.get("event") == "evicting"]
    assert Counter(line["pod"] for line in sent) == Counter(f"default/{name}" for name in LOW)
    first_quiet = next(
        i
        for i, line in enumerate(lines)
        if line.get("why") == NOTHING_ABOVE and any(x.get("event") == "evicting" for x in lines[:i])
    )
    assert not [line for line in lines[first_quiet:] if line.get("event") == "evicting"]
