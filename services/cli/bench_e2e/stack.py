"""A throwaway local stack for the e2e benchmark: the `lahar up` supervisor in a temporary home, started
as a process and stopped by its PID (it stops everything it started)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from services.cli.stack.layout import StackState

STOP_TIMEOUT_S = 60.0


class BenchStack:
    def __init__(
        self,
        home: Path,
        sim_nodes: int,
        replicas: int,
        *,
        standbys: bool = False,
        no_auth: bool = False,
        no_tls: bool = False,
    ) -> None:
        self.home = home
        self.sim_nodes = sim_nodes
        self.replicas = replicas
        self.standbys = standbys
        self.no_auth = no_auth
        self.no_tls = no_tls
        self.process: subprocess.Popen[bytes] | None = None
        self.state: StackState | None = None

    def start(self, timeout_s: float, progress: Callable[[str], None]) -> float:
        """Start the supervisor and wait until the stack reports ready (it can bind on every node);
        returns the seconds that took."""
        self.home.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "services.cli.stack", "--home", str(self.home)]
        command += ["--sim-nodes", str(self.sim_nodes), "--replicas", str(self.replicas)]
        command += ["--standbys"] if self.standbys else []
        command += ["--no-auth"] if self.no_auth else []
        command += ["--no-tls"] if self.no_tls else []
        started = time.monotonic()
        with (self.home / "supervisor.log").open("ab") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        deadline = started + timeout_s
        shown, waited = 0, ""
        while time.monotonic() < deadline:
            state = StackState.read(self.home)
            if state is not None and state.supervisor_pid == self.process.pid:
                if state.error:
                    raise RuntimeError(f"the stack did not start: {state.error}")
                if state.ready:
                    self.state = state
                    return time.monotonic() - started
                if len(state.services) > shown:
                    shown = len(state.services)
                    progress(f"starting {state.services[-1].name}")
                if state.waiting and state.waiting != waited:
                    waited = state.waiting
                    progress(f"waiting for {waited}")
            if self.process.poll() is not None:
                raise RuntimeError(f"the supervisor exited; see {self.home / 'supervisor.log'}")
            time.sleep(0.05)
        raise RuntimeError(f"the stack was not ready within {timeout_s:.0f}s; see {self.home / 'logs'}")

    def pids(self) -> dict[str, int]:
        """Every process of the stack by name, as the supervisor recorded them last."""
        state = StackState.read(self.home) or self.state
        if state is None:
            return {}
        pids = {s.name: s.pid for s in state.services}
        pids["nats-server"], pids["etcd"] = state.nats_pid, state.etcd_pid
        return pids

    def restarts(self) -> dict[str, int]:
        state = StackState.read(self.home)
        return {} if state is None else {s.name: s.restarts for s in state.services if s.restarts}

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
