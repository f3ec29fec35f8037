"""When a service checkpoints: by time or by events, and never so often that dumping a large state
costs more than a small share of a core."""

from __future__ import annotations

from shared.runner.checkpointer import COST_FACTOR, Checkpointer
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
