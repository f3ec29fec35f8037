"""The latest usage sample of every node, as a reader keeps it (pure: times are given, never read).

The scheduler keeps one and hands its fresh samples to each session (services/scheduler/service.py); the
simulator keeps one over its simulated samples (services/simulator/usage.py); the descheduler reads one
the same way. A reader folds every report it receives with `apply(report, received)`, `received` being
its own clock's time: ages are judged by the reader's clock, since an agent's clock need not agree with
it (as the binder judges heartbeats). The last report received for a node wins: one agent's reports
arrive in the order it sent them.

    book = UsageBook()
    book.apply(report, received=now)
    book.latest("node-1")            # NodeUsage | None
    book.age("node-1", now)          # seconds since its sample arrived, None if never
    book.fresh(now, stale_after_s)   # {node: NodeUsage} of the samples younger than stale_after_s
"""

from __future__ import annotations

from contracts.usage import NodeUsage, UsageReport


class UsageBook:
    __slots__ = ("_latest", "_received")

    def __init__(self) -> None:
        self._latest: dict[str, NodeUsage] = {}
        self._received: dict[str, float] = {}

    def apply(self, report: UsageReport, received: float) -> None:
        for node in report.nodes:
            self._latest[node.node] = node
            self._received[node.node] = received

    def latest(self, node: str) -> NodeUsage | None:
        return self._latest.get(node)

    def age(self, node: str, now: float) -> float | None:
        received = self._received.get(node)
        return None if received is None else max(0.0, now - received)

    def fresh(self, now: float, stale_after_s: float) -> dict[str, NodeUsage]:
        """The samples received at most stale_after_s ago; an older one says nothing about the node now
        (the usage plugin treats its node as unknown)."""
        oldest = now - stale_after_s
        received = self._received
        return {name: usage for name, usage in self._latest.items() if received[name] >= oldest}

    def forget(self, node: str) -> None:
        """Drop a node's sample (the node is gone)."""
        self._latest.pop(node, None)
        self._received.pop(node, None)

    def __len__(self) -> int:
        return len(self._latest)
