"""Local nats-server and etcd processes: start, health-check, stop, restart, reap.

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
_live: set[_ServerProcess] = set()


@atexit.register
def _stop_leftovers() -> None:
    # A crashed test session or an interrupted local stack must not leave servers holding ports and
    # data directories behind.
    for server in list(_live):
        with contextlib.suppress(Exception):
            server.stop(timeout_s=5.0)


class _ServerProcess(ABC):
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


SERVER_NAME_ENV = "LAHAR_NATS_SERVER_NAME"  # nats-server's name, in its environment


class NatsServer(_ServerProcess):
    """nats-server with JetStream (file store under the data dir) and the HTTP monitoring port.

    With TLS the client port takes TLS connections only (a plain client is refused) and clients verify
    the server's certificate; clients are not asked for one (their nkey authenticates them). The
    monitoring port stays plain HTTP on loopback, for health checks."""

    name = "nats-server"
    binary_name = "nats-server"

    http_port: int = 0
    # whether its configuration file (--config) carries the TLS block rather than the command line: a
    # reload (SIGHUP, after `lahar tenant add`) rereads TLS from the file alone and refuses to run when the
    # server was started with --tls ("old=true, new=false")
    tls_in_config: bool = False

    @property
    def url(self) -> str:
        # tls:// tells any client that this server takes TLS only (nats-py would upgrade a nats:// one too)
        return f"{'tls' if self.tls is not None else 'nats'}://{self.host}:{self.port}"

    @property
    def monitor_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def _pick_ports(self) -> None:
        self.port = free_port(self.host)
        self.http_port = free_port(self.host)

    def _command(self) -> list[str]:
        return [
            self._binary,
            "--addr",
            self.host,
            "--port",
            str(self.port),
            "--http_port",
            str(self.http_port),
            "--jetstream",
            "--store_dir",
            str(self.data_dir),
            "--server_name",
            f"lahar-{self.port}",
            *self._tls_args(),
            *self.extra_args,
        ]

    def _tls_args(self) -> list[str]:
        if self.tls is None or self.tls_in_config:
            return []
        # --tls, not --tlsverify: clients are not asked for a certificate, so no CA to check them with
        return ["--tls", "--tlscert", str(self.tls.cert), "--tlskey", str(self.tls.key)]

    @property
    def health_url(self) -> str:
        # A standalone server recovers its streams from the store before it reports JetStream enabled.
        return f"{self.monitor_url}/healthz?js-enabled-only=true"

    def _env(self) -> dict[str, str]:
        # its --server_name, for a configuration file to name it by (a reload takes the name from the
        # file only, services/cli/stack/identities.py)
        return {**os.environ, SERVER_NAME_ENV: f"lahar-{self.port}"}


ETCD_HISTORY = "1m"  # how long etcd keeps old revisions (watches may resume that far back)


class EtcdServer(_ServerProcess):
    """A single-member etcd cluster on loopback.

    With TLS clients connect over https and verify the server's certificate (client certificates are not
    required); members talk to each other over https and each verifies the other's certificate with the
    CA (peer_tls, by default the client-facing files). Health and metrics are then served on a separate
    plain-HTTP loopback port, so health checks need no certificate."""

    name = "etcd"
    binary_name = "etcd"

    peer_port: int = 0
    metrics_port: int = 0  # with TLS only: the plain-HTTP /health and /metrics

    def __init__(
        self,
        base_dir: Path,
        *,
        extra_args: Sequence[str] = (),
        start_timeout_s: float = 30.0,
        stop_timeout_s: float = 15.0,
        tls: TlsFiles | None = None,
        peer_tls: TlsFiles | None = None,
    ) -> None:
        super().__init__(
            base_dir,
            extra_args=extra_args,
            start_timeout_s=start_timeout_s,
            stop_timeout_s=stop_timeout_s,
            tls=tls,
        )
        self.peer_tls = peer_tls if peer_tls is not None else tls

    @property
    def endpoint(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def _pick_ports(self) -> None:
        self.port = free_port(self.host)
        self.peer_port = free_port(self.host)
        if self.tls is not None:
            self.metrics_port = free_port(self.host)

    @property
    def member(self) -> str:
        """The member's name in its cluster."""
        return f"lahar-{self.port}"

    def _cluster_args(self) -> list[str]:
        """How the member finds its cluster: a single-member cluster of its own."""
        return ["--initial-cluster", f"{self.member}={self.peer_url}", "--initial-cluster-state", "new"]

    @property
    def peer_url(self) -> str:
        return f"{'https' if self.peer_tls is not None else 'http'}://{self.host}:{self.peer_port}"

    def _tls_args(self) -> list[str]:
        args = []
        if self.tls is not None:
            # no --trusted-ca-file: given one, etcd asks every client for a certificate (3.5, measured)
            # whatever --client-cert-auth says; clients verify the server, and authenticate otherwise
            args += ["--cert-file", str(self.tls.cert), "--key-file", str(self.tls.key)]
            args += ["--listen-metrics-urls", f"http://{self.host}:{self.metrics_port}"]
        if self.peer_tls is not None:
            peer = self.peer_tls
            args += ["--peer-cert-file", str(peer.cert), "--peer-key-file", str(peer.key)]
            args += ["--peer-trusted-ca-file", str(peer.ca), "--peer-client-cert-auth"]
        return args

    def _command(self) -> list[str]:
        return [
            self._binary,
            "--name",
            self.member,
            "--data-dir",
            str(self.data_dir),
            "--listen-client-urls",
            self.url,
            "--advertise-client-urls",
            self.url,
            "--listen-peer-urls",
            self.peer_url,
            "--initial-advertise-peer-urls",
            self.peer_url,
            *self._cluster_args(),
            # without compaction every revision of every key is kept: the read model and the checkpoints
            # rewrite keys all the time, and memory and the database grow without bound (a 40,000-pod
            # benchmark took etcd past 1.7 GB with five minutes of history)
            "--auto-compaction-mode",
            "periodic",
            "--auto-compaction-retention",
            ETCD_HISTORY,
            *self._tls_args(),
            *self.extra_args,
        ]

    @property
    def health_url(self) -> str:
        if self.tls is not None:
            return f"http://{self.host}:{self.metrics_port}/health"
        return f"{self.url}/health"


class ConfiguredNats(NatsServer):
    """A nats-server whose configuration file names its TLS certificate (tls_in_config), so that it can be
    reloaded: the local stack's server, whose users `lahar tenant add` changes."""

    tls_in_config = True
