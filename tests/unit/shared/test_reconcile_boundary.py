"""shared/runner/reconcile_boundary.py without servers: which keys are left out, when they are tried
again, and what is recorded."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from contracts.bus_messages import ReconcileFailure
from shared.runner.metrics import RunnerMetrics
from shared.runner.quarantine import Quarantine
from shared.runner.reconcile_boundary import DUE, FULL, ReconcileBoundary
from shared.runner_types import Output
from shared.telemetry.metrics import Registry

KEYS = ("a", "bad", "c")


class Core:
    """Reconciles each key to one output; raises for any key in `broken`."""

    name = "toy"

    def __init__(self) -> None:
        self.broken = {"bad"}
        self.calls = 0

    def reconcile(self, state: Any, now: float, keys: Collection[str] | None = None) -> list[Output]:
        self.calls += 1
        keys = KEYS if keys is None else keys
        if self.broken & set(keys):
            raise KeyError("counts")
        return [Output("Echo", "toy", None, k, id=k, correlation_id=k) for k in keys]

    def due(self, state: Any, now: float) -> list[str]:
        raise ValueError("no clock")


class Listing(Core):
    def reconcile_keys(self, state: Any) -> tuple[str, ...]:
        return KEYS


def boundary(core: Core) -> tuple[ReconcileBoundary[Any], list[float], Quarantine]:
    clock = [100.0]
    metrics = RunnerMetrics(Registry(), "toy")
    quarantine = Quarantine(None, metrics, stream_replicas=1)  # type: ignore[arg-type]  # only queued
    made = ReconcileBoundary(core, metrics, quarantine, clock=lambda: 1e9, monotonic=lambda: clock[0])  # type: ignore[arg-type]
    return made, clock, quarantine


def names(outputs: list[Output]) -> list[str]:
    return sorted(o.name for o in outputs)


def test_a_key_that_raises_is_left_out_retried_with_backoff_and_healed() -> None:
    core = Core()
    guard, clock, quarantine = boundary(core)
    assert names(guard.reconcile(None, 0.0, {"a", "bad", "c"}, seq=7)) == ["a", "c"]
    assert set(guard.failing) == {"bad"} and guard.metrics.reconcile_errors.value == 1
    (record,) = list(quarantine._queue)
    assert isinstance(record, ReconcileFailure) and (record.key, record.seq) == ("bad", 7)
    # touched again before its retry is due: left out without calling the core
    calls = core.calls
    assert guard.reconcile(None, 0.0, {"bad"}, seq=8) == [] and core.calls == calls
    assert guard.due(clock[0] + 0.5) == ([], False)
    assert guard.due(clock[0] + 1.0) == (["bad"], False)  # 1 s after the first failure
    clock[0] += 1.0
    guard.reconcile(None, 0.0, {"bad"}, seq=9)  # fails again: 2 s now, recorded once
    assert guard.failing["bad"].attempts == 2 and guard.due(clock[0] + 1.9) == ([], False)
    assert len(quarantine._queue) == 1
    core.broken = set()
    clock[0] += 2.0
    assert names(guard.reconcile(None, 0.0, {"bad"}, seq=10)) == ["bad"] and not guard.failing
    assert guard.metrics.reconcile_failing.value == 0


def test_a_full_reconcile_is_narrowed_down_when_the_core_lists_its_keys() -> None:
    guard, clock, _ = boundary(Listing())
    assert names(guard.reconcile(None, 0.0, None, seq=1)) == ["a", "c"]
    assert set(guard.failing) == {FULL, "bad"}
    assert guard.due(clock[0] + 1.0) == (["bad"], True)


def test_a_full_reconcile_without_keys_is_set_aside_whole_and_due_is_guarded() -> None:
    guard, clock, _ = boundary(Core())
    assert guard.reconcile(None, 0.0, None, seq=1) == [] and set(guard.failing) == {FULL}
    assert guard.timed(None, 0.0, seq=1) == [] and DUE in guard.failing
    assert guard.due(clock[0] + 1.0) == ([], True)  # the timer's own retry is its next tick
