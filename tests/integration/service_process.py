"""A lahar service as a child process (python -m services.<package>), for integration tests: started with
the stack's flags on a free metrics port, its log lines collected, stopped by PID."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from shared.servers import EtcdServer, NatsServer, free_port

REPO = Path(__file__).resolve().parents[2]


class ServiceProcess:
    """One service process; `raw` holds its log lines."""

    def __init__(self, proc: asyncio.subprocess.Process, metrics_port: int) -> None:
        self.proc = proc
        self.metrics_port = metrics_port
        self.raw: list[str] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, package: str, nats: NatsServer, etcd: EtcdServer, *args: str) -> ServiceProcess:
        port = free_port()
        host, etcd_port = etcd.endpoint
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            f"services.{package}",
            *("--nats-url", nats.url, "--etcd-endpoint", f"{host}:{etcd_port}", "--metrics-port", str(port)),
            *args,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc, port)

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        async for line in self.proc.stderr:
            self.raw.append(line.decode())

    def get(self, path: str) -> tuple[int, str] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}{path}", timeout=1) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError:
            return None

    async def health(self) -> dict[str, Any]:
        answer = await asyncio.to_thread(self.get, "/healthz")
        return {} if answer is None or answer[0] != 200 else json.loads(answer[1])

    async def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 30.0) -> int:
        """Send signum (if still running) and return the exit status, killing it if it does not exit."""
        if self.proc.returncode is None:
            self.proc.send_signal(signum)
        try:
            await asyncio.wait_for(self.proc.wait(), timeout_s)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
            await self._reader
        return self.proc.returncode
