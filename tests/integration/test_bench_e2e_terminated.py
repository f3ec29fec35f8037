"""`lahar bench e2e` stopped with SIGTERM (a CI timeout, a `kill`) stops the stack it started, as Ctrl-C
does, instead of leaving its supervisor, servers and services running."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services.cli.stack.layout import StackState, process_alive

pytestmark = pytest.mark.slow  # starts a small stack
REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 120.0


def test_a_terminated_bench_stops_its_stack() -> None:
    command = ["bench", "e2e", "--nodes", "5", "--jobs", "2000", "--keep-home", "-o", "json"]
    bench = subprocess.Popen(
        [sys.executable, "-m", "services.cli.main", *command],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    home: Path | None = None
    try:
        assert bench.stderr is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        for line in bench.stderr:  # progress lines, as they come
            if " in /" in line and "starting a stack" in line:
                home = Path(line.rsplit(" in ", 1)[1].strip())
            if "ready in" in line:
                break
            assert time.monotonic() < deadline, "the bench's stack was not ready in time"
        assert home is not None
        state = StackState.read(home)
        assert state is not None and process_alive(state.supervisor_pid)
        pids = started_by(state)

        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=60) == 128 + signal.SIGTERM
        assert [pid for pid in pids if process_alive(pid)] == []
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
        if home is not None:
            state = StackState.read(home)
            for pid in [] if state is None else started_by(state):  # what a failure left, by PID
                if process_alive(pid):
                    os.kill(pid, signal.SIGKILL)
            shutil.rmtree(home, ignore_errors=True)


def started_by(state: StackState) -> list[int]:
    """Every process of the stack: its supervisor, servers and services."""
    return [state.supervisor_pid, *(s.pid for s in state.servers), *(s.pid for s in state.services)]
