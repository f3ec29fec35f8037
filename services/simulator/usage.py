"""Simulated node usage for `lahar simulate`, so the usage plugin runs there on the same core.

Every `period_s` of simulated time (30 s by default: samples lag what the scheduler decides, as they do
on a real cluster) each node is sampled as a sim node agent samples it: a running pod uses its
`lahar.dev/sim-usage` annotation, else its requests, and a node the sum of its pods
(services/node_agent/usage/sources.py), with averages over `window_s`. The samples go into a UsageBook
as the scheduler's would (received at their sample time), and each session gets those younger than
`stale_after_s`.

A sample due at time t shows the cluster as the last cycle before t left it (nothing changes between
cycles). When the clock jumps over several periods, the periods in between saw the same pods; only the
last window's worth of them is taken. While nothing changed since the last sample, the next one would
say the same, so it is a moment worth waking for (`next_moment`) only after a change.
"""

from __future__ import annotations

from collections.abc import Callable

from contracts.objects import Node, Pod
from contracts.usage import NodeUsage, UsageReport
from services.node_agent.usage.sources import SimUsageSource
from services.node_agent.usage.window import UsageWindow, usage_entries
from services.simulator.world import World
from shared.usage.book import UsageBook

SIM_AGENT = "simulator"
DEFAULT_PERIOD_S = 30.0
DEFAULT_WINDOW_S = 120.0
DEFAULT_STALE_AFTER_S = 300.0


class UsageSimulation:
    def __init__(
        self,
        period_s: float = DEFAULT_PERIOD_S,
        window_s: float = DEFAULT_WINDOW_S,
        stale_after_s: float = DEFAULT_STALE_AFTER_S,
    ) -> None:
        self.period_s = period_s
        self.stale_after_s = stale_after_s
        self.window = UsageWindow(window_s)
        self.book = UsageBook()
        self.next_at = 0.0
        self.samples = 0
        self._changes_seen = -1  # the world's change count at the last sample

    def advance(self, world: World, now: float, changes: int) -> None:
        """Take the samples due by `now`; `changes` counts what happened in the world so far (the log's
        length), so that a sample is known to be a repeat."""
        if self.next_at > now:
            return
        due = int((now - self.next_at) // self.period_s) + 1
        keep = int(self.window.window_s // self.period_s) + 1
        first = self.next_at + (due - min(due, keep)) * self.period_s
        source = SimUsageSource([n.meta.name for n in world.static if isinstance(n, Node)], _running(world))
        samples = source.sample()
        for k in range(min(due, keep)):
            at = first + k * self.period_s
            nodes = usage_entries(samples, self.window, at)
            self.book.apply(UsageReport(agent=SIM_AGENT, period_s=self.period_s, nodes=tuple(nodes)), at)
            self.samples += 1
        self.next_at += due * self.period_s
        self._changes_seen = changes

    def next_moment(self, changes: int) -> float | None:
        """The next sample, if it could say something new."""
        return self.next_at if changes != self._changes_seen else None

    def fresh(self, now: float) -> dict[str, NodeUsage]:
        return self.book.fresh(now, self.stale_after_s)


def _running(world: World) -> Callable[[], list[tuple[str, Pod]]]:
    def running() -> list[tuple[str, Pod]]:
        return [
            (pod.spec.node_name, pod)
            for pod in world.pods.values()
            if pod.status.phase == "Running" and pod.spec.node_name
        ]

    return running
