"""EventSourcedService: a pure Core driven by the event log (docs/control-plane.md, "The event-sourced
service loop").

Start: load the checkpoint (or the core's initial state at seq 0), replay LAHAR_EVENTS from seq + 1 with
no outputs, then follow the log live, applying each event once, in order, and reconciling after every
batch and every reconcile_interval_s. Checkpoints are written every checkpoint_every_events events or
checkpoint_every_s seconds and at shutdown. With leader_election, every instance follows the log (a hot
standby) but only the leader reconciles, publishes and checkpoints, its checkpoints fenced by its term.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Generic

import nats.js.errors
import structlog
from opentelemetry import trace
from opentelemetry.trace import Tracer

from shared.bus.jetstream import Bus
from shared.bus.log_gaps import LogGap
from shared.bus.records import StreamRecord
from shared.bus.replay import Filters, filter_list
from shared.bus.streams import events_stream
from shared.bus.subjects import EVENTS_STREAM
from shared.runner.checkpointer import Checkpointer
from shared.runner.config import RunnerConfig
from shared.runner.events import read_filters
from shared.runner.folding import RecordFolding
from shared.runner.leader import LeaderSeat, default_candidate
from shared.runner.metrics import RunnerMetrics
from shared.runner.publisher import Publisher
from shared.runner.quarantine import Quarantine
from shared.runner.reconcile_boundary import ReconcileBoundary
from shared.runner_types import Core, Key, S
from shared.service import Service
from shared.store.checkpoint import CheckpointStore
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry, default_registry

log = structlog.get_logger(__name__)

_QUEUED_BATCHES = 8  # backpressure on the live reader (each batch holds up to max_batch_events)
_FINAL_FLUSH_S = 2.0  # how long a stopping service tries to write its last quarantine records


class EventSourcedService(RecordFolding[S], Service, Generic[S]):
    """Runs core against the log. The server sends only the event types the core `reads` (None: every
    event); subject_filter, one wildcard or several, overrides that (it must include the service's own
    events). clock gives the `now` passed to reconcile (epoch seconds).

    A service that must know it has seen the whole log up to a sequence (admission deciding against
    everything before a request, the binder checking a plan against what its scheduler saw) sets
    follows_whole_log: the server then sends every event, and the loop drops the types the core does not
    read before decoding them, so `seq` is the log's position, not the last relevant event's."""

    follows_whole_log = False

    def __init__(
        self,
        core: Core[S],
        bus: Bus,
        etcd: Etcd,
        config: RunnerConfig,
        *,
        subject_filter: Filters = None,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.name = core.name
        self.core = core
        self.bus = bus
        self.etcd = etcd
        self.config = config
        reads = getattr(core, "reads", None)
        self._reads: frozenset[str] | None = None if reads is None else frozenset(reads)
        # a core that writes no events (a scheduler replica) causes no outputs (folding._fold)
        self._causes_outputs: bool = getattr(core, "writes_events", True)
        if subject_filter is not None:
            self.subject_filter: Filters = subject_filter
            self._replay_filter: Filters = subject_filter
        else:
            self.subject_filter = None if self.follows_whole_log else read_filters(reads)
            # Replay reads everything and skips unread types itself: the server delivers a consumer with
            # several filters a few times slower (~17k records/s here) than one without (~65k/s).
            self._replay_filter = None
        self.clock = clock
        self.tracer = tracer or trace.get_tracer("lahar.runner")
        self.metrics = RunnerMetrics(registry or default_registry(), core.name)
        self.publisher = Publisher(
            bus,
            core.name,
            self.tracer,
            self.metrics,
            inflight_timeout_s=config.inflight_timeout_s,
            clock=clock,
        )
        self.quarantine = Quarantine(bus, self.metrics, stream_replicas=config.stream_replicas)
        self.boundary = ReconcileBoundary(core, self.metrics, self.quarantine, clock=clock)
        self.seat = (
            LeaderSeat(
                etcd,
                core.name,
                config.instance_id or default_candidate(),
                config.leader_lease_ttl_s,
                self._leadership_changed,
            )
            if config.leader_election
            else None
        )
        self.state: S = core.initial()
        self.seq = 0  # last applied
        self.phase = "starting"  # -> replaying -> following -> stopping -> stopped
        self.checkpointer = Checkpointer(CheckpointStore(etcd, core.name), config, self.metrics, self.seat)
        # batches of live records; None wakes the loop (a fold, a stop, leadership)
        self._queue: asyncio.Queue[list[StreamRecord] | None] = asyncio.Queue(_QUEUED_BATCHES)
        self._busy = False
        self._dirty: set[Key] = set()  # keys to reconcile after the current batch
        self._full = True  # reconcile everything next time (after replay, on taking over, ...)
        self._retry_full = False  # outputs could not be stored: reconcile everything at the next tick
        self._unsettled = 0  # outputs of the last reconcile that could not be stored
        self._resync_at = 0.0  # loop time of the next periodic full reconcile
        self.metrics.leader.set(0 if self.seat else 1)

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        """Coroutines run beside the loop once the state is caught up (request servers, consumers of
        other streams). Each must return soon after self.stopping is set, its in-flight work done; an
        exception in one crashes the service."""
        return []

    @property
    def leading(self) -> bool:
        """May reconcile, publish and checkpoint: always without election, else while holding a term."""
        return self.seat is None or self.seat.fence is not None

    def health(self) -> dict[str, Any]:
        role = "active" if self.seat is None else ("leader" if self.leading else "standby")
        return {
            "ok": self.bus.nc.is_connected and self.phase in ("replaying", "following", "stopping"),
            "service": self.name,
            "phase": self.phase,
            "role": role,
            "seq": self.seq,
            "checkpoint_seq": self.checkpointer.seq,
            "outputs_in_flight": self.publisher.inflight,
            "events_queued": self._queue.qsize(),
            "quarantine_unwritten": self.quarantine.pending,
            "reconcile_failing": len(self.boundary.failing),
        }

    async def idle(self) -> bool:
        if not self._settled():
            return False
        seq = self.seq
        more = await self._log_has_more(seq)
        # The loop may have moved while the server was asked: only an unchanged, settled loop is idle.
        return not more and self.seq == seq and self._settled()

    def _settled(self) -> bool:
        """Nothing queued or being processed, every quarantine record written, and (as leader) the
        state's outputs all stored."""
        if self.phase != "following" or self._busy or not self._queue.empty() or self.quarantine.pending:
            return False
        return not (self.leading and (self._full or self._dirty or self._unsettled))

    async def _log_has_more(self, seq: int) -> bool:
        filters = filter_list(self.subject_filter)
        if not filters:
            return await self.bus.last_seq(EVENTS_STREAM) > seq
        for subject in filters:
            try:
                await self.bus.jsm.get_msg(EVENTS_STREAM, seq=seq + 1, subject=subject, next=True)
            except nats.js.errors.NotFoundError:
                continue
            return True
        return False

    async def serve(self) -> None:
        # quarantine records are written beside the loop from the start: replay sets events aside too
        recorder = asyncio.create_task(self.quarantine.run(self.stopping))
        try:
            await self._recover()
            await self._follow()
            self.phase = "stopping"
            if self.leading:
                await self.checkpointer.save_if_due(self.seq, lambda: self.core.dump(self.state), final=True)
        finally:
            if self.seat is not None:
                await self.seat.resign()
            recorder.cancel()
            await asyncio.gather(recorder, return_exceptions=True)
            # what is still unwritten is written by the next start, which sets the same events aside
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.quarantine.flush(), _FINAL_FLUSH_S)
            self.phase = "stopped"

    async def _recover(self) -> None:
        self.phase = "replaying"
        await self.bus.ensure_streams([events_stream(replicas=self.config.stream_replicas)])
        checkpoint = await self.checkpointer.store.load()
        if checkpoint is not None:
            try:
                self.state = self.core.load(checkpoint.view)
                self.seq = self.checkpointer.seq = checkpoint.seq
            except Exception as exc:  # a checkpoint is a cache: an unreadable one only costs replay
                log.warning("checkpoint not loadable, replaying from the start", error=repr(exc))
                self.state, self.seq = self.core.initial(), 0
            last = await self.bus.last_seq(EVENTS_STREAM)
            if self.seq > last:
                # a checkpoint of a log that no longer exists (the stream was recreated): following from
                # its seq would silently skip every event of the new log
                log.warning(
                    "checkpoint is ahead of the log, replaying from the start", seq=self.seq, last=last
                )
                self.state, self.seq = self.core.initial(), 0
                self.checkpointer.seq = 0
        started, first, count = time.perf_counter(), self.seq + 1, 0
        with self.tracer.start_as_current_span("replay", attributes={"lahar.replay.from_seq": first}):
            async for records in self.bus.replay_batches(EVENTS_STREAM, first, self._replay_filter):
                for record in records:
                    self._apply(record, live=False)
                count += len(records)
                # let lease renewals and health checks run during a long replay
                await asyncio.sleep(0)
                if self.stopping.is_set():
                    break
        elapsed = time.perf_counter() - started
        self.metrics.replay_seconds.set(elapsed)
        # records, not events: a bundle is one record holding several events (contracts/bundles.py)
        log.info(
            "replayed the log", from_seq=first, to_seq=self.seq, records=count, seconds=round(elapsed, 3)
        )
        self.phase = "following"
        await self.after_replay()
        self.progressed()

    async def after_replay(self) -> None:
        """Hook: once caught up, before the first reconcile (the node agent adopts its runtime's live
        runs here)."""

    def fold(self, change: Callable[[S], S], keys: Iterable[Key] | None = None) -> None:
        """Apply a pure change that does not come from the log (a runtime report, a heartbeat) and
        reconcile the keys it touched promptly (keys None: everything)."""
        self.state = change(self.state)
        if keys is None:
            self._full = True
        else:
            self._dirty.update(keys)
        self._wake()

    async def after_reconcile(self) -> None:
        """Hook: after each batch (and its reconcile, if it touched anything) while leading (the node agent
        issues its runtime actions here)."""

    async def _follow(self) -> None:
        if self.stopping.is_set():
            return
        background = [asyncio.create_task(self._read_log()), asyncio.create_task(self._wake_on_stop())]
        if self.seat is not None:
            background.append(asyncio.create_task(self.seat.run()))
        extras = [asyncio.create_task(coro) for coro in self.extra_tasks()]
        main = asyncio.create_task(self._process())
        try:
            pending = {main, *background, *extras}
            while not main.done():
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task is not main and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
            main.result()
            if extras:
                await asyncio.gather(*extras)
        finally:
            for task in (main, *background, *extras):
                task.cancel()
            await asyncio.gather(main, *background, *extras, return_exceptions=True)

    async def _read_log(self) -> None:
        follow = self.bus.follow_batches(EVENTS_STREAM, self.seq + 1, self.subject_filter, self._log_gap)
        async for records in follow:
            await self._queue.put(records)
        raise RuntimeError("the live log subscription ended")

    def _log_gap(self, gap: LogGap) -> None:
        """The live reading of the log had a gap the client healed (shared/bus/log_gaps.py): counted and
        logged with its extent; a service whose judgement depends on hearing the cluster overrides this."""
        self.metrics.log_gaps.inc()
        log.warning(
            "a gap in reading the log",
            after_seq=gap.after_seq,
            seq=gap.seq,
            consumer_recreated=gap.restarted,
            records_skipped=gap.skipped,
            silent_s=round(gap.silent_s, 3),
        )

    async def _wake_on_stop(self) -> None:
        await self.stopping.wait()
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(asyncio.QueueFull):  # a full queue wakes the loop anyway
            self._queue.put_nowait(None)

    def _leadership_changed(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        self.publisher.forget_inflight()
        self._dirty.clear()  # a standby tracks nothing; a new leader reconciles everything
        if leading:
            self._full = True
            self._wake()
        self.progressed()

    async def _process(self) -> None:
        loop = asyncio.get_running_loop()
        next_tick = loop.time()
        self._resync_at = loop.time() + self.config.resync_interval_s
        while not self.stopping.is_set():
            batch = await self._next_batch(max(0.0, next_tick - loop.time()))
            self._busy = True
            try:
                tracking = self.leading  # a standby reconciles nothing, so it tracks no keys
                for record in batch:
                    self._apply(record, live=True, track=tracking)
                if self.stopping.is_set():
                    break  # take no new decisions; the next leader reconciles whatever is left
                if loop.time() >= next_tick:
                    next_tick = loop.time() + self.config.reconcile_interval_s
                    self._tick(loop.time())
                if self.leading:
                    if self._full or self._dirty:
                        await self._reconcile()
                    await self.after_reconcile()
                    busy = not self._queue.empty()  # live events wait: the checkpoint may wait too
                    await self.checkpointer.save_if_due(
                        self.seq, lambda: self.core.dump(self.state), busy=busy
                    )
            finally:
                self._busy = False
                self.progressed()

    def _tick(self, now_loop: float) -> None:
        """The timer: time-based decisions, outputs to try again, the periodic resync."""
        if not self.leading:
            return
        self._dirty.update(self.boundary.timed(self.state, self.clock(), self.seq))
        retry, retry_full = self.boundary.due(self.boundary.monotonic())
        self._dirty.update(retry)  # keys whose reconcile raised, when their backoff is over
        self._full = self._full or retry_full
        if self._retry_full or self.publisher.expire():
            self._retry_full = False
            self._full = True
        if now_loop >= self._resync_at:
            self._resync_at = now_loop + self.config.resync_interval_s
            self._full = True

    async def _next_batch(self, timeout_s: float) -> list[StreamRecord]:
        try:
            first = await asyncio.wait_for(self._queue.get(), timeout_s)
        except TimeoutError:
            return []
        records = list(first or ())
        while len(records) < self.config.max_batch_events and not self._queue.empty():
            records.extend(self._queue.get_nowait() or ())
        return records

    async def _reconcile(self) -> None:
        started = time.perf_counter()
        keys = None if self._full else self._dirty
        self._full, self._dirty = False, set()
        # never raises: keys whose reconcile raises are left out and retried later (reconcile_boundary)
        outputs = self.boundary.reconcile(self.state, self.clock(), keys, self.seq)
        self.metrics.reconciled("full" if keys is None else "keys", len(keys or ()))
        self._unsettled = await self.publisher.publish(outputs, lambda: self.leading)
        if self._unsettled:
            self._retry_full = True  # the outputs are decided again from the state at the next tick
        self.metrics.reconcile_seconds.observe(time.perf_counter() - started)

    async def checkpoint(self) -> None:
        """Save (state, seq) now, fenced by the leadership term when elected; raises FencedOut when this
        instance does not (or no longer) lead."""
        await self.checkpointer.save(self.core.dump(self.state), self.seq)  # dump and seq: the same moment
