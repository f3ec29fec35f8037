"""An event-sourced service that also writes its read model (docs/control-plane.md, "Read model and CLI").

The core marks the objects each event changed as dirty (with the event's seq); while leading, the dirty
objects are written in one go every read_model_interval_s (a busy object, a pod that is bound, starts
and ends within a second, is rendered and written once), each as of the seq of its last change, fenced by
the leadership term (shared.store.read_model.ReadModel only moves a key forward). Under load the wait
after a write round stretches with what the round took (`flush_wait`): up to FLUSH_COST_FACTOR times
it, at most MAX_FLUSH_WAIT_S, so the rounds take a bounded share of the time and each writes more changes
of the same objects at once; a change reaches the read model at most MAX_FLUSH_WAIT_S plus the round
under way and its own round after it is folded. On gaining a term, and on the first reconcile without
election, everything is written once as of the current seq and every stored object the state no longer
has is deleted: that covers what a previous leader (or this instance before a crash) did not write, and
the dirty marks, which are not checkpointed. A failed write is retried after the next reconcile.

Used by the job- and queue-controller (the binder writes its nodes with its own small writer).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol, TypeVar

import structlog
from opentelemetry.trace import Tracer

from shared.bus.jetstream import Bus
from shared.runner import EventSourcedService, RunnerConfig
from shared.runner_types import Core
from shared.store.election import FencedOut
from shared.store.etcd import Etcd, EtcdError
from shared.store.read_model import ReadModel, Stored, Write
from shared.telemetry.metrics import Registry, default_registry

log = structlog.get_logger(__name__)

RENDER_CHUNK = 1000  # objects a write round renders between yields to the loop

S = TypeVar("S")
ObjectKey = tuple[str, str | None, str]  # kind, namespace (None: cluster-scoped), name

# The wait after a write round is at least FLUSH_COST_FACTOR times what the round took (its renders,
# encodes and etcd transactions, and whatever the loop did while they were under way): the rounds then
# take at most about 1/(1 + FLUSH_COST_FACTOR) of the time. A round costs what changed since the last
# one, so in a burst the wait grows, and more of a pod's quick changes (created, bound, running,
# finished, its job's and PodGroup's counts) fall into one round and are written once. The wait never
# exceeds MAX_FLUSH_WAIT_S (nor a longer read_model_interval_s): the lag a reader of the read model sees.
# At 1 s a burst of 1,000 jobs (4,457 pods, about 2.5 s) still took two or three rounds midway, about 3.2
# writes a pod in all; at 2 s it takes one, 1.6 writes a pod, which halved etcd's CPU for the burst and
# took a tenth off the job-controller's (docs/benchmarks.md, "Read-model rounds at most 2 s apart").
FLUSH_COST_FACTOR = 50
MAX_FLUSH_WAIT_S = 2.0


def flush_wait(interval_s: float, last_round_s: float) -> float:
    """How long to wait after a write round that took last_round_s (see FLUSH_COST_FACTOR)."""
    return min(max(interval_s, FLUSH_COST_FACTOR * last_round_s), max(interval_s, MAX_FLUSH_WAIT_S))


class ProjectingCore(Core[S], Protocol):
    """A core whose state also describes the read-model objects of `kinds`."""

    kinds: tuple[str, ...]

    def dirty(self, state: S) -> dict[ObjectKey, int]:
        """The objects changed since they were last written -> seq of the change; the shell removes what
        it wrote."""
        ...

    def render(self, state: S, key: ObjectKey) -> Mapping[str, Any] | None:
        """The value to store for an object (codec.encode_object of it), None when it does not exist."""
        ...

    def keys(self, state: S) -> Iterable[ObjectKey]:
        """Every object that exists."""
        ...


class ReadModelService(EventSourcedService[S]):
    def __init__(
        self,
        core: ProjectingCore[S],
        bus: Bus,
        etcd: Etcd,
        config: RunnerConfig,
        *,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(core, bus, etcd, config, registry=registry, tracer=tracer, clock=clock)
        self.projection = core
        self._synced_term: int | None = None  # the term everything was last written in
        self._stored = Stored()  # what this instance listed and wrote in that term
        self._writing = asyncio.Lock()
        self.registry = registry or default_registry()
        self._writes = self.registry.counter(
            "lahar_read_model_writes_total",
            "Read-model writes by result (stored; stale: the key already reflected a later seq)",
            ("service", "result"),
        )
        self._failures = self.registry.counter(
            "lahar_read_model_write_failures_total",
            "Read-model write rounds that failed (error) or were refused (fenced)",
            ("service", "result"),
        )
        self._wait = self.registry.gauge(
            "lahar_read_model_write_wait_seconds",
            "The wait before the next read-model write round: read_model_interval_s, stretched under load"
            " to FLUSH_COST_FACTOR times what the last round took (at most MAX_FLUSH_WAIT_S)",
            ("service",),
        )

    def written(self, write: Write, *, full: bool) -> None:
        """Hook: an object's value was written, or found stored as of a later seq already (full: by the
        write of everything on gaining a term)."""

    def _term(self) -> int | None:
        """The current leadership term (0 without election), None when not leading."""
        if self.seat is None:
            return 0
        fence = self.seat.fence
        return None if fence is None else fence.token

    def _owed(self) -> bool:
        term = self._term()
        return term is not None and (term != self._synced_term or bool(self.projection.dirty(self.state)))

    async def idle(self) -> bool:
        if self._owed():
            return False
        return await super().idle() and not self._owed()

    def health(self) -> dict[str, Any]:
        return {
            **super().health(),
            "read_model_synced": self._synced_term is not None and self._synced_term == self._term(),
            "read_model_dirty": len(self.projection.dirty(self.state)),
        }

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        return [*super().extra_tasks(), self._forget_marks_while_standby(), self._write_periodically()]

    async def _write_periodically(self) -> None:
        interval = self.config.read_model_interval_s
        wait = interval
        while not self.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), wait)
            wait = interval
            if self._owed() and self.phase == "following":
                started = time.monotonic()
                await self.write_read_model()
                wait = flush_wait(interval, time.monotonic() - started)
                self.progressed()
            self._wait.labels(self.name).set(wait)

    async def _forget_marks_while_standby(self) -> None:
        """A standby writes nothing and rewrites everything once it leads: its dirty marks would only
        pile up (one per object it ever saw change)."""
        while not self.stopping.is_set():
            if self._term() is None:
                self.projection.dirty(self.state).clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.config.reconcile_interval_s)

    async def after_reconcile(self) -> None:
        if self._term() != self._synced_term:
            await self.write_read_model()  # everything, at once, on taking over

    async def write_read_model(self) -> None:
        """Write what is owed, if leading; failures are logged and retried after the next reconcile.
        One write at a time: the loop goes on folding events meanwhile, and marks them dirty."""
        async with self._writing:
            await self._write_owed()

    async def _write_owed(self) -> None:
        term = self._term()
        if term is None:
            return
        fence = None if self.seat is None else self.seat.fence
        if term != self._synced_term:
            self._stored = Stored()  # a new term lists everything again (_write_all)
        model = ReadModel(self.etcd, fence=fence, stored=self._stored)
        try:
            if term != self._synced_term:
                await self._write_all(model)
                self._synced_term = term
            else:
                await self._write_dirty(model)
        except FencedOut:
            self._failures.labels(self.name, "fenced").inc()
            if self.seat is not None:
                self.seat.step_down("read-model write refused: the leadership term is over")
        except EtcdError as exc:
            self._failures.labels(self.name, "error").inc()
            log.warning("read model not written; retrying after the next reconcile", error=str(exc))

    async def _write_dirty(self, model: ReadModel) -> None:
        dirty = self.projection.dirty(self.state)
        if not dirty:
            return
        taken = dict(dirty)
        rendered = await self._render(taken)
        writes = [Write(*key, seq, rendered[key]) for key, seq in taken.items()]
        await self._store(model, writes, full=False)
        for key, seq in taken.items():
            if dirty.get(key) == seq:
                del dirty[key]

    async def _render(self, keys: Iterable[ObjectKey]) -> dict[ObjectKey, Any]:
        """Each object's value, rendered RENDER_CHUNK at a time with the loop running in between: a
        round after a busy second holds tens of thousands of changed objects, and rendering them in one
        go stalled the loop for over 2 s, long enough to lose the leadership lease (docs/reliability.md). A
        value rendered after its mark's seq carries later changes too; their own marks are still owed,
        so the key moves forward again in a later round."""
        values: dict[ObjectKey, Any] = {}
        for index, key in enumerate(keys, 1):
            values[key] = self.projection.render(self.state, key)
            if index % RENDER_CHUNK == 0:
                await asyncio.sleep(0)
        return values

    async def _write_all(self, model: ReadModel) -> None:
        seq = self.seq
        values = await self._render(list(self.projection.keys(self.state)))
        stale: list[ObjectKey] = []
        for kind in self.projection.kinds:
            stored, _ = await model.list(kind)
            stale.extend(key for obj in stored if (key := (kind, obj.namespace, obj.name)) not in values)
        writes = [Write(*key, seq, value) for key, value in values.items()]
        writes += [Write(*key, seq, None) for key in stale]
        await self._store(model, writes, full=True)
        # what changed while this was written (the loop kept folding) is still owed
        dirty = self.projection.dirty(self.state)
        for key in [key for key, marked in dirty.items() if marked <= seq]:
            del dirty[key]
        log.info("read model written", seq=seq, objects=len(values), deleted=len(stale))

    async def _store(self, model: ReadModel, writes: list[Write], *, full: bool) -> None:
        results = await model.apply(writes)
        stored = sum(results)
        self._writes.labels(self.name, "stored").inc(stored)
        self._writes.labels(self.name, "stale").inc(len(writes) - stored)
        for write in writes:
            self.written(write, full=full)
