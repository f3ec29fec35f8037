"""`lahar simulate`'s engine: scheduling cycles over the simulated stack (cluster.py), in a closed loop if
asked.

Each cycle: objects due by now arrive, runs due by now end, the controllers settle, then the scheduling
session runs and the controllers settle again (cluster.py). The clock then moves one schedule period if
anything changed, otherwise it jumps to the next run end, arrival, or controller timeout / TTL. When
nothing can change any more and jobs are still unfinished, the run ends as a deadlock instead of spinning.

With a conf that enables the usage plugin, or a descheduler policy, the nodes' usage is sampled too
(usage.py) and each session gets the fresh samples; the next sample is then one more moment the clock may
jump to. With a descheduler policy the descheduler runs every interval of simulated time between the
controllers settling and the session (descheduling.py); its next run is another such moment.

Pure: the clock is simulated, randomness comes from the seed, progress goes to an optional callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from services.job_controller.core.workloads.state import WorkloadsState
from services.scheduler.core.conf import SchedulerConf
from services.scheduler.core.framework.plan import SessionResult
from services.simulator.cluster import DEFAULT_HORIZON_S, SimCluster
from services.simulator.descheduling import SimDescheduler
from services.simulator.log import SimLog
from services.simulator.metrics import UsageRecorder
from services.simulator.usage import UsageSimulation
from services.simulator.world import World

ProgressFn = Callable[[int, float, int, int], None]  # cycle, sim time, unfinished jobs, pending pods


@dataclass(slots=True)
class SimulationRun:
    world: World
    log: SimLog
    results: list[SessionResult] = field(default_factory=list)
    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    cycles: int = 0
    now: float = 0.0
    outcome: str = "cycles"  # cycles | idle | deadlock | unschedulable
    usage: UsageRecorder | None = None
    node_usage: UsageSimulation | None = (
        None  # the usage samples, when the usage plugin or LoadAware reads them
    )
    descheduler: SimDescheduler | None = None  # its runs and evictions, when a policy was given
    workloads: WorkloadsState | None = None  # the CronJobs and JobFlows, as the job-controller saw them


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
    horizon_s: float = DEFAULT_HORIZON_S,
    node_usage: UsageSimulation | None = None,
    descheduler: SimDescheduler | None = None,
) -> SimulationRun:
    """horizon_s: when CronJobs stop firing (every CronJob is suspended then), so that a closed loop with
    CronJobs ends. `node_usage`: how nodes' usage is sampled (default: UsageSimulation's 30 s period),
    used only when the conf enables the usage plugin or a descheduler is given. `descheduler`: runs the
    descheduler's core on the simulated clock."""
    cluster = SimCluster(objects, horizon_s=horizon_s)
    world = cluster.world
    run = SimulationRun(world, cluster.log)
    run.usage = UsageRecorder(world)
    run.descheduler = descheduler
    scheduler_reads_usage = conf.uses("usage")
    if scheduler_reads_usage or descheduler is not None:
        run.node_usage = node_usage or UsageSimulation()
    sampler = run.node_usage
    limit = max_cycles if until_idle else (cycles or 1)
    now = 0.0
    while run.cycles < limit:
        mark = len(cluster.log)
        fresh = None
        if sampler is not None:
            sampler.advance(world, now, mark)
            fresh = sampler.fresh(now) if scheduler_reads_usage else None
        cluster.arrive(now)
        cluster.complete(now)
        cluster.settle(now)
        if descheduler is not None:
            descheduler.run_if_due(cluster, now, sampler.book if sampler is not None else None)
        cycle = f"cycle-{run.cycles}"
        result = cluster.schedule(conf, seed=seed + run.cycles, session_id=cycle, now=now, usage=fresh)
        run.results.append(result)
        run.binds.update(result.binds)
        run.evictions.extend(result.evictions)
        run.cycles += 1
        run.usage.sample(now)
        if progress is not None:
            progress(run.cycles, now, len(world.unfinished_jobs()), len(world.pending_pods()))
        if not until_idle:
            now += period_s
            continue
        if cluster.idle(now):
            run.outcome = "idle"
            break
        if cluster.changed_since(mark):
            now += period_s
            continue
        moments = (
            cluster.next_moment(now),
            sampler.next_moment(len(cluster.log)) if sampler is not None else None,
            descheduler.next_moment(cluster) if descheduler is not None else None,
        )
        upcoming = min((t for t in moments if t is not None), default=None)
        if upcoming is None:
            run.outcome = stall_outcome(world)
            break
        now = max(upcoming, now + period_s)
    run.now = now
    run.usage.finish(now)
    run.workloads = cluster.controllers.workloads
    return run
