"""The binder service: one leader commits plans, standbys follow the log (docs/control-plane.md,
"Scheduling flow" 3).

Beside the event loop over BinderShellCore the leader runs:
- the plan intake (services/binder/plan_intake.py): plans checked against the ledger, their events
  published, then acknowledged;
- the node read model writer (nodes with their readiness, batched, fenced by the term).
Every instance listens to heartbeats (core NATS `lahar.hb.>`, see shared.bus.heartbeats) and feeds
them to liveness; `watch_from` is called at start and on taking over, since heartbeats are not in the log.
It also listens to its own connection: while it is down the binder judges no node (`deaf`), and once it
is back, or after the client dropped messages, every node gets a fresh timeout (`heard_all`), so that
nodes are judged only on time during which the binder could hear them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any

import nats.errors
import nats.js.errors
import structlog
from nats.aio.msg import Msg
from opentelemetry.trace import Tracer

from services.binder.config import BinderConfig
from services.binder.core.core import BinderCore
from services.binder.exported import ledger_series
from services.binder.metrics import BinderMetrics
from services.binder.plan_intake import RETRY_S, PlanIntake
from services.binder.read_model import NodeWriter
from services.binder.state import BinderShellCore, BinderShellState
from shared.bus.heartbeats import HEARTBEAT_FILTER, HeartbeatError, decode_heartbeat
from shared.bus.jetstream import MAX_BATCH_MESSAGES, Bus, ConnectionChange
from shared.bus.log_gaps import LogGap
from shared.bus.subjects import PLANS_STREAM
from shared.store.election import FencedOut
from shared.store.etcd import Etcd, EtcdError
from shared.telemetry.metrics import Registry, default_registry
from shared.waiting import first_set

log = structlog.get_logger(__name__)


class BinderService(PlanIntake):
    follows_whole_log = True  # a plan is checked against everything its scheduler saw (_catch_up)

    def __init__(
        self,
        bus: Bus,
        etcd: Etcd,
        config: BinderConfig,
        *,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        registry = registry or default_registry()
        self.binder = BinderCore(node_timeout_s=config.node_timeout_s, max_plan_events=MAX_BATCH_MESSAGES)
        super().__init__(
            BinderShellCore(self.binder), bus, etcd, config, registry=registry, tracer=tracer, clock=clock
        )
        self.config: BinderConfig = config
        self.binder_metrics = BinderMetrics(registry)
        # the ledger's allocation series, from the leader only (a standby holds the same ledger)
        self.binder_metrics.export(lambda: ledger_series(self.state.core.ledger) if self.leading else {})
        self.nodes = NodeWriter(etcd)
        self._nodes_changed = asyncio.Event()
        self._lead = asyncio.Event()
        self._applied = asyncio.Event()  # set whenever the loop finished a unit of work
        if self.seat is None:
            self._lead.set()
        bus.on_connection_change(self._hearing_changed)

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        return [self._consume_plans(), self._listen_heartbeats(), self._write_nodes()]

    def health(self) -> dict[str, Any]:
        nodes = self.state.core.ledger.nodes
        return {
            **super().health(),
            "plans_in_flight": len(self.state.core.inflight),
            "nodes": len(nodes),
            "nodes_ready": sum(entry.ready for entry in nodes.values()),
            "hearing_heartbeats": self.state.core.liveness.deaf_since is None,
        }

    async def idle(self) -> bool:
        """Also, as leader: no plan waiting on LAHAR_PLANS (acknowledged plans leave the work queue)."""
        if not await super().idle():
            return False
        if not self.leading:
            return True
        try:
            return (await self.bus.jsm.stream_info(PLANS_STREAM)).state.messages == 0
        except nats.js.errors.NotFoundError:  # not created yet: nobody sent a plan
            return True

    async def after_replay(self) -> None:
        self.binder.watch_from(self.state.core, self.clock())

    async def after_reconcile(self) -> None:
        if self.state.changed:
            self._nodes_changed.set()

    def _leadership_changed(self, leading: bool) -> None:
        if leading:
            # Heartbeats before this term were not this leader's to judge: every node gets a full timeout.
            self.binder.watch_from(self.state.core, self.clock())
            self.state.changed.update(self.state.nodes)
            self._nodes_changed.set()
            self._lead.set()
        else:
            self._lead.clear()
        super()._leadership_changed(leading)

    # --- heartbeats ----------------------------------------------------------------------------------
    def _hearing_changed(self, change: ConnectionChange) -> None:
        """What the connection's changes mean to liveness: silence heard while the binder was cut off
        (or while heartbeats were dropped on their way to it) is not held against any node."""
        now = self.clock()
        if change == "disconnected":
            log.warning("cannot hear heartbeats: judging no node until the connection is back")
            self.state.core = self.binder.deaf(self.state.core, now)
        else:
            log.info("hearing heartbeats again: every node gets a fresh timeout", after=change)
            self.state.core = self.binder.heard_all(self.state.core, now)

    def _log_gap(self, gap: LogGap) -> None:
        """The log's reading stalled with the connection up (its consumer recreated, records skipped):
        the heartbeats on that connection may have stalled too, so silence up to now counts against no
        node. Noticed when the next record arrives (at most two idle heartbeats, 2 s, after a consumer
        was lost the client recreates it; the binder's own outputs and the agents' reports keep the log
        moving in a busy cluster)."""
        super()._log_gap(gap)
        log.warning(
            "a gap in reading the log: every node gets a fresh timeout", silent_s=round(gap.silent_s, 3)
        )
        self.state.core = self.binder.heard_all(self.state.core, self.clock())

    async def _listen_heartbeats(self) -> None:
        # Heartbeats are core NATS messages on this one connection. The server drops messages of a
        # subscription only (1) while the connection is down (the disconnected callback: deaf), (2) when
        # the client's pending limits overflow (the slow-consumer error callback: heard_all) or (3) when
        # it judges the client a slow consumer itself, and then it closes the connection (1 again). So
        # on one server no heartbeat is lost without a callback. Not covered: in a cluster, a broken
        # route between the binder's server and an agent's drops that agent's heartbeats with nothing
        # to tell the binder; that looks like the agent being cut off (docs/reliability.md).
        sub = await self.bus.nc.subscribe(HEARTBEAT_FILTER, cb=self._heartbeat)
        try:
            await self.stopping.wait()
        finally:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def _heartbeat(self, msg: Msg) -> None:
        try:
            heartbeat = decode_heartbeat(msg.data)
        except HeartbeatError as exc:
            self.binder_metrics.heartbeats.labels("invalid").inc()
            log.warning("ignoring a heartbeat", subject=msg.subject, error=str(exc))
            return
        self.binder_metrics.heartbeats.labels("ok").inc()
        now = self.clock()
        nodes = self.state.core.ledger.nodes
        # A NotReady node may be back: reconcile it now rather than at the next timer (NodeReady).
        back = [
            name for name in heartbeat.nodes if (entry := nodes.get(name)) is not None and not entry.ready
        ]
        if back:
            self.fold(lambda s: self._beat(s, heartbeat.nodes, now), keys=back)
        else:
            self._beat(self.state, heartbeat.nodes, now)

    def _beat(self, state: BinderShellState, nodes: tuple[str, ...], now: float) -> BinderShellState:
        state.core = self.binder.heartbeat(state.core, nodes, now)
        return state

    # --- read model ----------------------------------------------------------------------------------
    async def _write_nodes(self) -> None:
        while not self.stopping.is_set():
            await first_set(self._nodes_changed, self.stopping, timeout_s=self.config.reconcile_interval_s)
            self._nodes_changed.clear()
            fence = self.seat.fence if self.seat is not None else None
            if not self.leading or not (self.state.changed or self.nodes.pending):
                continue
            self.nodes.mark(self.state.changed)
            self.state.changed.clear()
            try:
                await self.nodes.flush(self.state.nodes, fence)
            except FencedOut:
                if self.seat is not None:
                    self.seat.step_down("read model write refused: the leadership term is over")
            except EtcdError as exc:
                log.warning("node read model not written; retrying", error=str(exc))
                await first_set(self.stopping, timeout_s=RETRY_S)
