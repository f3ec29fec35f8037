"""How fast each service rebuilds its state from the log: its checkpoint deleted, the service killed,
the supervisor restarts it and it replays the whole log; the figures are its own ("replayed the log" in
its log: events read and folded, seconds)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.cli.bench_e2e.stack import BenchStack
from services.cli.stack.layout import StackState
from services.cli.stack.supervisor import service_health
from shared.store.checkpoint import CheckpointStore
from shared.store.etcd import Etcd

_RESTART_TIMEOUT_S = 300.0


def _checkpoint_key(name: str, health: dict[str, Any]) -> str:
    """The checkpoint a service's process writes under: its core's name (a node agent's names its agent)."""
    return str(health.get("service", name)) if name.startswith("node-agent") else name


def _last_replay(log_file: Path) -> dict[str, Any] | None:
    found = None
    for line in log_file.read_text(errors="replace").splitlines():
        if '"replayed the log"' in line:
            try:
                found = json.loads(line)
            except ValueError:
                continue
    return found


async def _following(stack: BenchStack, name: str, old_pid: int) -> None:
    deadline = time.monotonic() + _RESTART_TIMEOUT_S
    while time.monotonic() < deadline:
        state = StackState.read(stack.home)
        record = None if state is None else next((s for s in state.services if s.name == name), None)
        if record is not None and record.pid != old_pid:
            health = await asyncio.to_thread(service_health, record.metrics_port)
            if health is not None and health.get("phase") == "following":
                return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{name} did not follow the log again within {_RESTART_TIMEOUT_S:.0f}s")


async def replay_rates(stack: BenchStack, say: Callable[[str], None]) -> dict[str, dict[str, float]]:
    """Per service: events replayed, seconds, events per second."""
    state = stack.state
    assert state is not None
    host, _, port = state.etcd_endpoint.rpartition(":")
    etcd = await Etcd.connect(host, int(port), tls_ca=state.tls_ca or None)
    rates: dict[str, dict[str, float]] = {}
    try:
        # the supervisor rewrites the state as it restarts services: their pids as of now
        for record in (StackState.read(stack.home) or state).services:
            health = await asyncio.to_thread(service_health, record.metrics_port) or {}
            await CheckpointStore(etcd, _checkpoint_key(record.name, health)).delete()
            say(f"replaying {record.name} from the start of the log")
            os.killpg(record.pid, signal.SIGKILL)
            await _following(stack, record.name, record.pid)
            replay = _last_replay(stack.home / "logs" / f"{record.name}.log")
            if replay is None or not replay.get("seconds"):
                continue
            events, seconds = int(replay["events"]), float(replay["seconds"])
            rates[record.name] = {
                "events": events,
                "seconds": seconds,
                "events_per_s": round(events / seconds),
            }
    finally:
        await etcd.close()
    return rates
