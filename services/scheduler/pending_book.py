"""Which owned PodGroups wait and why, as a replica's latest sessions left them (pure): what it exports as
`lahar_podgroup_pending` and `lahar_podgroup_missing_resource`, read at scrape time (replica_series.py).

A session reports only the PodGroups it acted for (its focus, focus.py), so the book keeps every entry
until a later session says otherwise; a PodGroup the replica no longer owns (the ring changed: its new
owner reports it) or that is gone leaves the book. Each waiting PodGroup is therefore counted by one
replica only, the one that owns it.
"""

from __future__ import annotations

from collections.abc import Callable

from contracts.pending import SCALE_UP_REASONS
from contracts.resources import MILLI
from services.scheduler.core.framework.plan import PendingSummary, SessionResult

PENDING = "lahar_podgroup_pending"
MISSING = "lahar_podgroup_missing_resource"


class PendingBook:
    def __init__(self) -> None:
        self.entries: dict[str, PendingSummary] = {}

    def update(self, result: SessionResult, keeps: Callable[[str], bool]) -> None:
        """A session's verdicts; `keeps(key)`: the replica still owns the PodGroup and it still exists."""
        for key in result.podgroups:
            summary = result.pending.get(key)
            if summary is None:
                self.entries.pop(key, None)
            else:
                self.entries[key] = summary
        self.prune(keeps)

    def prune(self, keeps: Callable[[str], bool]) -> None:
        """Forget the PodGroups `keeps` says no (no longer owned, or gone)."""
        for key in [key for key in self.entries if not keeps(key)]:
            del self.entries[key]

    def counts(self) -> dict[tuple[str, str], int]:
        """(queue, reason) -> how many owned PodGroups wait for that reason."""
        counts: dict[tuple[str, str], int] = {}
        for summary in self.entries.values():
            labels = (summary.queue, summary.reason)
            counts[labels] = counts.get(labels, 0) + 1
        return counts

    def missing(self) -> dict[tuple[str, str], float]:
        """(queue, resource) -> what the cluster lacks for the PodGroups waiting for room, in the resource's
        unit (cores, bytes, GPUs, pods): the figure an autoscaler scales for."""
        missing: dict[tuple[str, str], float] = {}
        for summary in self.entries.values():
            if summary.reason in SCALE_UP_REASONS:
                for resource, milli in summary.missing.items():
                    labels = (summary.queue, resource)
                    missing[labels] = missing.get(labels, 0.0) + milli / MILLI
        return missing


def pending_series(book: PendingBook) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    """The two families' rows: (queue, reason) -> count; (queue, resource) -> what the cluster lacks."""
    return {
        PENDING: [(labels, float(count)) for labels, count in sorted(book.counts().items())],
        MISSING: sorted(book.missing().items()),
    }
