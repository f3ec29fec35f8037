"""A whole local stack per test module: the supervisor behind `lahar up`, in a temporary LAHAR_HOME,
started as a process and stopped by its PID (it stops everything it started)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.cli.stack.layout import StackState, process_alive
from shared.bus.jetstream import Bus

READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0


@dataclass
class Stack:
    home: Path
    state: StackState
    supervisor: subprocess.Popen[bytes]

    def lahar(
        self, *args: str, timeout_s: float = 120.0, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the `lahar` CLI against this stack (`stdin`: what is piped into it)."""
        env = {**os.environ, "LAHAR_HOME": str(self.home)}
        return subprocess.run(
            [sys.executable, "-m", "services.cli.main", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout_s,
            input=stdin,
        )

    def service_log(self, name: str) -> str:
        path = self.home / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


async def operator_bus(state: StackState, name: str) -> Bus:
    """A bus connection as the stack's operator (its credentials and CA; none on an open stack)."""
    return await Bus.connect(
        state.nats_url, name=name, creds=state.admin_creds or None, tls_ca=state.tls_ca or None
    )


def start_stack(home: Path, *args: str, env: Mapping[str, str] | None = None) -> Stack:
    """The stack `lahar up -d ARGS` starts; `env` adds to the environment every process inherits (the
    services' LAHAR_* settings)."""
    with (home / "supervisor.log").open("ab") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "services.cli.stack", "--home", str(home), *args],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        state = StackState.read(home)
        if state is not None and state.error:
            stop_stack(supervisor)
            pytest.fail(f"stack failed to start: {state.error}")
        if state is not None and state.ready:
            return Stack(home, state, supervisor)
        if supervisor.poll() is not None:
            pytest.fail(f"supervisor exited {supervisor.returncode}: {(home / 'supervisor.log').read_text()}")
        time.sleep(0.1)
    stop_stack(supervisor)
    pytest.fail(f"stack not ready within {READY_TIMEOUT_S:.0f}s")


def stop_stack(supervisor: subprocess.Popen[bytes]) -> None:
    if supervisor.poll() is None:
        supervisor.send_signal(signal.SIGTERM)
        try:
            supervisor.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    running = start_stack(home)
    try:
        yield running
    finally:
        stop_stack(running.supervisor)
        leftovers = [s.name for s in running.state.services if process_alive(s.pid)]
        assert not leftovers, f"processes left running after the stack stopped: {leftovers}"
