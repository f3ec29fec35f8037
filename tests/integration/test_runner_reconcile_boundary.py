"""A core's reconcile that raises for one key never stops the service: the other keys' outputs are still
written, the key is retried with backoff, the failure is counted, logged and recorded. The toy echo core,
made to raise for chosen pings, against real nats-server and etcd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import replace
from typing import Any

import pytest
from runner_toy import ToyCore, ToyState

from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.poison import read_quarantine, read_reconcile_failures
from shared.bus.streams import events_stream
from shared.bus.subjects import event_subject
from shared.runner import EventSourcedService, RunnerConfig
from shared.runner.reconcile_boundary import FULL
from shared.runner_types import Output
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry

QUIET = RunnerConfig(reconcile_interval_s=0.1, checkpoint_every_events=1_000_000, checkpoint_every_s=3600)
POISON_N = 13  # a Ping with this n makes the core's reconcile raise for its key, while `broken` holds


class BrokenReconcile(ToyCore):
    """The toy core whose reconcile raises for any ping with n == POISON_N while `broken` is set: as a bug
    would that a state reaches. It counts the calls that raised (a busy retry loop would show)."""

    def __init__(self, *, lists_keys: bool = True) -> None:
        self.broken = True
        self.raised = 0
        self.lists_keys = lists_keys
        self.poisoned: set[str] = set()  # ping ids with n == POISON_N (the core's own bookkeeping)

    def apply(self, state: ToyState, event: Any) -> ToyState:
        if event.type == "Ping" and event.payload["n"] == POISON_N:
            self.poisoned.add(event.id)
        return super().apply(state, event)

    def reconcile(self, state: ToyState, now: float, keys: Collection[str] | None = None) -> list[Output]:
        covered = state.pings if keys is None else keys
        if self.broken and any(key in self.poisoned for key in covered):
            self.raised += 1
            raise KeyError("the poisoned ping's counts")
        return super().reconcile(state, now, keys)


class ListingCore(BrokenReconcile):
    def reconcile_keys(self, state: ToyState) -> list[str]:
        return list(state.pings)


Make = Callable[..., tuple[EventSourcedService[ToyState], BrokenReconcile]]


@pytest.fixture
async def make(bus: Bus, etcd: Etcd) -> AsyncIterator[Make]:
    await bus.ensure_streams([events_stream()])
    made: list[EventSourcedService[ToyState]] = []

    def build(
        *, lists_keys: bool = True, **kwargs: Any
    ) -> tuple[EventSourcedService[ToyState], BrokenReconcile]:
        core = ListingCore() if lists_keys else BrokenReconcile()
        service = EventSourcedService(core, bus, etcd, replace(QUIET, **kwargs), registry=Registry())
        service.boundary.max_retry_s = 2.0  # the default's minute would only make the test wait
        made.append(service)
        return service, core

    yield build
    for service in made:
        if service._task is not None and not service._task.done():
            await service.shutdown()


async def ping(bus: Bus, name: str, n: int = 1) -> str:
    env = Envelope.create("Ping", time=1.0, producer="tests", correlation_id=name, payload={"n": n})
    await bus.publish(env, event_subject("toy", None, name, "Ping", "tests"))
    return env.id


def start(service: EventSourcedService[ToyState]) -> None:
    service._task = asyncio.create_task(service.run())  # as run_until_idle starts it


async def until(condition: Callable[[], bool], timeout_s: float = 15.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.02)


def echoed(service: EventSourcedService[ToyState], *pings: str) -> bool:
    return all(service.state.echoes.get(p) for p in pings)


@pytest.mark.parametrize("live", [False, True], ids=["full-after-replay", "live-keys"])
async def test_a_key_whose_reconcile_raises_is_set_aside_and_retried_while_the_others_go_on(
    bus: Bus, make: Make, live: bool
) -> None:
    service, core = make()
    if live:
        start(service)
        await until(lambda: service.phase == "following")
    before = await ping(bus, "before", n=1)
    poisoned = await ping(bus, "poisoned", n=POISON_N)
    after = await ping(bus, "after", n=2)
    if not live:
        start(service)  # replayed, then one full reconcile that raises
    # the other keys' echoes are written although the poisoned key's reconcile raises
    await until(lambda: echoed(service, before, after))
    await until(lambda: service.metrics.reconcile_errors.value >= 1)
    assert not service.state.echoes.get(poisoned)
    assert poisoned in service.boundary.failing and service.health()["reconcile_failing"] >= 1
    assert service.metrics.reconcile_failing.value >= 1

    # the service is alive and still processes later events
    later = await ping(bus, "later", n=3)
    await until(lambda: echoed(service, later))
    assert service.health()["ok"] and not service._task.done()  # type: ignore[union-attr]

    # the failure is recorded where an operator lists it (once per key, however often it is retried)
    async def recorded() -> list[Any]:
        return [r for _, r in await read_reconcile_failures(bus, "toy") if r.key == poisoned]

    async with asyncio.timeout(15):
        while not await recorded():
            await asyncio.sleep(0.05)
    (record,) = await recorded()
    assert record.service == "toy" and record.error_type == "KeyError" and "counts" in record.error
    assert await read_quarantine(bus, "toy") == []  # the events themselves were all applied

    # retried with backoff, not in a busy loop: within 2.5 s a few attempts (the key's and the full
    # reconcile's, each at most every 2 s here), where a busy loop would make thousands
    raised = core.raised
    await asyncio.sleep(2.5)  # a duration under test: how often it is tried in this time
    assert 1 <= core.raised - raised <= 6, core.raised - raised

    # the state heals (the bug fixed, or the events that make it decidable arrive): the retry succeeds
    core.broken = False
    await until(lambda: echoed(service, poisoned), timeout_s=10)
    await until(lambda: not service.boundary.failing)
    assert service.metrics.reconcile_failing.value == 0
    await service.run_until_idle(15)


async def test_a_full_reconcile_that_raises_without_a_key_list_is_retried_and_keyed_ones_go_on(
    bus: Bus, make: Make
) -> None:
    before = await ping(bus, "before", n=1)
    poisoned = await ping(bus, "poisoned", n=POISON_N)
    service, core = make(lists_keys=False)
    start(service)
    await until(lambda: service.metrics.reconcile_errors.value >= 1)
    assert FULL in service.boundary.failing  # it cannot be narrowed down without the keys
    assert not echoed(service, before)
    # a live event's keyed reconcile goes on meanwhile
    later = await ping(bus, "later", n=2)
    await until(lambda: echoed(service, later))
    core.broken = False
    await until(lambda: echoed(service, before, poisoned), timeout_s=10)
    await until(lambda: not service.boundary.failing)
    await service.run_until_idle(15)
