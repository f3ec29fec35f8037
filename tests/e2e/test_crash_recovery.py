"""Crash recovery of the whole stack: every service is SIGKILLed in turn in the middle of a 200-pod
workload on sim nodes, and every job still finishes while the log keeps its invariants (log_invariants):
no accepted job lost, no pod bound twice, no node over-committed, no fact recorded twice.

The supervisor of `lahar up` restarts a killed service on the same port; the test waits until stack.json
shows the new process and its /healthz answers before killing the next one. A job is applied just before
each kill and another one while the killed service is down (retried until admission accepts it), so that
jobs accepted around an admission restart are among those that must complete.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from e2e.conftest import Stack, operator_bus, start_stack, stop_stack
from e2e.log_invariants import (
    Violation,
    binding_violations,
    duplicate_facts,
    lost_jobs,
    object_key,
    overcommit_violations,
    summary,
)
from support.log_records import events_of

from services.cli.stack.layout import StackState, process_alive
from services.cli.stack.supervisor import service_health, service_healthy
from shared.bus.subjects import EVENTS_STREAM
from shared.client import LaharClient
from shared.runner_types import Event

pytestmark = pytest.mark.slow  # one workload through a kill of every service: minutes

SIM_NODES = 8  # 32 cpu each: 64 pods of 4 cpu run at once, so 200 pods take a few waves
KILL_ORDER = ("admission", "job-controller", "queue-controller", "binder", "scheduler-0", "node-agent")
RESTART_TIMEOUT_S = 60.0
APPLY_TIMEOUT_S = 60.0
COMPLETION_TIMEOUT_S = 90.0  # the workload ends some 20 s after the last kill
UNDERWAY_TIMEOUT_S = 60.0
UNDERWAY_RUNNING = 32  # pods started before the first kill


# --- the workload ------------------------------------------------------------------------------------


def job(name: str, replicas: int, min_available: int, duration_s: int) -> dict[str, Any]:
    """A Volcano Job whose pods the sim runtime runs for duration_s (the annotation is inherited)."""
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "work",
                    "image": "busybox",
                    "command": ["sh", "-c", "true"],
                    "resources": {"requests": {"cpu": "4", "memory": "1Gi"}},
                }
            ],
        }
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": {"lahar.dev/sim-duration": f"{duration_s}s"}},
        "spec": {
            "minAvailable": min_available,
            "queue": "default",
            "tasks": [{"name": "worker", "replicas": replicas, "template": template}],
        },
    }


def initial_jobs() -> list[dict[str, Any]]:
    """20 jobs of 10 pods: gangs of 10, 5, 3 and 1, running 6 to 12 s each."""
    return [job(f"load-{i:02d}", 10, (10, 5, 3, 1)[i % 4], 6 + 2 * (i % 4)) for i in range(20)]


@dataclass
class Kill:
    service: str
    old_pid: int
    new_pid: int
    at: float  # epoch seconds, comparable with the events' times (same machine)
    restarted_in_s: float


@dataclass
class CrashRun:
    stack: Stack
    accepted: list[str]  # namespace/name of every job admission accepted
    kills: list[Kill]
    final: StackState
    phases: dict[str, str]  # job -> the phase its wait ended on ("" if it timed out unseen)
    events: list[Event]

    def report(self, violations: list[Violation] | None = None) -> str:
        restarts = {s.name: s.restarts for s in self.final.services}
        lines = [
            summary(self.events),
            f"restarts {restarts}",
            "kills: "
            + ", ".join(
                f"{k.service} (pid {k.old_pid} -> {k.new_pid} in {k.restarted_in_s:.1f}s)" for k in self.kills
            ),
        ]
        lines += [str(v) for v in (violations or [])[:20]]
        # a service that died again after its restart says why in its log, right after each restart
        killed = Counter(k.service for k in self.kills)
        for name, count in restarts.items():
            if count != killed[name]:
                lines.append(f"--- {name}'s log after its restarts:")
                lines += after_restarts(self.stack.service_log(name))
        return "\n".join(lines)


def after_restarts(log: str, lines_each: int = 6, restarts: int = 8) -> list[str]:
    """The first lines the service wrote after each of its last restarts (the supervisor marks them)."""
    lines = log.splitlines()
    marks = [i for i, line in enumerate(lines) if line.startswith("--- lahar:")][-restarts:]
    return [line[:500] for i in marks for line in lines[i : i + 1 + lines_each]]


# --- driving the stack -------------------------------------------------------------------------------


def apply_until_accepted(stack: Stack, docs: list[dict[str, Any]], name: str) -> list[str]:
    """Apply a manifest, retrying while admission cannot answer (it may be the service just killed)."""
    path = stack.home / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    deadline = time.monotonic() + APPLY_TIMEOUT_S
    while True:
        result = stack.lahar("apply", "-f", str(path), timeout_s=APPLY_TIMEOUT_S)
        if result.returncode == 0:
            return [f"default/{doc['metadata']['name']}" for doc in docs]
        if time.monotonic() > deadline:
            pytest.fail(f"{name} not accepted within {APPLY_TIMEOUT_S:.0f}s: {result.stdout}{result.stderr}")
        time.sleep(0.2)


def kill_and_await_restart(stack: Stack, name: str) -> Kill:
    """SIGKILL the service's process group, then wait until its successor is recorded and healthy."""
    state = StackState.read(stack.home)
    assert state is not None, "stack.json is gone"
    record = next(s for s in state.services if s.name == name)
    at = time.time()
    os.killpg(record.pid, signal.SIGKILL)
    started = time.monotonic()
    deadline = started + RESTART_TIMEOUT_S
    while time.monotonic() < deadline:
        now = StackState.read(stack.home)
        current = None if now is None else next(s for s in now.services if s.name == name)
        if current is not None and current.pid != record.pid and service_healthy(current.metrics_port):
            return Kill(name, record.pid, current.pid, at, time.monotonic() - started)
        time.sleep(0.1)
    log = stack.service_log(name)[-3000:]
    pytest.fail(f"{name} was not restarted and healthy within {RESTART_TIMEOUT_S:.0f}s:\n{log}")


async def read_log(state: StackState) -> list[Event]:
    bus = await operator_bus(state, "crash-recovery-test")
    try:
        return [event async for record in bus.replay(EVENTS_STREAM) for event in events_of(record)]
    finally:
        await bus.close()


async def count_events(state: StackState, event_type: str) -> int:
    return sum(event.type == event_type for event in await read_log(state))


def wait_underway(stack: Stack) -> None:
    deadline = time.monotonic() + UNDERWAY_TIMEOUT_S
    while (running := asyncio.run(count_events(stack.state, "PodRunning"))) < UNDERWAY_RUNNING:
        if time.monotonic() > deadline:
            pytest.fail(f"only {running} pods started within {UNDERWAY_TIMEOUT_S:.0f}s")
        time.sleep(0.5)


async def wait_jobs(state: StackState, jobs: list[str]) -> dict[str, str]:
    """What `lahar wait job X --for Completed` reports, for every job at once (the same client call)."""
    async with await LaharClient.connect(
        state.nats_url, state.etcd_endpoint, creds=state.admin_creds or None, tls_ca=state.tls_ca or None
    ) as client:
        results = await asyncio.gather(
            *(client.wait_job(key.split("/")[1], "default", timeout_s=COMPLETION_TIMEOUT_S) for key in jobs)
        )
    return {key: result.phase for key, result in zip(jobs, results, strict=True)}


def running_at(events: list[Event], moment: float) -> int:
    """Pods whose run had started and not yet ended at `moment` (by the events' own times)."""
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    for event in events:
        if event.type == "PodRunning":
            started[event.causation_id or object_key(event)] = event.time
        elif event.type in ("PodSucceeded", "PodFailed", "PodTerminated"):
            ended[event.causation_id or object_key(event)] = event.time
    return sum(t <= moment < ended.get(run, float("inf")) for run, t in started.items())


# --- the run -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrashRun]:
    home = tmp_path_factory.mktemp("lahar-crash")
    stack = start_stack(home, "--sim-nodes", str(SIM_NODES))
    final: StackState | None = None
    try:
        accepted = apply_until_accepted(stack, initial_jobs(), "initial")
        wait_underway(stack)
        kills = []
        for service in KILL_ORDER:
            accepted += apply_until_accepted(stack, [job(f"before-{service}", 4, 2, 4)], f"before-{service}")
            kills.append(kill_and_await_restart(stack, service))
            accepted += apply_until_accepted(stack, [job(f"after-{service}", 4, 2, 4)], f"after-{service}")
        phases = asyncio.run(wait_jobs(stack.state, accepted))
        events = asyncio.run(read_log(stack.state))
        final = StackState.read(home)
        assert final is not None
        yield CrashRun(stack, accepted, kills, final, phases, events)
    finally:
        final = final or StackState.read(home)
        stop_stack(stack.supervisor)
        if final is not None:
            leftovers = [s.name for s in final.services if process_alive(s.pid)]
            assert not leftovers, f"processes left running after the stack stopped: {leftovers}"


def test_every_killed_service_came_back_in_the_middle_of_the_workload(crash_run: CrashRun) -> None:
    # one restart per kill: a service that died again on its own after its restart is crash-looping
    restarts = {s.name: s.restarts for s in crash_run.final.services}
    assert restarts == dict(Counter(k.service for k in crash_run.kills)), crash_run.report()
    idle = [k.service for k in crash_run.kills if running_at(crash_run.events, k.at) == 0]
    assert not idle, f"no pod was running when these were killed: {idle}\n{crash_run.report()}"


def test_every_accepted_job_completes(crash_run: CrashRun) -> None:
    not_completed = {job: phase for job, phase in crash_run.phases.items() if phase != "Completed"}
    violations = lost_jobs(crash_run.events, crash_run.accepted)
    # runs die with a sim node agent; its successor reports each run it had started as lost: name the
    # unfinished jobs whose pods were failed that way
    lost_runs = Counter(
        e.correlation_id
        for e in crash_run.events
        if e.type == "PodFailed" and e.payload.get("reason") == "Lost"
    )
    lost = {job: lost_runs[job] for job in not_completed if lost_runs[job]}
    assert not violations and not not_completed, (
        f"jobs that did not complete (per `lahar wait`): {not_completed}; of them, pods failed as Lost by "
        f"the node agent's restart: {lost}\n{crash_run.report(violations)}"
    )


def test_no_pod_is_bound_twice_or_when_not_pending(crash_run: CrashRun) -> None:
    violations = binding_violations(crash_run.events)
    assert not violations, crash_run.report(violations)


def test_no_node_is_over_committed(crash_run: CrashRun) -> None:
    violations = overcommit_violations(crash_run.events)
    assert not violations, crash_run.report(violations)


def test_no_fact_is_recorded_twice(crash_run: CrashRun) -> None:
    violations = duplicate_facts(crash_run.events)
    assert not violations, crash_run.report(violations)


# --- restarts on an idle stack -----------------------------------------------------------------------

QUIET_S = 4.0  # longer than every periodic activity (1 s sessions and timers, 2 s heartbeats)
QUIET_TIMEOUT_S = 60.0


async def last_seq(state: StackState) -> int:
    bus = await operator_bus(state, "crash-recovery-test")
    try:
        return await bus.last_seq(EVENTS_STREAM)
    finally:
        await bus.close()


def quiet_log(stack: Stack) -> int:
    """The log's last sequence once it has not moved for QUIET_S: the stack has nothing left to say."""
    deadline = time.monotonic() + QUIET_TIMEOUT_S
    seq, since = asyncio.run(last_seq(stack.state)), time.monotonic()
    while time.monotonic() - since < QUIET_S:
        if time.monotonic() > deadline:
            pytest.fail(f"the log kept growing for {QUIET_TIMEOUT_S:.0f}s (now at {seq})")
        time.sleep(0.2)
        now = asyncio.run(last_seq(stack.state))
        if now != seq:
            seq, since = now, time.monotonic()
    return seq


def await_following(stack: Stack, name: str, pid: int) -> None:
    """Until the restarted service has replayed the log and follows it (its decisions are all taken)."""
    deadline = time.monotonic() + RESTART_TIMEOUT_S
    while time.monotonic() < deadline:
        state = StackState.read(stack.home)
        record = None if state is None else next(s for s in state.services if s.name == name)
        health = None if record is None or record.pid != pid else service_health(record.metrics_port)
        if health is not None and health.get("phase") == "following":
            return
        time.sleep(0.1)
    pytest.fail(f"{name} did not follow the log within {RESTART_TIMEOUT_S:.0f}s")


def test_a_service_restarted_on_an_idle_stack_appends_nothing(crash_run: CrashRun) -> None:
    # the workload is over (every job waited for): the stack is idle once its log is quiet
    stack = crash_run.stack
    for service in KILL_ORDER:
        before = quiet_log(stack)
        kill = kill_and_await_restart(stack, service)
        await_following(stack, service, kill.new_pid)
        after = quiet_log(stack)
        appended = asyncio.run(read_log(stack.state))[before:]
        assert after == before, f"{service}'s restart appended " + ", ".join(
            f"{e.type} {object_key(e)}" for e in appended[:20]
        )
