"""`lahar bench failover`: how long binding stops when the leading binder is SIGKILLed, on a stack with
--standbys under a steady gang workload on hollow nodes.

Each kill: wait until one binder leads and the other is a healthy standby and pods are being bound,
SIGKILL the leader (time.time() just before), then time (1) until a binder's /healthz says it leads
(the standby, or the killed one restarted by the supervisor if it claims the seat first) and (2) until
the first PodBound written after the kill (its envelope's time). Whichever does not lead stands by for
the next kill. Afterwards the workload stops and
every job is waited for; a pod bound twice is counted. The machine's clock is shared by every process,
so the envelopes' times compare with the kill's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from services.cli.bench_e2e.follow import follow_binds_and_phases
from services.cli.bench_e2e.stack import BenchStack
from services.cli.bench_e2e.workload import NAMESPACE, bench_jobs
from services.cli.stack.layout import StackState
from services.cli.stack.supervisor import STANDBY_SUFFIX, service_health
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, EventSubject, intake_subject

BINDERS = ("binder", f"binder{STANDBY_SUFFIX}")
FINAL_PHASES = frozenset({"Completed", "Failed", "Aborted", "Terminated"})
_POLL_S = 0.01  # how often the standby's /healthz is asked while it takes over
_STEADY_TIMEOUT_S = 120.0  # for a leader, a healthy standby and binds in progress before a kill
_BIND_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class FailoverSpec:
    nodes: int = 8
    kills: int = 5
    pods_per_s: float = 8.0  # the steady arrival, in jobs of 1-4 pods that run 1 s each
    seed: int = 0
    ready_timeout_s: float = 300.0
    drain_timeout_s: float = 300.0


@dataclass(frozen=True, slots=True)
class Kill:
    killed: str
    takeover_s: float  # from the SIGKILL until a binder reports leading
    next_bind_s: float  # from the SIGKILL until the first PodBound written after it


def summary(kills: Sequence[Kill]) -> dict[str, Any]:
    """Medians and worst cases over the kills (pure)."""
    takeovers = [k.takeover_s for k in kills]
    binds = [k.next_bind_s for k in kills]
    return {
        "kills": len(kills),
        "takeover_p50_s": round(statistics.median(takeovers), 3),
        "takeover_max_s": round(max(takeovers), 3),
        "next_bind_p50_s": round(statistics.median(binds), 3),
        "next_bind_max_s": round(max(binds), 3),
        "per_kill": [
            {"killed": k.killed, "takeover_s": round(k.takeover_s, 3), "next_bind_s": round(k.next_bind_s, 3)}
            for k in kills
        ],
    }


@dataclass(slots=True)
class BindLog:
    """PodBound times and final job phases, as the log delivers them."""

    bound: Counter[str] = field(default_factory=Counter)  # pod -> PodBound events
    bind_times: list[float] = field(default_factory=list)
    final: dict[str, str] = field(default_factory=dict)  # job -> final phase
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def observe(self, ref: EventSubject, env: Envelope) -> None:
        if env.type == "PodBound":
            self.bound[ref.name] += 1
            self.bind_times.append(env.time)
        elif env.type == "JobStatusChanged" and env.payload.get("phase") in FINAL_PHASES:
            self.final.setdefault(ref.name, str(env.payload["phase"]))
        self.changed.set()

    def first_bind_after(self, at: float) -> float | None:
        return next((t for t in self.bind_times if t > at), None)


async def _publish_steadily(bus: Bus, spec: FailoverSpec, published: list[str], stop: asyncio.Event) -> None:
    """Jobs of 1-4 pods at spec.pods_per_s until stop is set."""
    batch = 0
    while not stop.is_set():
        for job in bench_jobs(
            50, min_pods=1, max_pods=4, duration="1s", seed=spec.seed + batch, prefix=f"f{batch}"
        ):
            if stop.is_set():
                break
            await bus.js.publish(
                intake_subject("job", NAMESPACE, job.name),
                orjson.dumps(job.manifest),
                headers={"Nats-Msg-Id": f"failover-{job.name}"},
            )
            published.append(job.name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), job.pods / spec.pods_per_s)
        batch += 1


async def _roles(ports: dict[str, int]) -> dict[str, str]:
    """Each binder's role ("" when it does not answer healthy)."""
    roles = {}
    for name, port in ports.items():
        health = await asyncio.to_thread(service_health, port)
        roles[name] = str(health.get("role", "")) if health is not None and health.get("ok") else ""
    return roles


async def _steady(stack: BenchStack, log: BindLog) -> tuple[str, int, dict[str, int]]:
    """Once one binder leads, the other is a healthy standby and a pod was bound in the last second:
    (the leader's name, its pid, every binder's metrics port)."""
    deadline = time.monotonic() + _STEADY_TIMEOUT_S
    while time.monotonic() < deadline:
        state = StackState.read(stack.home)
        if state is not None:
            binders = {s.name: s for s in state.services if s.name in BINDERS}
            roles = await _roles({name: s.metrics_port for name, s in binders.items()})
            leaders = [name for name, role in roles.items() if role == "leader"]
            standbys = [name for name, role in roles.items() if role == "standby"]
            binding = log.bind_times and log.bind_times[-1] > time.time() - 1.0
            if len(leaders) == 1 and len(standbys) == 1 and binding:
                leader = binders[leaders[0]]
                return leader.name, leader.pid, {name: b.metrics_port for name, b in binders.items()}
        await asyncio.sleep(0.1)
    raise RuntimeError(f"no steady leader and standby binder within {_STEADY_TIMEOUT_S:.0f}s")


async def _kill_leader(stack: BenchStack, log: BindLog) -> Kill:
    name, pid, ports = await _steady(stack, log)
    killed_at = time.time()
    started = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    # Whichever binder claims the vacant seat first leads: usually the standby, but the killed one,
    # restarted by the supervisor on its port within the lease, campaigns too and sometimes wins.
    deadline = started + _BIND_TIMEOUT_S
    while "leader" not in (await _roles(ports)).values():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no binder led within {_BIND_TIMEOUT_S:.0f}s of killing {name}")
        await asyncio.sleep(_POLL_S)
    takeover_s = time.monotonic() - started
    while (bound_at := log.first_bind_after(killed_at)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no pod bound within {_BIND_TIMEOUT_S:.0f}s of killing {name}")
        log.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(log.changed.wait(), 0.5)
    return Kill(name, takeover_s, bound_at - killed_at)


async def _measure(spec: FailoverSpec, stack: BenchStack, say: Callable[[str], None]) -> dict[str, Any]:
    assert stack.state is not None
    bus = await Bus.connect(
        stack.state.nats_url,
        name="lahar-bench-failover",
        creds=stack.state.admin_creds or None,
        tls_ca=stack.state.tls_ca or None,
    )
    log, stop = BindLog(), asyncio.Event()
    published: list[str] = []
    follower = asyncio.create_task(
        follow_binds_and_phases(bus, log.observe, await bus.last_seq(EVENTS_STREAM) + 1)
    )
    publisher = asyncio.create_task(_publish_steadily(bus, spec, published, stop))
    try:
        kills = []
        for index in range(spec.kills):
            kill = await _kill_leader(stack, log)
            say(
                f"kill {index + 1}/{spec.kills}: {kill.killed} SIGKILLed; a binder leading after "
                f"{kill.takeover_s:.2f}s, next pod bound after {kill.next_bind_s:.2f}s"
            )
            kills.append(kill)
        stop.set()
        await publisher
        say(f"waiting for all {len(published)} jobs to finish")
        deadline = time.monotonic() + spec.drain_timeout_s
        while len(log.final) < len(published):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{len(log.final)}/{len(published)} jobs finished in {spec.drain_timeout_s:.0f}s"
                )
            log.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(log.changed.wait(), 1.0)
    finally:
        stop.set()
        follower.cancel()
        publisher.cancel()
        await asyncio.gather(follower, publisher, return_exceptions=True)
        await bus.close()
    return {
        "nodes": spec.nodes,
        "pods_per_s": spec.pods_per_s,
        **summary(kills),
        "jobs": len(published),
        "jobs_completed": sum(phase == "Completed" for phase in log.final.values()),
        "pods_bound": len(log.bound),
        "pods_bound_twice": sum(count > 1 for count in log.bound.values()),
        "restarts": stack.restarts(),
    }


def run_failover_bench(spec: FailoverSpec, say: Callable[[str], None]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="lahar-failover-"))
    stack = BenchStack(home, spec.nodes, 1, standbys=True)
    try:
        say(f"starting a stack with standbys on {spec.nodes} hollow nodes in {home}")
        stack.start(spec.ready_timeout_s, say)
        return asyncio.run(_measure(spec, stack, say))
    finally:
        stack.stop()
        shutil.rmtree(home, ignore_errors=True)
