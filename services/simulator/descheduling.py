"""The descheduler in `lahar simulate`: the same pure core as the service (services/descheduler/core/),
run every `interval_s` of simulated time over the simulated log and the simulated usage samples.

Its view is folded from the simulated log by the service's own fold, plus what the simulated stack writes
no event for: the nodes (loaded as they are, where a node agent would register them) and plain pods (no
Job: loaded into the world as they are, where admission would write their PodCreated). LoadAware reads
the simulator's usage samples (usage.py), whatever `metrics.type` the policy names: there is no
Prometheus in a simulation, and the samples stand for what it would measure; their averages span the
samples' window (`--usage-window`), as on a stack where LoadAware reads the node agents' samples.

Each eviction goes the way the service's does: a plan of one eviction, committed as the binder commits
plans (PodEvicting), which the simulated node answers (PodTerminated) and the job-controller reacts to by
the job's lifecycle policies, or by creating the pod again for the scheduler to place.

A run is a moment the engine's clock jumps to only while it could decide something new: the log changed
since the last run, the usage it read was still moving, or a pod's cool-down runs out. Otherwise a
simulation whose work is done, or stuck, would wake the descheduler forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from contracts.events import BINDER, DESCHEDULER
from contracts.objects import Node
from contracts.plans import Eviction, PlanMessage
from services.binder.core.core import plan_outputs
from services.descheduler.core.core import DeschedulerCore
from services.descheduler.core.evictor import JOB_NAME, Settings
from services.descheduler.core.plan import DeschedulingResult, plan_evictions
from services.descheduler.core.policy import LOAD_AWARE, DeschedulerPolicy
from services.descheduler.core.usage import NodeLoad, sample_load
from services.descheduler.core.view import ClusterView, PodRecord
from services.simulator.cluster import SimCluster
from shared.plan_ids import plan_id
from shared.usage.book import UsageBook

DEFAULT_INTERVAL_S = 600.0  # Volcano's descheduler runs every 10 minutes unless told otherwise


@dataclass(frozen=True, slots=True)
class Descheduled:
    """One eviction the descheduler had committed."""

    pod: str  # ns/name
    node: str
    plugin: str
    reason: str  # which thresholds the node exceeded, by how much
    time: float

    def plain(self) -> dict[str, object]:
        return {
            "pod": self.pod,
            "node": self.node,
            "plugin": self.plugin,
            "reason": self.reason,
            "time": self.time,
        }


@dataclass(frozen=True, slots=True)
class DeschedulingRun:
    time: float
    result: DeschedulingResult
    usage: Mapping[str, NodeLoad]  # what LoadAware read


@dataclass(slots=True)
class SimDescheduler:
    policy: DeschedulerPolicy
    interval_s: float = DEFAULT_INTERVAL_S
    settings: Settings = field(default_factory=Settings)
    next_at: float = 0.0  # as the service: a first run at start, then one every interval
    runs: list[DeschedulingRun] = field(default_factory=list)
    descheduled: list[Descheduled] = field(default_factory=list)
    _core: DeschedulerCore = field(init=False)
    _view: ClusterView = field(init=False)
    _folded: int = 0  # events of the log folded into the view
    _log_at_last_run: int = -1

    def __post_init__(self) -> None:
        self._core = DeschedulerCore(self.settings.cooldown_s)
        self._view = self._core.initial()

    @property
    def uses_usage(self) -> bool:
        return self.policy.uses(LOAD_AWARE)

    def run_if_due(self, cluster: SimCluster, now: float, usage: UsageBook | None) -> None:
        """One run if one is due by `now`: decide on the view as the log leaves it, commit the evictions,
        and let the controllers react (the evicted pods' jobs create them again before the next session)."""
        if now < self.next_at:
            return
        self.next_at = now + self.interval_s
        view = self._catch_up(cluster)
        loads = _node_loads(view, usage, now) if usage is not None and self.uses_usage else {}
        result = plan_evictions(view, self.policy, loads, now, self.settings)
        self.runs.append(DeschedulingRun(now, result, loads))
        for index, e in enumerate(result.evictions):
            eviction = Eviction(task=e.pod, job=e.podgroup, node=e.node, reason=e.message)
            pid = plan_id(DESCHEDULER, view.seq, index, f"|{e.pod}@{e.node}|{now}")
            plan = PlanMessage(pid, DESCHEDULER, view.seq, evictions=(eviction,))
            cluster.write([(BINDER, output) for output in plan_outputs(plan)], now)
            self.descheduled.append(Descheduled(e.pod, e.node, e.plugin, e.reason, now))
        cluster.settle(now)
        self._log_at_last_run = len(cluster.log)

    def next_moment(self, cluster: SimCluster) -> float | None:
        """The next run, if it could decide something the last one did not."""
        if not self.runs or cluster.changed_since(self._log_at_last_run):
            return self.next_at
        if len(self.runs) >= 2 and _figures(self.runs[-1].usage) != _figures(self.runs[-2].usage):
            return self.next_at  # the averages still move (samples of the old load leave the window)
        last = self.runs[-1].time
        cooled = [at + self.settings.cooldown_s for at in self._view.descheduled_at.values()]
        upcoming = [t for t in cooled if t > last]
        if not upcoming:
            return None
        return max(self.next_at, min(upcoming))

    def _catch_up(self, cluster: SimCluster) -> ClusterView:
        events = cluster.log.events
        for event in events[self._folded :]:
            self._view = self._core.apply(self._view, event)
        self._folded = len(events)
        _add_unlogged(self._view, cluster)
        return self._view


def _add_unlogged(view: ClusterView, cluster: SimCluster) -> None:
    """What the simulated stack writes no event for, as the world has it now: its nodes, and its plain
    pods (pods of no Job) with their node and phase."""
    world = cluster.world
    view.nodes = {n.meta.name: n for n in world.static if isinstance(n, Node)}
    for key in [k for k, r in view.pods.items() if JOB_NAME not in r.pod.meta.annotations]:
        del view.pods[key]
    for key, pod in world.pods.items():
        if JOB_NAME not in pod.meta.annotations:
            view.pods[key] = PodRecord(pod, pod.status.phase or "Pending")


def _figures(loads: Mapping[str, NodeLoad]) -> dict[str, tuple[object, dict[str, object]]]:
    """What a run read of the usage, without the samples' ages (which differ from run to run)."""
    return {name: (load.used, dict(load.pods)) for name, load in loads.items()}


def _node_loads(view: ClusterView, book: UsageBook, now: float) -> dict[str, NodeLoad]:
    """Each node's latest simulated sample as LoadAware reads a node agent's,
    aged from when it was taken."""
    loads = {}
    for name in view.nodes:
        sample = book.latest(name)
        if sample is not None:
            loads[name] = sample_load(sample, now, book.age(name, now))
    return loads


def descheduled_table(report: Mapping[str, object]) -> list[str]:
    """The report's descheduled pods for people, in the order they were evicted (nothing when no
    descheduler ran); `binds` says where each ended up."""
    descheduled = report.get("descheduled")
    if not isinstance(descheduled, list):
        return []
    lines = ["", f"descheduled: {len(descheduled)}"]
    if descheduled:
        lines.append(f"{'TIME':>8} {'POD':50} {'NODE':12} {'PLUGIN':18} REASON")
    for d in descheduled:
        lines.append(f"{d['time']:>8.0f} {d['pod']:50} {d['node']:12} {d['plugin']:18} {d['reason']}")
    return lines
