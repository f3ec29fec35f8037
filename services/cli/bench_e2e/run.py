"""Running the e2e benchmark: a stack on hollow nodes, the raw publish rate before and after, rounds of jobs
published onto the intake stream, every time read back from the event log, the stack stopped.

Each round waits for every job of the previous one to finish, so round n runs on a stack that holds the
finished work of the rounds before it (the "flat with state" figure).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from services.cli.bench_e2e import costs, procstat
from services.cli.bench_e2e.figures import RoundTimes, round_figures
from services.cli.bench_e2e.follow import follow_binds_and_phases
from services.cli.bench_e2e.rawpub import raw_publish_rate
from services.cli.bench_e2e.replay import log_events, replay_rates
from services.cli.bench_e2e.stack import BenchStack
from services.cli.bench_e2e.workload import NAMESPACE, BenchJob, arrival_offsets, bench_jobs
from services.cli.stack.layout import StackState, creds_path
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, EventSubject, intake_subject
from shared.security.permissions import PROVISIONER

FINAL_PHASES = frozenset({"Completed", "Failed", "Aborted", "Terminated"})


@dataclass(frozen=True, slots=True)
class BenchSpec:
    nodes: int
    replicas: int
    jobs: int
    rounds: int = 1
    min_pods: int = 1
    max_pods: int = 8
    duration: str = "2s"
    arrival_rate: float | None = None  # pods/s; None: a burst
    seed: int = 0
    replay: bool = False  # afterwards, every service replays the whole log (its checkpoint deleted)
    ready_timeout_s: float = 300.0
    round_timeout_s: float = 900.0
    keep_home: bool = False
    no_auth: bool = False  # the bus open, as before identities (to measure what they cost)
    no_tls: bool = False  # NATS and etcd over plain TCP, authentication on (to measure what TLS costs)


class _Round:
    """What the log says about one round's jobs, as it arrives."""

    def __init__(self, jobs: list[BenchJob]) -> None:
        self.jobs = {job.name: job for job in jobs}
        self.submitted: dict[str, float] = {}
        self.final: dict[str, tuple[str, float]] = {}  # job -> (phase, time)
        self.bound: dict[str, tuple[str, float]] = {}  # pod -> (job, time)
        self.done = asyncio.Event()

    def observe(self, ref: EventSubject, env: Envelope) -> None:
        if env.type == "PodBound":
            job = ref.name.rsplit("-worker-", 1)[0]
            if job in self.jobs:
                self.bound.setdefault(ref.name, (job, env.time))
        elif env.type == "JobStatusChanged" and ref.name in self.jobs:
            phase = env.payload.get("phase")
            if phase in FINAL_PHASES and ref.name not in self.final:
                self.final[ref.name] = (str(phase), env.time)
                if len(self.final) == len(self.jobs):
                    self.done.set()

    def times(self) -> RoundTimes:
        completed = {job: at for job, (phase, at) in self.final.items() if phase == "Completed"}
        return RoundTimes(self.submitted, completed, self.bound)


async def _publish(bus: Bus, round_: _Round, jobs: list[BenchJob], offsets: list[float]) -> None:
    started = time.monotonic()
    for job, offset in zip(jobs, offsets, strict=True):
        delay = started + offset - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        round_.submitted[job.name] = time.time()
        await bus.js.publish_async(
            intake_subject("job", NAMESPACE, job.name),
            orjson.dumps(job.manifest),
            headers={"Nats-Msg-Id": f"bench-{job.name}"},
        )
    await bus.js.publish_async_completed()


async def _counters(stack: BenchStack) -> dict[str, dict[str, float]]:
    state = StackState.read(stack.home)
    services = [] if state is None else state.services
    return {s.name: await asyncio.to_thread(costs.scrape, s.metrics_port) for s in services}


async def _run_round(
    bus: Bus, spec: BenchSpec, index: int, stack: BenchStack, say: Callable[[str], None]
) -> dict[str, Any]:
    jobs = bench_jobs(
        spec.jobs,
        min_pods=spec.min_pods,
        max_pods=spec.max_pods,
        duration=spec.duration,
        seed=spec.seed + index,
        prefix=f"r{index}",
    )
    pods = sum(job.pods for job in jobs)
    round_ = _Round(jobs)
    pids = stack.pids()
    # the services' counters are scraped before their CPU is read, and again after: formatting a scrape
    # (thousands of series in the binder, one per node and resource) is the bench's cost, not the round's
    counters_before = await _counters(stack)
    cpu_before = {name: procstat.cpu_seconds(pid) for name, pid in pids.items()}
    watcher = asyncio.create_task(
        follow_binds_and_phases(bus, round_.observe, await bus.last_seq(EVENTS_STREAM) + 1)
    )
    say(f"round {index + 1}: publishing {len(jobs)} jobs ({pods} pods)")
    publisher = asyncio.create_task(_publish(bus, round_, jobs, arrival_offsets(jobs, spec.arrival_rate)))
    deadline = time.monotonic() + spec.round_timeout_s
    try:
        while not round_.done.is_set():
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"round {index + 1}: {len(round_.final)}/{len(jobs)} jobs finished, "
                    f"{len(round_.bound)}/{pods} pods bound within {spec.round_timeout_s:.0f}s"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(round_.done.wait(), 2.0)
            say(
                f"round {index + 1}: {len(round_.bound)}/{pods} pods bound, {len(round_.final)} jobs finished"
            )
        await publisher
    finally:
        publisher.cancel()
        watcher.cancel()
        await asyncio.gather(publisher, watcher, return_exceptions=True)
    cpu_after = {name: procstat.cpu_seconds(pid) for name, pid in stack.pids().items()}
    counters_after = await _counters(stack)
    figures: dict[str, Any] = {"round": index + 1, **round_figures(round_.times())}
    failed = sorted(job for job, (phase, _) in round_.final.items() if phase != "Completed")
    if failed:
        figures["jobs_not_completed"] = failed[:20]
    figures["per_pod"] = costs.per_pod(counters_before, counters_after, len(round_.bound))
    figures["sessions"] = costs.sessions(counters_before, counters_after)
    figures["cpu_s"] = {
        name: round(after - before, 2)
        for name, after in cpu_after.items()
        if after is not None and (before := cpu_before.get(name)) is not None
    }
    return figures


async def _measure(spec: BenchSpec, stack: BenchStack, ready_s: float, say: Callable[[str], None]) -> dict:
    assert stack.state is not None
    # the jobs go in as the operator's client; the scratch stream of the raw rate is made by the one
    # user allowed to create streams (docs/security.md)
    admin = stack.state.admin_creds or None
    tls_ca = stack.state.tls_ca or None
    bus = await Bus.connect(stack.state.nats_url, name="lahar-bench", creds=admin, tls_ca=tls_ca)
    scratch = await Bus.connect(
        stack.state.nats_url,
        name="lahar-bench-raw",
        creds=str(creds_path(stack.home, PROVISIONER)) if admin else None,
        tls_ca=tls_ca,
    )
    try:
        say("measuring the raw publish rate")
        raw_before = await raw_publish_rate(scratch)
        rounds = [await _run_round(bus, spec, index, stack, say) for index in range(spec.rounds)]
        say("measuring the raw publish rate again")
        raw_after = await raw_publish_rate(scratch)
        events_upto = await log_events(bus) if spec.replay else []
    finally:
        await scratch.close()
        await bus.close()
    replays = await replay_rates(stack, say, events_upto) if spec.replay else None
    raw = (raw_before + raw_after) / 2
    for figures in rounds:
        figures["ratio"] = round(figures["pods_per_s"] / raw, 4)
    first = rounds[0]
    result: dict[str, Any] = {
        "nodes": spec.nodes,
        "replicas": spec.replicas,
        "jobs": spec.jobs,
        "rounds": spec.rounds,
        "arrival_rate": spec.arrival_rate,
        "ready_s": round(ready_s, 2),
        **{k: v for k, v in first.items() if k not in ("round", "cpu_s", "per_pod", "sessions")},
        "raw_publish_per_s": round(raw, 1),
        "raw_publish_before_after": [round(raw_before, 1), round(raw_after, 1)],
        "cpu_s": first["cpu_s"],
        "per_pod": first["per_pod"],
        "sessions": first["sessions"],
        "peak_rss_mb": {
            name: round(rss, 1)
            for name, pid in stack.pids().items()
            if (rss := procstat.peak_rss_mb(pid)) is not None
        },
        "restarts": stack.restarts(),
        "load_average": round(procstat.load_average(), 2),
    }
    if spec.rounds > 1:
        result["per_round"] = rounds
    if replays is not None:
        result["replay"] = replays
    return result


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """SIGTERM ends the bench as Ctrl-C does, through its `finally`: the stack it started is stopped
    (the default action would end the process there and leave the stack running)."""

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_bench(spec: BenchSpec, say: Callable[[str], None]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="lahar-bench-"))
    stack = BenchStack(home, spec.nodes, spec.replicas, no_auth=spec.no_auth, no_tls=spec.no_tls)
    with _terminate_as_exit():
        return _run_on(spec, stack, home, say)


def _run_on(spec: BenchSpec, stack: BenchStack, home: Path, say: Callable[[str], None]) -> dict[str, Any]:
    try:
        say(f"starting a stack of {spec.nodes} hollow nodes, {spec.replicas} scheduler replica(s) in {home}")
        ready_s = stack.start(spec.ready_timeout_s, say)
        say(f"ready in {ready_s:.1f}s")
        return asyncio.run(_measure(spec, stack, ready_s, say))
    finally:
        stack.stop()
        if not spec.keep_home:
            shutil.rmtree(home, ignore_errors=True)
        else:
            say(f"kept {home}")
