"""A scheduler replica: the view fed by the log, sessions on a timer and when work arrives, plans sent to
the binder (docs/control-plane.md, "Scheduling flow").

Every replica is active (no election). The loop folds LAHAR_EVENTS into the view (ViewCore); beside it
the scheduling task runs a session every schedule_period_s, and debounce_s after the view changed (new
events, a ring change). The session sees the whole cluster but places only the PodGroups this replica
owns on the ring; the replica assumes its plans in the view and sends each on LAHAR_PLANS. It never
waits for the binder: the log answers each plan with its events (PodBound, ...) or a PlanRejected, and an
assumption nobody answers within assumption_timeout_s is dropped so its pods are planned again.

When the conf enables the usage plugin, the replica also follows the node agents' usage samples (core
NATS, shared/usage/) and hands each session those received within usage_stale_after_s (docs/usage.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Coroutine
from typing import Any

import structlog
from opentelemetry.trace import Tracer

from contracts.objects import PodGroupStatus
from contracts.plans import PlanMessage
from services.scheduler.core.conf import SchedulerConf, default_conf
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.session import Session
from services.scheduler.focus import session_focus
from services.scheduler.metrics import SchedulerMetrics, session_outcome
from services.scheduler.ownership import Ownership
from services.scheduler.plans import build_plans
from services.scheduler.replica_series import ReplicaSeries
from services.scheduler.state import SchedulerState, ViewCore
from shared.bus.jetstream import Bus
from shared.bus.streams import plans_stream
from shared.plan_publish import publish_plans
from shared.ring import Ring
from shared.runner import EventSourcedService, RunnerConfig
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry, default_registry
from shared.usage.book import UsageBook
from shared.usage.subscriber import follow_usage

log = structlog.get_logger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulerConfig(RunnerConfig):
    """A scheduler replica."""

    replica_id: str
    schedule_period_s: float = 1.0
    debounce_s: float = 0.05  # how long a burst of events may grow before the session that answers it
    # freed capacity (pods ending, nodes, queues) is answered by a session at most this often: during a
    # burst it changes all the time, and every replica would otherwise run sessions back to back
    capacity_period_s: float = 0.5
    # After a session that took T seconds, the next one waits until session_pacing x T has passed (a
    # periodic or ring-change session aside). Under a burst a replica then spends at most 1/(1+pacing)
    # of its time in sessions and each session places what arrived meanwhile, so the cost of opening a
    # session over the whole cluster is shared by more placements; small sessions are barely delayed.
    session_pacing: float = 1.0
    scheduler_conf_file: str = ""  # volcano-scheduler.conf; empty: the default conf
    seed: int = 0  # session n draws from Random(seed + n)
    membership_ttl_s: int = 5
    assumption_timeout_s: float = 60.0
    # a node's usage sample older than this says nothing about it now: the usage plugin treats the node as
    # unknown (Volcano's 5 minutes without fresh metrics)
    usage_stale_after_s: float = 300.0

    def problems(self) -> list[str]:
        problems = super().problems()
        if not self.replica_id or "/" in self.replica_id:
            problems.append(f"replica_id: expected a name without '/', got {self.replica_id!r}")
        for name in ("schedule_period_s", "assumption_timeout_s", "capacity_period_s", "usage_stale_after_s"):
            if getattr(self, name) <= 0:
                problems.append(f"{name}: expected a positive number, got {getattr(self, name)}")
        if self.session_pacing < 0:
            problems.append(f"session_pacing: expected a number >= 0, got {self.session_pacing}")
        if self.debounce_s < 0:
            problems.append(f"debounce_s: expected a number >= 0, got {self.debounce_s}")
        if self.membership_ttl_s < 1:
            problems.append(f"membership_ttl_s: expected an integer >= 1, got {self.membership_ttl_s}")
        return problems


class SchedulerService(EventSourcedService[SchedulerState]):
    def __init__(
        self,
        bus: Bus,
        etcd: Etcd,
        config: SchedulerConfig,
        conf: SchedulerConf | None = None,
        *,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        registry = registry or default_registry()
        super().__init__(
            ViewCore(config.replica_id), bus, etcd, config, registry=registry, tracer=tracer, clock=clock
        )
        self.config: SchedulerConfig = config
        self.replica = config.replica_id
        self.conf = conf or default_conf()
        self.sched_metrics = SchedulerMetrics(registry)
        self.ownership = Ownership(etcd, self.replica, config.membership_ttl_s, self._kick_now)
        self.series = ReplicaSeries(self.sched_metrics, lambda: self.state.view, self.ownership.owned, clock)
        self._kick = asyncio.Event()
        self._sessions = 0
        self._in_session = False
        self._planned_seq = -1  # view seq of the last session (or of the last check that found no change)
        self._last_capacity = -1  # the view's capacity changes the last session answered
        self._capacity_at = 0.0  # loop time of the last session
        self._paced_until = 0.0  # loop time before which new work waits (session_pacing)
        self._new_work: set[str] = set()  # owned PodGroups with pending work no session has seen
        self._touched: set[str] = set()  # owned PodGroups whose pods changed since the last session
        self._skipped = 0  # sessions due that had nothing owned to act for
        self._owned_share = 0  # live PodGroups this replica owns, as of its last periodic session
        self._last_ring: Ring | None = None
        self._assumed_at: dict[str, float] = {}  # plan id -> monotonic time it was assumed
        # the latest usage sample of every node, when a session needs them (the usage plugin)
        self.usage = UsageBook() if self.conf.uses("usage") else None

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        tasks = [self.ownership.run(self.stopping), self._schedule_loop()]
        if self.usage is not None:
            reports = self.sched_metrics.usage_reports
            tasks.append(
                follow_usage(
                    self.bus.nc,
                    self.usage,
                    self.clock,
                    self.stopping,
                    lambda valid: reports.labels("ok" if valid else "invalid").inc(),
                )
            )
        return tasks

    def health(self) -> dict[str, Any]:
        return {
            **super().health(),
            "service": "scheduler",
            "replica": self.replica,
            "member": self.ownership.registered,
            "ring": list(self.ownership.ring.members),
            # nodes, nodes_ready (how many the view knows, how many of them are Ready), pods and
            # PodGroups the view holds and how many of them sessions see (live_pods, live_podgroups)
            **self.state.view.counts(),
            "sessions": self._sessions,
            "sessions_skipped": self._skipped,
            "plans_assumed": len(self._assumed_at),
        }

    async def idle(self) -> bool:
        """Also: every change of the view has been answered by a session."""
        busy = self._in_session or self._kick.is_set() or self._planned_seq != self.state.view.seq
        return not busy and await super().idle()

    async def after_replay(self) -> None:
        await super().after_replay()
        self.state.view.watching = True  # from here on pods are timed as the replica sees them

    async def after_reconcile(self) -> None:
        # Called after every batch of events: answer them with a session soon.
        if self.state.view.seq != self._planned_seq:
            self._kick_now()
        self.series.time_tasks()

    def _kick_now(self) -> None:
        self._kick.set()
        self.progressed()

    async def _schedule_loop(self) -> None:
        await self.bus.ensure_streams([plans_stream(replicas=self.config.stream_replicas)])
        loop = asyncio.get_running_loop()
        next_tick = loop.time()
        while not self.stopping.is_set():
            wake = next_tick
            if self.state.view.capacity != self._last_capacity:
                wake = min(wake, self._capacity_at + self.config.capacity_period_s)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), max(0.0, wake - loop.time()))
            if self._kick.is_set():
                # Let a burst of events land first, and a costly session not follow the last one at
                # once (until the periodic session is due).
                paced = min(self._paced_until, next_tick) - loop.time()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), max(self.config.debounce_s, paced))
            if self.stopping.is_set():
                break
            self._kick.clear()
            periodic = loop.time() >= next_tick
            if periodic:
                next_tick = loop.time() + self.config.schedule_period_s
            if self.ownership.known.is_set():
                try:
                    await self._cycle(force=periodic)
                except Exception:  # one bad session (a bug, an odd object) must not stop the replica
                    log.exception("scheduling session failed")
            self.progressed()

    async def _cycle(self, *, force: bool) -> None:
        """One session, if something arrived that this replica may now place: new pending work of a
        PodGroup it owns (promptly), or freed capacity (at most every capacity_period_s); a periodic one
        always runs, since time passes for conditions and timeouts."""
        self._expire_assumptions()
        view = self.state.view
        owned = self.ownership.owned()
        if view.new_work:
            self._new_work |= {key for key in view.new_work if key in owned}
            view.new_work.clear()
        touched = view.take_touched()
        if touched:
            self._touched |= {key for key in touched if key in owned}
        capacity = view.capacity
        loop_time = asyncio.get_running_loop().time()
        capacity_due = (
            capacity != self._last_capacity and loop_time >= self._capacity_at + self.config.capacity_period_s
        )
        if not force and owned.ring == self._last_ring and not self._new_work and not capacity_due:
            # Nothing new can be placed now. What did change (pods started, plans answered, capacity
            # that a later session answers) still shows in the PodGroups' statuses: the periodic
            # session answers it, until then the replica is busy.
            return
        focus = session_focus(
            owned,
            ring_changed=owned.ring != self._last_ring,
            new_work=self._new_work,
            touched=self._touched,
            waiting=view.waiting_groups(),
        )
        if focus is not None and not focus:
            # Nothing this replica owns can change: no pod of its PodGroups changed since its last
            # session (so their statuses stand), none waits for a node (nothing to place, nor to preempt
            # or reclaim for) and none waits to be enqueued. A session would decide nothing.
            self._skipped += 1
            self.sched_metrics.sessions_skipped.inc()
            self._last_capacity = capacity
            self._capacity_at = loop_time
            self._planned_seq = view.seq
            return
        snapshot = view.snapshot()
        if self.usage is not None:
            fresh = self.usage.fresh(self.clock(), self.config.usage_stale_after_s)
            self.sched_metrics.usage_nodes.set(len(fresh))
            snapshot = dataclasses.replace(snapshot, usage=fresh)
        self._new_work.clear()
        self._touched.clear()
        self._capacity_at = loop_time
        self._sessions += 1
        self._in_session = True
        owned.next_session()
        try:
            started = time.perf_counter()
            # In a thread: a large session must not starve the lease renewals and the log reader.
            result, statuses, cpu_s = await asyncio.to_thread(
                _timed_session,
                snapshot,
                self.conf,
                seed=self.config.seed + self._sessions,
                session_id=f"{self.replica}-{self._sessions}",
                now=self.clock(),
                # the PodGroups it acts for; the other owned ones are modelled like other replicas'
                owns=owned.owns if focus is None else focus.__contains__,
                stopwatch=time.perf_counter,
            )
            elapsed_ms = (time.perf_counter() - started) * 1000
            self._paced_until = (
                asyncio.get_running_loop().time() + self.config.session_pacing * elapsed_ms / 1000
            )
            plans = build_plans(result, snapshot, self.replica, owned, statuses)
            outcome = session_outcome(result, owned)
            if focus is None or force:  # the ring's share (a walk over every PodGroup), now and then
                self._owned_share = sum(pg.meta.key in owned for pg in snapshot.podgroups)
            # not only the PodGroups this session acted for
            outcome = dataclasses.replace(outcome, owned=self._owned_share)
            self.sched_metrics.session(elapsed_ms, cpu_s, outcome, result.stats)
            self.series.session(result, plans)
            # Assumed before they are sent, so the log's answer (possibly quick) always finds them.
            for plan in plans:
                view.assume(plan)
                self._assumed_at[plan.plan_id] = time.monotonic()
            await self._publish(plans)
        finally:
            self._in_session = False
        self._last_capacity = capacity
        self._last_ring = owned.ring
        self._planned_seq = snapshot.sequence
        if plans:
            log.info(
                "session planned",
                session=self._sessions,
                seq=snapshot.sequence,
                plans=len(plans),
                binds=sum(len(p.binds) for p in plans),
                evictions=sum(len(p.evictions) for p in plans),
                ms=round(elapsed_ms, 1),
            )

    async def _publish(self, plans: list[PlanMessage]) -> None:
        traces = self.state.traces
        failed = await publish_plans(
            self.bus,
            self.tracer,
            plans,
            traceparent_of=lambda plan: traces.get(plan.subject),
            now=self.clock(),
        )
        for plan_id, exc in failed.items():
            # Forgotten, so its pods show as pending again and the next session plans them anew.
            log.warning("plan not published", error=str(exc))
            self.state.view.forget(plan_id)
            self._assumed_at.pop(plan_id, None)
            self.sched_metrics.plan_publish_failures.inc()
        self.sched_metrics.plans_published.inc(len(plans) - len(failed))

    def _expire_assumptions(self) -> None:
        live = set(self.state.view.assumed_plans())
        deadline = time.monotonic() - self.config.assumption_timeout_s
        for plan_id, at in list(self._assumed_at.items()):
            if plan_id not in live:
                del self._assumed_at[plan_id]  # settled or rejected
            elif at < deadline:
                log.warning("plan unanswered; forgetting it", plan=plan_id)
                self.state.view.forget(plan_id)
                del self._assumed_at[plan_id]
                self.sched_metrics.plans_expired.inc()


def _timed_session(*args: Any, **kwargs: Any) -> tuple[SessionResult, dict[str, PodGroupStatus], float]:
    """run_session, the statuses its owned PodGroups had (for build_plans), and the CPU seconds its
    thread spent on them."""
    started = time.thread_time()
    session = Session(*args, **kwargs)
    result = session.run()
    statuses = session.owned_statuses()
    return result, statuses, time.thread_time() - started
