"""Keeps nats-server or etcd running for the local stack's supervisor.

A server that exits (a crash, SIGKILL, the OOM killer) is reaped at once, so it never lingers as a
zombie that still looks alive, and started again on the same ports with the same data directory: every
client reconnects to the address it knows, and JetStream and etcd recover their data from disk. While it
keeps failing to start, the restarts back off (backoff.py) and never stop: an outage ends when the server
can run again, not when the supervisor loses patience.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable

from services.cli.stack.backoff import restart_delay
from services.cli.stack.layout import RESTARTING, RUNNING, RunningServer
from shared.servers import EtcdServer, NatsServer, ServerError

EXIT_POLL_S = 0.1  # how soon an exit is noticed (a poll also reaps the process)


def record_of(server: NatsServer | EtcdServer) -> RunningServer:
    return RunningServer(server.name, server.pid, server.url, server.health_url, str(server.log_path))


class ServerKeeper:
    """run() until stopping is set: restart the server whenever it exits, keeping `record` (pid, phase,
    restarts) up to date and calling changed() after each change of it."""

    def __init__(
        self,
        server: NatsServer | EtcdServer,
        record: RunningServer,
        changed: Callable[[], None],
        stopping: asyncio.Event,
    ) -> None:
        self.server = server
        self.record = record
        self.changed = changed
        self.stopping = stopping

    async def run(self) -> None:
        delay_s = 0.0
        started = time.monotonic()
        while True:
            code = await self._until_exit()
            if code is None:
                return  # stopping: the supervisor stops the server itself
            self.record.phase = RESTARTING
            self.record.restarts += 1
            self.changed()
            self._note(f"--- lahar: {self.server.name} exited with {code}; restarting on the same ports\n")
            ran_s = time.monotonic() - started
            while True:
                delay_s = restart_delay(delay_s, ran_s)
                ran_s = 0.0  # a start that failed ran for no time at all
                if await self._stopping_within(delay_s):
                    return
                try:
                    # not cancelled midway: a half-started server would be left to nobody
                    await self.server.astart()
                    break
                except ServerError as exc:
                    failed = f"lahar: {self.server.name} did not start again: {exc}"
                    print(failed, file=sys.stderr, flush=True)
            started = time.monotonic()
            self.record.pid = self.server.pid
            self.record.phase = RUNNING
            self.changed()

    async def _until_exit(self) -> int | None:
        """The server's exit status once it exits; None once stopping is set."""
        while True:
            code = self.server.reap()
            if code is not None:
                return code
            if await self._stopping_within(EXIT_POLL_S):
                return None

    async def _stopping_within(self, seconds: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)
        return self.stopping.is_set()

    def _note(self, line: str) -> None:
        with contextlib.suppress(OSError), self.server.log_path.open("ab") as log:
            log.write(line.encode())
