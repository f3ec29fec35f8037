"""What `lahar status` says about a process, and how soon the supervisor restarts one that exited."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from services.cli.stack.backoff import FIRST_S, MAX_S, STABLE_S, restart_delay
from services.cli.stack.health import DEAD, UNHEALTHY, classify
from services.cli.stack.layout import (
    RESTARTING,
    RUNNING,
    STARTING,
    RunningServer,
    RunningService,
    StackState,
    process_alive,
)


def test_a_process_that_answers_its_health_check_is_running_whatever_the_record_says() -> None:
    for phase in (STARTING, RUNNING, RESTARTING):
        assert classify(phase, alive=True, healthy=True) == RUNNING


def test_a_process_the_supervisor_is_bringing_up_is_starting_or_restarting_until_healthy() -> None:
    for alive in (True, False):
        assert classify(STARTING, alive=alive, healthy=False) == STARTING
        assert classify(RESTARTING, alive=alive, healthy=False) == RESTARTING


def test_a_process_recorded_running_is_unhealthy_while_it_runs_without_answering_and_dead_once_gone() -> None:
    assert classify(RUNNING, alive=True, healthy=False) == UNHEALTHY
    assert classify(RUNNING, alive=False, healthy=False) == DEAD


def test_restarts_back_off_while_a_process_keeps_dying_and_start_over_after_a_stable_run() -> None:
    delays = []
    delay = 0.0
    for _ in range(8):
        delay = restart_delay(delay, ran_s=1.0)
        delays.append(delay)
    assert delays[:4] == [FIRST_S, 2 * FIRST_S, 4 * FIRST_S, 8 * FIRST_S]
    assert delays[-1] == MAX_S and max(delays) == MAX_S
    assert restart_delay(MAX_S, ran_s=STABLE_S) == FIRST_S


def _state_letter(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def test_an_exited_child_not_yet_reaped_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert process_alive(child.pid)
        child.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _state_letter(child.pid) != "Z":  # the kernel marks it a zombie within moments
            assert time.monotonic() < deadline, "the killed child never became a zombie"
        os.kill(child.pid, 0)  # a zombie still passes the PID check ...
        assert not process_alive(child.pid)  # ... but not this one
    finally:
        child.kill()
        child.wait()
    assert not process_alive(child.pid)
    assert not process_alive(0)


def test_the_record_round_trips_with_its_servers_and_phases(tmp_path) -> None:
    state = StackState(supervisor_pid=1, home=str(tmp_path), nats_url="nats://127.0.0.1:1")
    nats = RunningServer("nats-server", 11, "nats://127.0.0.1:1", "http://h/healthz", "n.log", 2, RESTARTING)
    state.servers = [nats]
    state.services = [RunningService("binder", 12, 3000, "b.log", 1, RUNNING)]
    state.write(tmp_path)
    read = StackState.read(tmp_path)
    assert read == state
    assert (read.nats_pid, read.etcd_pid) == (11, 0)
