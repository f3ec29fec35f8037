"""A local server process (nats-server, etcd: shared/servers.py): start, health-check, stop, restart, reap.

Used by the integration tests and by the local stack. Every server gets free loopback ports, its own
data directory and a log file that survives restarts (appended to), so a failure can be diagnosed after
the fact. Servers are stopped by PID: SIGTERM first so they flush and release their data directory,
SIGKILL only when they do not exit in time.

The API is synchronous (subprocess + HTTP polling); the ``a``-prefixed variants run the same code in a
worker thread so an event loop keeps serving its other tasks (watchers, keepalives) meanwhile.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import IO, ClassVar, Self

from shared.security.tls import TlsFiles

LOOPBACK = "127.0.0.1"
_LOG_TAIL_BYTES = 8192
# Ports are found by binding port 0 and releasing it; another process may grab the port before the server
# binds it. Such a start is retried on fresh ports this many times.
_PORT_RACE_ATTEMPTS = 3


class ServerError(RuntimeError):
    """A server binary is missing, or the server failed to start, become healthy or stop."""


def find_binary(name: str) -> str:
    """Locate a server binary: next to the running interpreter (a venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ServerError(
            f"{name!r} not found next to {sys.executable} nor on PATH; install the project's dependencies "
            f"(they ship the {name} binary) or put {name} on PATH"
        )
    return found


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free a moment ago (bound to port 0 and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def http_ok(url: str, timeout_s: float = 1.0) -> bool:
    """The URL answers 2xx within timeout_s (a health probe)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            status: int = resp.status  # urlopen is typed as returning Any
            return 200 <= status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


# Every server started and not yet stopped, so none outlives this process by accident.
_live: set[ServerProcess] = set()


@atexit.register
def _stop_leftovers() -> None:
    # A crashed test session or an interrupted local stack must not leave servers holding ports and
    # data directories behind.
    for server in list(_live):
        with contextlib.suppress(Exception):
            server.stop(timeout_s=5.0)


class ServerProcess(ABC):
    """One server process with fixed ports and data dir, restartable in place."""

    name: str  # the kind of server; a cluster member names itself (nats-server-2, etcd-3)
    binary_name: ClassVar[str]

    def __init__(
        self,
        base_dir: Path,
        *,
        extra_args: Sequence[str] = (),
        start_timeout_s: float = 30.0,
        stop_timeout_s: float = 15.0,
        tls: TlsFiles | None = None,
    ) -> None:
        self.base_dir = base_dir
        self.tls = tls  # the server's certificate, key and CA; None: plain TCP (the tests' bare servers)
        self.data_dir = base_dir / "data"
        self.log_path = base_dir / f"{self.name}.log"
        self.host = LOOPBACK
        self.port = 0
        self.extra_args = tuple(extra_args)
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._binary = find_binary(self.binary_name)
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @classmethod
    def start_in(
        cls,
        base_dir: str | Path,
        *,
        extra_args: Sequence[str] = (),
        start_timeout_s: float = 30.0,
        stop_timeout_s: float = 15.0,
        tls: TlsFiles | None = None,
    ) -> Self:
        """Start a new server in base_dir (created if needed) on free ports; returns once healthy.
        tls: serve clients (and peers) over TLS with these files; the health endpoint stays plain HTTP."""
        server = cls(
            Path(base_dir),
            extra_args=extra_args,
            start_timeout_s=start_timeout_s,
            stop_timeout_s=stop_timeout_s,
            tls=tls,
        )
        server.base_dir.mkdir(parents=True, exist_ok=True)
        server._start_fresh_ports()
        return server

    @classmethod
    async def astart_in(
        cls, base_dir: str | Path, *, extra_args: Sequence[str] = (), tls: TlsFiles | None = None
    ) -> Self:
        return await asyncio.to_thread(lambda: cls.start_in(base_dir, extra_args=extra_args, tls=tls))

    @abstractmethod
    def _command(self) -> list[str]:
        """The full command line for the current ports and data dir."""

    @property
    @abstractmethod
    def health_url(self) -> str:
        """Answers 2xx while the server is ready to serve (for a supervisor's or a status probe)."""

    def _healthy(self) -> bool:
        """One readiness probe; returns quickly."""
        return http_ok(self.health_url)

    @abstractmethod
    def _pick_ports(self) -> None:
        """Choose fresh free ports (only before the first start: restarts keep their ports)."""

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise ServerError(f"{self.name} is not running")
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, max_bytes: int = _LOG_TAIL_BYTES) -> str:
        """The last bytes of the server's log, for error reports."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - max_bytes))
                return log.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def launch(self) -> None:
        """Start the process on the current ports without waiting for it: a cluster member cannot be
        healthy before its peers run too, so a cluster launches every member, then waits for each."""
        self.reap()
        self._spawn()

    def wait_healthy(self) -> None:
        """Until the launched server passes its health check (ServerError when it exits or times out)."""
        self._wait_healthy()

    def _spawn(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._log.write(f"--- lahar: starting {' '.join(self._command())}\n".encode())
        self._log.flush()
        # A new session keeps a terminal's Ctrl-C away from the server: the owner decides the shutdown order.
        self._proc = subprocess.Popen(
            self._command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=self.base_dir,
            start_new_session=True,
            env=self._env(),
        )
        _live.add(self)

    def _env(self) -> dict[str, str] | None:
        return None  # the owner's

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        delay = 0.01
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                code = self._proc.returncode
                self._forget()
                raise ServerError(f"{self.name} exited with code {code} while starting:\n{self.log_tail()}")
            if self._healthy():
                return
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        self.stop()
        raise ServerError(f"{self.name} not healthy within {self.start_timeout_s:.0f}s:\n{self.log_tail()}")

    def _start_fresh_ports(self) -> None:
        for attempt in range(1, _PORT_RACE_ATTEMPTS + 1):
            self._pick_ports()
            self._spawn()
            try:
                self._wait_healthy()
                return
            except ServerError:
                if attempt == _PORT_RACE_ATTEMPTS or "address already in use" not in self.log_tail().lower():
                    raise

    def reap(self) -> int | None:
        """The exit status once the server has exited, None while it runs (or was never started).

        A server that exited is reaped (no zombie is left behind) and forgotten, so start() brings it
        back on the same ports and data dir."""
        proc = self._proc
        if proc is None:
            return None
        code = proc.poll()
        if code is not None:
            self._forget()
        return code

    def start(self) -> Self:
        """(Re)start with the current ports and data dir; returns once the health check passes."""
        if self.running:
            return self
        self.reap()  # a server that crashed: close its log handle before the new process opens one
        self._spawn()
        self._wait_healthy()
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """SIGTERM, wait, then SIGKILL. Idempotent."""
        self._terminate(signal.SIGTERM, self.stop_timeout_s if timeout_s is None else timeout_s)

    def kill(self) -> None:
        """SIGKILL without a graceful shutdown: simulates a crash."""
        self._terminate(signal.SIGKILL, self.stop_timeout_s)

    def _terminate(self, sig: signal.Signals, wait_s: float) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
            try:
                proc.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=wait_s)
                except subprocess.TimeoutExpired as exc:
                    raise ServerError(f"{self.name} (pid {proc.pid}) survived SIGKILL for {wait_s}s") from exc
        self._forget()

    def _forget(self) -> None:
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        _live.discard(self)

    def restart(self) -> Self:
        """Stop and start again on the same ports with the same data dir."""
        self.stop()
        return self.start()

    async def astop(self) -> None:
        await asyncio.to_thread(self.stop)

    async def astart(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def arestart(self) -> Self:
        return await asyncio.to_thread(self.restart)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
