"""A toy event-sourced service for the runner's tests: it echoes every Ping.

ToyCore folds Ping events (kind "toy") and its own Echo events (kind "toyecho", so a subject filter can
leave them out) and asks for Echoes of each Ping by its payload's mode:

- "once" (default): one Echo;
- "forever": another Echo after each of its echoes, so the service is never idle;
- "twins" / "twins-cas": two Echoes (<name> and <name>-twin) in one atomic batch, with "-cas" each
  expecting its subject to have no event yet.

The state records every applied sequence, so applying an event twice shows.
Run as a process: python -m runner_toy --nats-url ... --etcd-endpoint ...
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import urllib.request
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from shared.runner import EventSourcedService, RunnerConfig
from shared.runner_types import Event, Output, deterministic_id
from shared.service import connect_bus, connect_etcd, run_main


@dataclass(frozen=True)
class ToyState:
    applied: tuple[int, ...] = ()
    pings: dict[str, tuple[str, str]] = field(default_factory=dict)  # ping id -> (object name, mode)
    echoes: dict[str, int] = field(default_factory=dict)  # ping id -> echoes seen
    total: int = 0  # sum of the pings' n


class ToyCore:
    name = "toy"

    def initial(self) -> ToyState:
        return ToyState()

    def apply(self, state: ToyState, event: Event) -> ToyState:
        applied = (*state.applied, event.seq)
        if event.type == "Ping":
            pings = {**state.pings, event.id: (event.name, str(event.payload.get("mode", "once")))}
            return ToyState(applied, pings, state.echoes, state.total + int(event.payload["n"]))
        if event.type == "Echo":
            ping = str(event.payload["ping"])
            echoes = {**state.echoes, ping: state.echoes.get(ping, 0) + 1}
            return ToyState(applied, state.pings, echoes, state.total)
        return ToyState(applied, state.pings, state.echoes, state.total)

    def touched(self, state: ToyState, event: Event) -> list[str]:
        if event.type == "Ping":
            return [event.id]
        return [str(event.payload["ping"])] if event.type == "Echo" else []

    def due(self, state: ToyState, now: float) -> list[str]:
        return []

    def reconcile(self, state: ToyState, now: float, keys: Collection[str] | None = None) -> list[Output]:
        outputs = []
        pings = state.pings if keys is None else {k: state.pings[k] for k in keys if k in state.pings}
        for ping, (name, mode) in sorted(pings.items()):
            seen = state.echoes.get(ping, 0)
            if mode == "forever":
                outputs.append(self._echo(ping, name, key=seen))
            elif seen:
                continue
            elif mode == "once":
                outputs.append(self._echo(ping, name))
            else:
                expected = 0 if mode == "twins-cas" else None
                for twin in (name, f"{name}-twin"):
                    outputs.append(self._echo(ping, twin, key=twin, batch=ping, expected=expected))
        return outputs

    def _echo(
        self, ping: str, name: str, *, key: object = 0, batch: str | None = None, expected: int | None = None
    ) -> Output:
        return Output(
            type="Echo",
            kind="toyecho",
            namespace=None,
            name=name,
            id=deterministic_id(self.name, "Echo", ping, key),
            correlation_id=name,
            payload={"ping": ping},
            causation_id=ping,
            batch=batch,
            expected_last_subject_seq=expected,
        )

    def dump(self, state: ToyState) -> bytes:
        pings = {ping: list(value) for ping, value in state.pings.items()}
        return msgpack.packb([list(state.applied), pings, state.echoes, state.total], use_bin_type=True)

    def load(self, data: bytes) -> ToyState:
        applied, pings, echoes, total = msgpack.unpackb(data, raw=False)
        return ToyState(tuple(applied), {ping: tuple(value) for ping, value in pings.items()}, echoes, total)


# Set in its environment, the toy's factory fails after connecting (run_main's "could not start" path;
# a server that does not answer is waited for, not a reason to fail).
FAIL_TO_START = "LAHAR_TOY_FAIL_TO_START"


async def build(config: RunnerConfig, stack: contextlib.AsyncExitStack) -> EventSourcedService[ToyState]:
    bus = await connect_bus(config, stack, name="toy")
    etcd = await connect_etcd(config, stack)
    if os.environ.get(FAIL_TO_START):
        raise RuntimeError("told not to start")
    return EventSourcedService(ToyCore(), bus, etcd, config)


class ToyProcess:
    """The toy service as a child process (python -m runner_toy), its JSON log lines collected."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None) -> ToyProcess:
        here = Path(__file__).resolve().parent
        paths = [str(here.parents[1]), str(here), os.environ.get("PYTHONPATH", "")]
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "runner_toy",
            *args,
            env={**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        async for line in self.proc.stderr:
            text = line.decode()
            self.raw.append(text)
            with contextlib.suppress(ValueError):
                self.lines.append(json.loads(text))

    def logged(self, event: str) -> dict[str, Any] | None:
        return next((line for line in self.lines if line.get("event") == event), None)

    async def health(self) -> dict[str, Any]:
        """The process's /healthz answer; {} until its metrics endpoint is listening (it picks a free
        port and logs it)."""
        listening = self.logged("metrics and health endpoints listening")
        if listening is None:
            return {}
        url = f"http://127.0.0.1:{listening['port']}/healthz"

        def get() -> dict[str, Any]:
            try:
                with urllib.request.urlopen(url, timeout=1) as resp:
                    return dict(json.loads(resp.read()))
            except (OSError, ValueError):
                return {}

        return await asyncio.to_thread(get)

    async def wait(self, timeout_s: float = 30.0) -> int:
        """The exit status (killing the process if it does not exit in time), all output read."""
        try:
            await asyncio.wait_for(self.proc.wait(), timeout_s)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
            await self._reader
        return self.proc.returncode


if __name__ == "__main__":
    run_main(build, RunnerConfig, name="toy")
