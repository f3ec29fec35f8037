"""A scheduling session: the configured actions run over a working copy of one snapshot.

Pure: no I/O, no clock (the caller passes `now`), no randomness but the seeded `rng`. The same session
runs in the scheduler service, in `lahar simulate` and in replay.

`owns` says which PodGroups this session places (a scheduler replica's share of the ring; None: all).
Every PodGroup is in the model, so queue shares, DRF shares and quotas are the whole cluster's and any
running task may be a victim, but only owned jobs (`owned_jobs`) are enqueued, allocated, backfilled or
preempt and reclaim for themselves, and only they get a PodGroup status at close.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from contracts.objects import PodGroupStatus
from contracts.resources import Resources
from services.scheduler.core.conf import SchedulerConf, default_conf
from services.scheduler.core.framework.build import Owns, build_model
from services.scheduler.core.framework.close import close_session
from services.scheduler.core.framework.plan import Plan, SessionResult
from services.scheduler.core.framework.plugin import Plugin
from services.scheduler.core.framework.statement import Statement
from services.scheduler.core.framework.stats import ON_SESSION_CLOSE, ON_SESSION_OPEN, Stopwatch, Timer
from services.scheduler.core.framework.tiers import TierDispatch
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.queue import QueueInfo
from services.scheduler.core.model.task import TaskInfo, TaskStatus
from services.scheduler.core.model.topology import HyperNodeTopology
from services.scheduler.core.registry import ACTIONS, PLUGINS
from services.scheduler.core.snapshot import ClusterSnapshot

# the actions that evict running tasks, possibly of jobs another replica owns
EVICTING_ACTIONS = frozenset({"preempt", "reclaim"})


class Session(TierDispatch):
    def __init__(
        self,
        snapshot: ClusterSnapshot,
        conf: SchedulerConf | None = None,
        *,
        seed: int = 0,
        session_id: str = "session-0",
        now: float = 0.0,
        owns: Owns | None = None,
        stopwatch: Stopwatch | None = None,
    ) -> None:
        """`stopwatch`: times the session's phases into `timer.stats` (framework/stats.py)."""
        self.timer = Timer(stopwatch)
        opened = self.timer.tick()
        self.conf = conf or default_conf()
        self.snapshot = snapshot
        self.uid = session_id
        self.now = now
        self.rng = random.Random(seed)
        # other replicas' pods on nodes are tasks only if an action here may evict them
        model = build_model(snapshot, owns, victims=bool(EVICTING_ACTIONS.intersection(self.conf.actions)))
        self.resources = model.resources
        self.nodes = model.nodes
        self.jobs: dict[str, JobInfo] = model.jobs
        self.owned_jobs: dict[str, JobInfo] = (
            model.jobs if owns is None else {key: job for key, job in model.jobs.items() if job.owned}
        )
        self.queues: dict[str, QueueInfo] = model.queues
        self.priority_classes = model.priority_classes
        self.default_priority = model.default_priority
        self.skipped_pods = model.skipped_pods
        self.implicit_groups = model.implicit
        # jobs holding room reserved by an earlier preemption (their nominated tasks start Pipelined)
        self.reserved_jobs = model.reserved
        self.total_resource: Resources = self.resources.resources(self.nodes.total_allocatable())
        self.plans: list[Plan] = []
        # round-robin start for the adaptive feasible-node search (kube-scheduler's nextStartNodeIndex)
        self.next_start_node = 0
        self.enqueue_enabled = "enqueue" in self.conf.actions
        # what each reason a node failed for is about, (kind, dimension), as feasible_nodes met them: the
        # PodGroups' pending reasons tell capacity from constraints by it (framework/pending.py)
        self.node_reasons: dict[str, tuple[str, str]] = {}
        self.topology = HyperNodeTopology.build(snapshot.hypernodes, self.nodes)

        tiers = []
        self.plugins: dict[str, Plugin] = {}
        for tier in self.conf.tiers:
            built = []
            for option in tier:
                arguments = dict(option.arguments)
                if option.enable_hierarchy:
                    arguments.setdefault("enableHierarchy", True)
                plugin = PLUGINS[option.name](arguments)
                self.plugins[option.name] = plugin
                built.append((option, plugin))
            tiers.append(built)
        self._tier_plugins = tiers
        self._index_plugins(tiers)
        for built_tier in tiers:
            for _, plugin in built_tier:
                started = self.timer.tick()
                plugin.on_session_open(self)
                self.timer.plugin(plugin.name, ON_SESSION_OPEN, started)
        # reserved room (build.py) is announced as a pipeline of this session: the plugins' shares and
        # node scores count it, and un-pipelining it later is symmetric
        for key in self.reserved_jobs:
            for task in self.jobs[key].tasks_by_status[TaskStatus.PIPELINED].values():
                self.fire_allocate(task)
        self.timer.stats.open_ms = self.timer.since(opened)

    # --- conveniences used by actions and plugins -------------------------------------------------
    def statement(self) -> Statement:
        return Statement(self)

    def job_of(self, task: TaskInfo) -> JobInfo:
        return self.jobs[task.job]

    def all_tasks(self) -> Iterable[TaskInfo]:
        for job in self.jobs.values():
            yield from job.tasks.values()

    def owned_statuses(self) -> dict[str, PodGroupStatus]:
        """The status each owned PodGroup of the snapshot had when the session opened (implicit groups
        of plain pods have none): what its status updates are compared with."""
        return {
            key: job.podgroup.status
            for key, job in self.owned_jobs.items()
            if key not in self.implicit_groups
        }

    def plugin_instances(self) -> list[Plugin]:
        return [plugin for tier in self._tier_plugins for _, plugin in tier]

    # --- running ----------------------------------------------------------------------------------
    def run(self) -> SessionResult:
        """Run every configured action in order, then close the session."""
        for name in self.conf.actions:
            started = self.timer.tick()
            ACTIONS[name](self.conf.action_arguments(name)).execute(self)
            self.timer.action(name, started)
        return self.close()

    def close(self) -> SessionResult:
        for plugin in self.plugin_instances():
            started = self.timer.tick()
            plugin.on_session_close(self)
            self.timer.plugin(plugin.name, ON_SESSION_CLOSE, started)
        return close_session(self)


def run_session(
    snapshot: ClusterSnapshot,
    conf: SchedulerConf | None = None,
    *,
    seed: int = 0,
    session_id: str = "session-0",
    now: float = 0.0,
    owns: Owns | None = None,
) -> SessionResult:
    """Open a session over `snapshot`, run the configured actions and return what it decided about the
    PodGroups `owns` accepts (None: all)."""
    return Session(snapshot, conf, seed=seed, session_id=session_id, now=now, owns=owns).run()
