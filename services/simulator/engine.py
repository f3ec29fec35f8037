"""`lahar simulate`'s engine: scheduling sessions over a simulated world, in a closed loop if asked.

Each cycle: objects due by now arrive, pods due by now finish, the job-controller updates job phases, one
scheduling session runs over a snapshot of the world and its plan is applied (binds start pods, evictions
send pods back to Pending). The clock then moves one schedule period if anything changed, otherwise it
jumps to the next completion or arrival. When nothing can change any more and jobs are still unfinished,
the run ends as a deadlock instead of spinning.

Pure: the clock is simulated, randomness comes from the seed, progress goes to an optional callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from services.scheduler.core.conf import SchedulerConf
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.session import run_session
from services.simulator.metrics import UsageRecorder
from services.simulator.world import World, arrival_time

ProgressFn = Callable[[int, float, int, int], None]  # cycle, sim time, unfinished jobs, pending pods


@dataclass(slots=True)
class SimulationRun:
    world: World
    results: list[SessionResult] = field(default_factory=list)
    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    cycles: int = 0
    now: float = 0.0
    outcome: str = "cycles"  # cycles | idle | deadlock | unschedulable
    usage: UsageRecorder | None = None


def stall_outcome(world: World) -> str:
    """Nothing can change any more: finished, a deadlock (some unfinished job holds resources it cannot
    use), or unschedulable (pending work that fits nowhere)."""
    unfinished = world.unfinished_jobs()
    if not unfinished and not world.pending_pods():
        return "idle"
    for key in unfinished:
        if any(world.pods[k].status.phase == "Running" for k, g in world.pod_job.items() if g == key):
            return "deadlock"
    return "unschedulable"


def build_world(objects: Iterable[object]) -> World:
    world = World()
    for obj in objects:
        meta = getattr(obj, "meta", None)
        arrives = arrival_time(meta) if meta is not None else 0.0
        if arrives > 0:
            world.pending_arrivals.append((arrives, obj))
        else:
            world.add(obj, 0.0)
    return world


def simulate(
    objects: Iterable[object],
    conf: SchedulerConf,
    *,
    cycles: int | None = 1,
    until_idle: bool = False,
    seed: int = 0,
    period_s: float = 1.0,
    max_cycles: int = 100_000,
    progress: ProgressFn | None = None,
) -> SimulationRun:
    world = build_world(objects)
    run = SimulationRun(world)
    run.usage = UsageRecorder(world)
    limit = max_cycles if until_idle else (cycles or 1)
    now = 0.0
    while run.cycles < limit:
        changed = world.admit_arrivals(now)
        changed |= world.complete_due(now) > 0
        changed |= world.sync_jobs(now) > 0
        result = run_session(
            world.snapshot(), conf, seed=seed + run.cycles, session_id=f"cycle-{run.cycles}", now=now
        )
        run.results.append(result)
        run.binds.update(result.binds)
        run.evictions.extend(result.evictions)
        changed |= world.apply(result, now) > 0
        changed |= world.sync_jobs(now) > 0
        run.cycles += 1
        run.usage.sample(now)
        if progress is not None:
            progress(run.cycles, now, len(world.unfinished_jobs()), len(world.pending_pods()))
        if not until_idle:
            now += period_s
            continue
        if (
            not world.unfinished_jobs()
            and not world.finish_at
            and not world.pending_arrivals
            and not world.pending_pods_without_job()
        ):
            run.outcome = "idle"
            break
        if changed:
            now += period_s
            continue
        upcoming = [t for t in (world.next_completion(), world.next_arrival()) if t is not None]
        if not upcoming:
            run.outcome = stall_outcome(world)
            break
        now = max(min(upcoming), now + period_s)
    run.now = now
    run.usage.finish(now)
    return run
