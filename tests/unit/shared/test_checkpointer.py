"""When a service checkpoints: by time or by events, and never so often that dumping a large state
costs more than a small share of a core."""

from __future__ import annotations

from shared.runner.checkpointer import COST_FACTOR, DEFER_PERIODS, Checkpointer
from shared.runner.config import RunnerConfig
from shared.runner.metrics import RunnerMetrics
from shared.telemetry.metrics import Registry


class Store:
    """Where the checkpoints go; saving one takes `takes` seconds of the test's clock."""

    def __init__(self, clock: list[float], takes: float) -> None:
        self.clock, self.takes, self.saved = clock, takes, []

    async def save(self, view: bytes, seq: int, *, fence: object) -> None:
        self.clock[0] += self.takes
        self.saved.append(seq)


async def test_the_period_stretches_with_what_a_checkpoint_costs() -> None:
    now = [0.0]
    config = RunnerConfig(
        nats_url="x", etcd_endpoint="x:1", checkpoint_every_s=30, checkpoint_every_events=10**9
    )
    store = Store(now, takes=2.0)  # a large state: 2 s to dump and write
    checkpointer = Checkpointer(store, config, RunnerMetrics(Registry(), "x"), None, clock=lambda: now[0])  # type: ignore[arg-type]
    now[0] = 31.0
    await checkpointer.save_if_due(100, lambda: b"state")
    assert store.saved == [100]
    now[0] += 31.0  # the usual period is over, but 2 s of work every 30 s is too much
    await checkpointer.save_if_due(200, lambda: b"state")
    assert store.saved == [100]
    now[0] += COST_FACTOR * 2.0
    await checkpointer.save_if_due(300, lambda: b"state")
    assert store.saved == [100, 300]
    await checkpointer.save_if_due(400, lambda: b"state", final=True)  # shutting down: always
    assert store.saved == [100, 300, 400]


async def test_a_due_checkpoint_waits_while_the_loop_is_behind_for_a_few_periods_at_most() -> None:
    now = [0.0]
    config = RunnerConfig(
        nats_url="x", etcd_endpoint="x:1", checkpoint_every_s=30, checkpoint_every_events=1000
    )
    store = Store(now, takes=0.0)
    checkpointer = Checkpointer(store, config, RunnerMetrics(Registry(), "x"), None, clock=lambda: now[0])  # type: ignore[arg-type]
    now[0] = 31.0
    await checkpointer.save_if_due(100, lambda: b"state", busy=True)  # due, but live events are queued
    assert store.saved == []
    await checkpointer.save_if_due(200, lambda: b"state")  # caught up: saved at once
    assert store.saved == [200]
    now[0] += DEFER_PERIODS * 30 - 1
    await checkpointer.save_if_due(300, lambda: b"state", busy=True)  # a long burst ...
    assert store.saved == [200]
    now[0] += 1
    await checkpointer.save_if_due(400, lambda: b"state", busy=True)  # ... waits this long at most
    assert store.saved == [200, 400]
    await checkpointer.save_if_due(1400, lambda: b"state", busy=True)  # so many events behind: at once
    assert store.saved == [200, 400, 1400]
    await checkpointer.save_if_due(1401, lambda: b"state", busy=True, final=True)  # shutting down
    assert store.saved == [200, 400, 1400, 1401]
