"""How fast each service rebuilds its state from the log: its checkpoint deleted, the service killed,
the supervisor restarts it and it replays the whole log; the figures are its own ("replayed the log" in
its log: records read and folded, seconds), and the events those records hold, counted by the bench (a
bundle is one record of several events)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.cli.bench_e2e.stack import BenchStack
from services.cli.stack.etcd_users import ROOT_PASSWORD_FILE
from services.cli.stack.layout import CREDS_DIR, StackState
from services.cli.stack.supervisor import service_health
from shared.bus.bundles import is_bundle, unpack
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, parse_event_subject
from shared.security.etcd_roles import ROOT
from shared.store.checkpoint import CheckpointStore
from shared.store.etcd import Etcd
from shared.store.etcd_auth import EtcdCredentials

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


async def log_events(bus: Bus) -> list[int]:
    """Events up to each record of the log: [events in records 1..seq] at index seq (a bundle's
    events count one by one)."""
    upto = [0]
    async for batch in bus.replay_batches(EVENTS_STREAM):
        for record in batch:
            while len(upto) < record.seq:  # a sequence the stream no longer holds
                upto.append(upto[-1])
            held = 1
            with contextlib.suppress(ValueError):  # what is no event counts as the one record it is
                ref = parse_event_subject(record.subject)
                if is_bundle(ref.type):
                    held = len(unpack(ref, record.envelope()))
            upto.append(upto[-1] + held)
    return upto


async def replay_rates(
    stack: BenchStack, say: Callable[[str], None], events_upto: list[int]
) -> dict[str, dict[str, float]]:
    """Per service: records and events replayed, seconds, events per second (the events of the records
    it replayed, whether or not it reads their type: the whole log passes through every service)."""
    state = stack.state
    assert state is not None
    host, _, port = state.etcd_endpoint.rpartition(":")
    # deleting every service's checkpoint is no service's right: the stack's etcd root does it
    root_file = stack.home / CREDS_DIR / ROOT_PASSWORD_FILE
    root = EtcdCredentials.from_file(ROOT, root_file) if state.admin_etcd_password else None
    etcd = await Etcd.connect(host, int(port), tls_ca=state.tls_ca or None, credentials=root)
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
            records, seconds = int(replay["records"]), float(replay["seconds"])
            first, last = int(replay["from_seq"]), min(int(replay["to_seq"]), len(events_upto) - 1)
            events = events_upto[last] - events_upto[max(first - 1, 0)] if last >= first else 0
            rates[record.name] = {
                "records": records,
                "events": events,
                "seconds": seconds,
                "events_per_s": round(events / seconds),
            }
    finally:
        await etcd.close()
    return rates
