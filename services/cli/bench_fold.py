"""`lahar bench fold`: events/s each service's core folds, reading a kept stack's event log in process.

This is a replay without the bus: the log of a stopped stack (`lahar bench e2e --keep-home`, or any
stack's home) is read once from its nats-server's data, then each core folds the events it subscribes to
as its service loop does (the envelope decoded, the typed Event made, `apply`), several passes from its
initial state. Times are the process's CPU seconds, so other work on the machine moves them less than
wall time would; the best pass and the median are reported.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from services.admission.context_core import AdmissionViewCore
from services.binder.core.core import BinderCore
from services.binder.state import BinderShellCore
from services.cli.bench_loop import loop_figures
from services.job_controller.core.controller import ControllerCore
from services.node_agent.agent_core import AgentCore
from services.node_agent.config import NodeAgentConfig, agent_nodes
from services.node_agent.core.core import NodeAgentCore
from services.queue_controller.core.projection import ProjectedCore
from services.scheduler.state import ViewCore
from shared.bus.bundles import BUNDLE_OF
from shared.bus.jetstream import Bus
from shared.bus.records import StreamRecord
from shared.bus.subjects import EVENTS_STREAM, EventSubject, parse_event_subject
from shared.runner.events import record_to_events
from shared.security.secret_keys import PRIVATE_FILE, load_private_key
from shared.servers import NatsServer
from shared.service import tune_gc

SERVICES = (
    "admission",
    "job-controller",
    "queue-controller",
    "scheduler",
    "binder",
    "node-agent",
    "decode-only",
)


class DecodeOnly:
    """A core that folds nothing, reading every event: what the edge alone costs an event (the envelope
    decoded, the typed Event made), the part of every service's fold that is the same everywhere."""

    def initial(self) -> None:
        return None

    def apply(self, state: None, event: Any) -> None:
        return state


def cores(nodes: int, secrets_key: X25519PrivateKey | None = None) -> dict[str, Callable[[], Any]]:
    """Each service's core as its service builds it (the node agent hosting the stack's `nodes` hollow
    nodes, as `lahar up --sim-nodes` runs them, with the stack's secrets key to open the job secrets)."""
    agent_config = NodeAgentConfig(runtime="sim", sim_nodes=nodes, nats_url="x", etcd_endpoint="x:1")
    return {
        "admission": AdmissionViewCore,
        "job-controller": ControllerCore,
        "queue-controller": ProjectedCore,
        "scheduler": lambda: ViewCore("scheduler-0"),
        "binder": lambda: BinderShellCore(BinderCore()),
        "node-agent": lambda: AgentCore(NodeAgentCore("sim", agent_nodes(agent_config)), secrets_key),
        "decode-only": DecodeOnly,
    }


async def read_log(nats_dir: Path) -> list[StreamRecord]:
    """Every record of the events stream kept in a stopped stack's nats-server data (a server is started on
    that directory, on free ports, and stopped again)."""
    server = await NatsServer.astart_in(nats_dir)
    try:
        bus = await Bus.connect(server.url)
        try:
            return [record async for batch in bus.replay_batches(EVENTS_STREAM) for record in batch]
        finally:
            await bus.close()
    finally:
        server.stop()


def fold_rates(core: Any, log: Sequence[tuple[StreamRecord, EventSubject]], passes: int) -> list[float]:
    """Events/s of CPU time, one figure per pass over `log`."""
    rates = []
    for _ in range(passes):
        state = core.initial()
        started = time.process_time()
        count = 0
        for record, ref in log:
            for event in record_to_events(record.seq, ref, record.envelope()):
                state = core.apply(state, event)
                count += 1
        rates.append(count / max(time.process_time() - started, 1e-9))
    return rates


def run_bench(
    records: Sequence[StreamRecord],
    services: Sequence[str],
    *,
    events: int,
    passes: int,
    nodes: int,
    loop: tuple[int, int] | None = None,
    secrets_key: X25519PrivateKey | None = None,
) -> dict[str, Any]:
    """Per service: the events it folded (its subscription, the first `events` of them) and events/s;
    with loop=(batch, flush), also its whole loop's CPU (bench_loop.py)."""
    subjects = [(record, parse_event_subject(record.subject)) for record in records]
    made = cores(nodes, secrets_key)
    result: dict[str, Any] = {"log_events": len(records), "passes": passes, "services": {}}
    for name in services:
        core = made[name]()
        reads = getattr(core, "reads", None)
        log = [(r, ref) for r, ref in subjects if reads is None or BUNDLE_OF.get(ref.type, ref.type) in reads]
        log = log[:events]
        rates = fold_rates(core, log, passes)
        result["services"][name] = {
            "events": len(log),
            "best_per_s": round(max(rates)),
            "median_per_s": round(statistics.median(rates)),
        }
        if loop is not None and hasattr(core, "reconcile"):  # decode-only has no loop
            batch, flush = loop
            figures = loop_figures(made[name], log, passes=passes, batch=batch, flush=flush)
            result["services"][name]["loop"] = figures
    return result


def run(
    home: Path,
    services: Sequence[str],
    *,
    events: int,
    passes: int,
    nodes: int,
    loop: tuple[int, int] | None = None,
) -> dict[str, Any]:
    records = asyncio.run(read_log(home / "nats"))
    tune_gc()  # collected as the services are collected: a default young generation would time the collector
    # the stack's node agents' key, when it had one: their core opens the job secrets as it folds them
    key_file = home / "creds" / PRIVATE_FILE
    key = load_private_key(key_file) if key_file.exists() else None
    return run_bench(records, services, events=events, passes=passes, nodes=nodes, loop=loop, secrets_key=key)
