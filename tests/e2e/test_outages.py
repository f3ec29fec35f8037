"""nats-server and etcd SIGKILLed under a gang workload on hollow nodes: the supervisor brings each back on
its ports and data directory, `lahar status` tells the outage truthfully while it lasts, no service exits
because of it (they wait and retry), and every job finishes with the log's invariants kept.

A server restarts within a second, too soon to look at; so the test keeps the killed server's port taken
(accepting and closing every connection) for a while: the supervisor's restarts fail, back off and go
on until the port is free again. etcd stays away longer than the leaders' lease (2 s), so the binder and
both controllers lose their terms and must campaign again. NATS stays away longer than the binder's node
timeout (10 s): the binder heard no heartbeat all that time, but could not have, so it must declare no
node NotReady and no pod lost (it judges nodes only on time it could hear them, docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from e2e.conftest import Stack, start_stack, stop_stack
from e2e.log_invariants import binding_violations, duplicate_facts, lost_jobs, summary
from e2e.test_crash_recovery import KILL_ORDER, apply_until_accepted, count_events, job, read_log, wait_jobs

from services.cli.stack.layout import ETCD, NATS, StackState, process_alive
from shared.runner_types import Event

pytestmark = pytest.mark.slow

SIM_NODES = 4
# how long each server's port stays taken after its kill: NATS longer than the binder's node timeout (10 s)
HELD_S = {NATS: 12.0, ETCD: 7.0}
UNDERWAY_TIMEOUT_S = 60.0
BACK_TIMEOUT_S = 60.0


class PortHolder:
    """Takes a dead server's port and answers every connection by closing it, until released."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        deadline = time.monotonic() + 5
        while True:  # the killed server's listener goes with it a moment after the signal
            try:
                self.sock.bind(("127.0.0.1", port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.released = threading.Event()
        self.thread = threading.Thread(target=self._refuse, daemon=True)
        self.thread.start()

    def _refuse(self) -> None:
        while not self.released.is_set():
            with contextlib.suppress(TimeoutError):
                connection, _ = self.sock.accept()
                connection.close()

    def release(self) -> None:
        self.released.set()
        self.thread.join()
        self.sock.close()


def status(stack: Stack) -> tuple[int, dict[str, dict[str, Any]]]:
    result = stack.lahar("status", "-o", "json")
    rows = json.loads(result.stdout)["processes"]
    return result.returncode, {row["name"]: row for row in rows}


@dataclass
class Outage:
    server: str
    old_pid: int
    new_pid: int
    status_during: dict[str, dict[str, Any]]
    status_code_during: int
    status_after: dict[str, dict[str, Any]]
    at: float  # epoch seconds
    back_at: float


def wait_underway(stack: Stack, running: int) -> None:
    deadline = time.monotonic() + UNDERWAY_TIMEOUT_S
    while asyncio.run(count_events(stack.state, "PodRunning")) < running:
        if time.monotonic() > deadline:
            pytest.fail(f"fewer than {running} pods started within {UNDERWAY_TIMEOUT_S:.0f}s")
        time.sleep(0.3)


def outage(stack: Stack, name: str) -> Outage:
    """SIGKILL the server by the PID the stack recorded, keep it away for HELD_S, look at `lahar status`
    meanwhile, and wait until the supervisor has it running again."""
    state = StackState.read(stack.home)
    assert state is not None
    record = state.server(name)
    assert record is not None
    at = time.time()
    os.kill(record.pid, signal.SIGKILL)
    holder = PortHolder(int(record.url.rsplit(":", 1)[1]))
    try:
        time.sleep(HELD_S[name])  # the outage itself, not a wait for a condition
        code_during, during = status(stack)
    finally:
        holder.release()
    deadline = time.monotonic() + BACK_TIMEOUT_S
    while True:
        _, after = status(stack)
        if after[name]["state"] == "running" and after[name]["pid"] != record.pid:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"{name} not back within {BACK_TIMEOUT_S:.0f}s: {after[name]}")
        time.sleep(0.2)
    return Outage(name, record.pid, after[name]["pid"], during, code_during, after, at, time.time())


@dataclass
class OutageRun:
    accepted: list[str]
    outages: list[Outage]
    phases: dict[str, str]
    events: list[Event]
    final: StackState

    def report(self) -> str:
        restarts = {s.name: s.restarts for s in self.final.services}
        return f"{summary(self.events)}\nrestarts {restarts}\n" + "\n".join(
            f"{o.server}: pid {o.old_pid} -> {o.new_pid}, during {o.status_during[o.server]}"
            for o in self.outages
        )


@pytest.fixture(scope="module")
def outage_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutageRun]:
    home = tmp_path_factory.mktemp("lahar-outages")
    stack = start_stack(home, "--sim-nodes", str(SIM_NODES))
    final: StackState | None = None
    try:
        accepted: list[str] = []
        outages = []
        for round_, server in enumerate((NATS, ETCD)):
            gangs = [job(f"{server}-{i}", 4, 4, 4 + i % 3) for i in range(4)]
            accepted += apply_until_accepted(stack, gangs, f"before-{server}")
            wait_underway(stack, 4 * (round_ + 1))
            outages.append(outage(stack, server))
        phases = asyncio.run(wait_jobs(stack.state, accepted))
        events = asyncio.run(read_log(stack.state))
        final = StackState.read(home)
        assert final is not None
        yield OutageRun(accepted, outages, phases, events, final)
    finally:
        final = final or StackState.read(home)
        stop_stack(stack.supervisor)
        if final is not None:
            leftovers = [p.name for p in (*final.services, *final.servers) if process_alive(p.pid)]
            assert not leftovers, f"processes left running after the stack stopped: {leftovers}"


def test_status_showed_each_outage_while_it_lasted_and_the_server_back_after(outage_run: OutageRun) -> None:
    for down in outage_run.outages:
        assert down.status_during[down.server]["state"] == "restarting", down.status_during
        assert down.status_code_during == 1  # not every process running
        assert down.status_during[down.server]["restarts"] >= 1
        assert down.status_after[down.server]["state"] == "running"
        assert down.new_pid != down.old_pid and not process_alive(down.old_pid)  # reaped, not a zombie
    # while NATS was away, the services were up but could not say they were healthy
    during_nats = outage_run.outages[0].status_during
    assert {row["state"] for name, row in during_nats.items() if name not in (NATS, ETCD)} == {"unhealthy"}


def test_no_service_exited_because_of_an_outage(outage_run: OutageRun) -> None:
    restarts = {s.name: s.restarts for s in outage_run.final.services}
    assert restarts == dict.fromkeys(KILL_ORDER, 0), outage_run.report()  # every service, none restarted


def test_every_job_completes(outage_run: OutageRun) -> None:
    not_completed = {job: phase for job, phase in outage_run.phases.items() if phase != "Completed"}
    violations = lost_jobs(outage_run.events, outage_run.accepted)
    assert not not_completed and not violations, f"{not_completed}\n{outage_run.report()}"


def test_a_nats_outage_longer_than_the_node_timeout_lost_no_node(outage_run: OutageRun) -> None:
    nats, etcd = outage_run.outages
    declared = Counter(
        e.type
        for e in outage_run.events
        if e.type in ("NodeNotReady", "PodLost") and nats.at <= e.time < etcd.at
    )
    assert not declared, f"the binder's failure detector fired after the NATS outage: {declared}"


def test_no_fact_is_recorded_twice_and_no_pod_bound_twice(outage_run: OutageRun) -> None:
    violations = duplicate_facts(outage_run.events) + binding_violations(outage_run.events)
    assert not violations, outage_run.report()
