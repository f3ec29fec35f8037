"""The descheduler service: its view fed by the log (core/core.py), a run every
`--descheduling-interval` (or on a cron expression), each run's evictions sent to the binder as plans
(one eviction per plan, so a pod that moved meanwhile does not hold back the others), or with
`--dry-run` only logged and counted.

The binder stays the single committer: it checks each eviction against its ledger (the pod still on
that node, not already stopping) and writes the PodEvicting that the node agent and the job-controller
act on; the job creates the pod again (or its lifecycle policy for PodEvicted decides) and the scheduler
places it. Run it with `python -m services.descheduler --policy-config-file FILE --nats-url URL
--etcd-endpoint HOST:PORT`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any

import structlog
from opentelemetry.trace import Tracer

from contracts.cron import next_time
from contracts.events import DESCHEDULER
from contracts.plans import Eviction, PlanMessage
from services.descheduler.config import DeschedulerConfig
from services.descheduler.core.core import DeschedulerCore
from services.descheduler.core.plan import DeschedulingResult, plan_evictions
from services.descheduler.core.policy import LAHAR_METRICS, LOAD_AWARE, DeschedulerPolicy
from services.descheduler.core.usage import NodeLoad
from services.descheduler.metrics import DeschedulerMetrics
from services.descheduler.usage_sources import SupportsLatest, UsageSource, UsageUnavailable, source_for
from shared.bus.jetstream import Bus
from shared.bus.streams import plans_stream
from shared.plan_ids import plan_id
from shared.plan_publish import PlanNotSent, publish_plan
from shared.runner import EventSourcedService
from shared.service import connect_bus, connect_etcd
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry, default_registry
from shared.usage.book import UsageBook
from shared.usage.subscriber import follow_usage

log = structlog.get_logger(__name__)


class DeschedulerService(EventSourcedService[Any]):
    def __init__(
        self,
        bus: Bus,
        etcd: Etcd,
        config: DeschedulerConfig,
        *,
        policy: DeschedulerPolicy | None = None,
        usage: UsageSource | None = None,
        lahar_reader: SupportsLatest | None = None,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        registry = registry or default_registry()
        super().__init__(
            DeschedulerCore(config.settings.cooldown_s),
            bus,
            etcd,
            config,
            registry=registry,
            tracer=tracer,
            clock=clock,
        )
        self.config: DeschedulerConfig = config
        self.policy = policy or config.policy()
        sources = self.policy.metrics_sources()
        # the node agents' samples, followed on the bus (follow_usage) when the policy reads them and no
        # reader is given
        self.usage_book: UsageBook | None = None
        if usage is None and lahar_reader is None and any(m.type == LAHAR_METRICS for m in sources):
            self.usage_book = lahar_reader = UsageBook()
        # the usage LoadAware reads: given, or the one its policy names
        self.usage = usage or (source_for(sources[0], lahar_reader) if sources else None)
        if self.usage is None and self.policy.uses(LOAD_AWARE):
            log.warning("LoadAware has no usage source to read: it judges no node", metrics=sources)
        self.desched_metrics = DeschedulerMetrics(registry)
        self.runs = 0
        self.last: DeschedulingResult | None = None
        self._running = False

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        if self.usage_book is None:
            return [self._loop()]
        return [self._loop(), follow_usage(self.bus.nc, self.usage_book, self.clock, self.stopping)]

    def health(self) -> dict[str, Any]:
        return {
            **super().health(),
            "runs": self.runs,
            "dry_run": self.config.dry_run,
            "last_evictions": len(self.last.evictions) if self.last else 0,
        }

    async def idle(self) -> bool:
        return not self._running and await super().idle()

    async def _loop(self) -> None:
        await self.bus.ensure_streams([plans_stream(replicas=self.config.stream_replicas)])
        interval, schedule = self.config.interval_s, self.config.schedule
        due = self.clock()  # as Volcano's descheduler: a first run at start, then on the timer
        while not self.stopping.is_set():
            wait = max(0.0, due - self.clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), wait)
            if self.stopping.is_set():
                break
            if self.leading:
                try:
                    await self.deschedule()
                except Exception:  # one bad run (a bug, an odd object) must not stop the service
                    log.exception("descheduling run failed")
            if schedule is not None:
                due = next_time(schedule, self.clock()) or float("inf")
            else:
                due = self.clock() + interval

    async def deschedule(self) -> DeschedulingResult:
        """One run now: measure, decide, and send (or, dry, list) the evictions."""
        self._running = True
        started = time.perf_counter()
        try:
            usage = await self._usage()
            # decided on the view as it stands: nothing is awaited between reading it and deciding
            result = plan_evictions(self.state, self.policy, usage, self.clock(), self.config.settings)
            self.runs += 1
            self.last = result
            self._log(result)
            if not self.config.dry_run:
                await self._send(result)
            self.desched_metrics.ran(
                result, dry_run=self.config.dry_run, seconds=time.perf_counter() - started
            )
            return result
        finally:
            self._running = False
            self.progressed()

    async def _usage(self) -> dict[str, NodeLoad]:
        if self.usage is None or not self.policy.uses(LOAD_AWARE):
            return {}
        duration = min(
            (a.duration_s for p in self.policy.profiles for a in p.balance if a.plugin == LOAD_AWARE),
            default=120.0,
        )
        nodes = list(self.state.nodes.values())
        try:
            return await self.usage.node_loads(nodes, duration, self.clock())
        except UsageUnavailable as exc:
            log.warning("usage unavailable: LoadAware judges no node this run", error=str(exc))
            return {}

    def _log(self, result: DeschedulingResult) -> None:
        if result.note:
            log.info("descheduling run did nothing", why=result.note)
        for run in result.runs:
            if run.note:
                log.info("plugin evicted nothing", profile=run.profile, plugin=run.plugin, why=run.note)
        verb = "would evict" if self.config.dry_run else "evicting"
        for e in result.evictions:
            log.info(verb, pod=e.pod, node=e.node, profile=e.profile, plugin=e.plugin, reason=e.reason)

    async def _send(self, result: DeschedulingResult) -> None:
        for index, e in enumerate(result.evictions):
            eviction = Eviction(task=e.pod, job=e.podgroup, node=e.node, reason=e.message)
            pid = plan_id(DESCHEDULER, self.seq, index, f"|{e.pod}@{e.node}|")
            plan = PlanMessage(pid, DESCHEDULER, self.seq, evictions=(eviction,))
            try:
                await publish_plan(self.bus, self.tracer, plan, traceparent=None, now=self.clock())
            except PlanNotSent as exc:
                # the next run decides again from the view (the pod is still there, not stopping)
                log.warning("eviction plan not sent", pod=e.pod, error=str(exc))
                self.desched_metrics.plans_unsent.inc()


async def build(config: DeschedulerConfig, stack: contextlib.AsyncExitStack) -> DeschedulerService:
    bus = await connect_bus(config, stack, name=DESCHEDULER)
    etcd = await connect_etcd(config, stack)
    return DeschedulerService(bus, etcd, config)
