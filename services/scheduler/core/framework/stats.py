"""What a session measured about itself: how long its phases took and what it tried (Volcano's
scheduler metrics: open-session, action and plugin latencies, per-task scheduling stages, preemption
attempts).

Pure: the session reads no clock of its own. The caller may hand it a stopwatch (a function returning
seconds, e.g. time.perf_counter); without one nothing is timed and every duration stays 0, so that the
same session in `lahar simulate` or a benchmark costs nothing extra. Durations never change a decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ON_SESSION_OPEN = "OnSessionOpen"
ON_SESSION_CLOSE = "OnSessionClose"
# Volcano's per-task scheduling stages a session has (PreBind and Bind are the binder's)
PREDICATE = "Predicate"
SCORING = "Scoring"

Stopwatch = Callable[[], float]


@dataclass(slots=True)
class SessionStats:
    open_ms: float = 0.0  # snapshot to working model, plugins opened
    actions_ms: dict[str, float] = field(default_factory=dict)
    plugins_ms: dict[tuple[str, str], float] = field(default_factory=dict)  # (plugin, OnSession...)
    stages_ms: dict[str, list[float]] = field(default_factory=dict)  # per task: Predicate, Scoring
    preemption_attempts: int = 0  # preemptor tasks the preempt action tried to place by evicting


class Timer:
    """A session's stopwatch readings; every method is a no-op without a stopwatch."""

    __slots__ = ("stats", "stopwatch")

    def __init__(self, stopwatch: Stopwatch | None) -> None:
        self.stopwatch = stopwatch
        self.stats = SessionStats()

    def tick(self) -> float:
        return self.stopwatch() if self.stopwatch is not None else 0.0

    def since(self, started: float) -> float:
        """Milliseconds since `started` (a tick)."""
        return (self.stopwatch() - started) * 1000 if self.stopwatch is not None else 0.0

    def stage(self, stage: str, started: float) -> None:
        """One task's time in a scheduling stage, since `started`."""
        if self.stopwatch is not None:
            self.stats.stages_ms.setdefault(stage, []).append((self.stopwatch() - started) * 1000)

    def action(self, name: str, started: float) -> None:
        if self.stopwatch is not None:
            spent = self.since(started)
            self.stats.actions_ms[name] = self.stats.actions_ms.get(name, 0.0) + spent

    def plugin(self, name: str, phase: str, started: float) -> None:
        if self.stopwatch is not None:
            self.stats.plugins_ms[(name, phase)] = self.since(started)
