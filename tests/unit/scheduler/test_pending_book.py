"""A replica's book of its waiting PodGroups (services/scheduler/pending_book.py) and the series read from
it at scrape time: counted once, by the owner, until a session, the ring or a deletion says otherwise."""

from __future__ import annotations

from contracts.pending import INSUFFICIENT_CLUSTER_CAPACITY, INSUFFICIENT_QUEUE_QUOTA, NEVER_FITS
from contracts.plans import PodGroupUpdate
from contracts.resources import Resources
from services.scheduler.core.framework.plan import PendingSummary, SessionResult
from services.scheduler.metrics import SchedulerMetrics
from services.scheduler.pending_book import PendingBook, pending_series
from shared.telemetry.metrics import Registry

UPDATE = PodGroupUpdate(phase="Inqueue", conditions=(), running=0, succeeded=0, failed=0)
SHORT = PendingSummary("q1", INSUFFICIENT_CLUSTER_CAPACITY, Resources.parse({"cpu": 3, "nvidia.com/gpu": 2}))
QUOTA = PendingSummary("q1", INSUFFICIENT_QUEUE_QUOTA)


def result(pending: dict[str, PendingSummary], *also: str) -> SessionResult:
    """A session that acted for the PodGroups of `pending` and `also`."""
    keys = [*pending, *also]
    return SessionResult("s", podgroups=dict.fromkeys(keys, UPDATE), pending=pending)


def test_a_session_updates_only_the_podgroups_it_acted_for() -> None:
    book = PendingBook()
    book.update(result({"ns/a": SHORT, "ns/b": QUOTA}), lambda key: True)
    # the next session acts for b only (now scheduled): a stays as the earlier session left it
    book.update(result({}, "ns/b"), lambda key: True)
    assert book.entries == {"ns/a": SHORT}


def test_podgroups_no_longer_owned_or_gone_leave_the_book() -> None:
    book = PendingBook()
    book.update(result({"ns/a": SHORT, "ns/b": QUOTA, "ns/c": QUOTA}), lambda key: True)
    book.update(result({}), lambda key: key == "ns/c")
    assert set(book.entries) == {"ns/c"}


def test_counts_and_what_the_cluster_lacks() -> None:
    book = PendingBook()
    never = PendingSummary("q2", NEVER_FITS, Resources.parse({"cpu": 64}))
    book.update(result({"ns/a": SHORT, "ns/b": SHORT, "ns/c": QUOTA, "ns/d": never}), lambda key: True)
    assert book.counts() == {
        ("q1", INSUFFICIENT_CLUSTER_CAPACITY): 2,
        ("q1", INSUFFICIENT_QUEUE_QUOTA): 1,
        ("q2", NEVER_FITS): 1,
    }
    # only what waits for room counts: an autoscaler adds nodes for that, not for quota or a job too big
    assert book.missing() == {("q1", "cpu"): 6.0, ("q1", "nvidia.com/gpu"): 4.0}


def test_the_series_follow_the_book() -> None:
    # read at scrape time from the book, as the replica exports them: a PodGroup that stops waiting
    # takes its series with it
    registry = Registry()
    book = PendingBook()
    SchedulerMetrics(registry).export(lambda: pending_series(book))
    book.update(result({"ns/a": SHORT, "ns/c": QUOTA}), lambda key: True)
    text = registry.render()
    assert 'lahar_podgroup_pending{queue="q1",reason="InsufficientClusterCapacity"} 1.0' in text
    assert 'lahar_podgroup_pending{queue="q1",reason="InsufficientQueueQuota"} 1.0' in text
    assert 'lahar_podgroup_missing_resource{queue="q1",resource="cpu"} 3.0' in text
    assert 'lahar_podgroup_missing_resource{queue="q1",resource="nvidia.com/gpu"} 2.0' in text
    book.update(result({}, "ns/a"), lambda key: True)
    text = registry.render()
    assert 'reason="InsufficientClusterCapacity"' not in text
    assert "lahar_podgroup_missing_resource{" not in text
    assert 'lahar_podgroup_pending{queue="q1",reason="InsufficientQueueQuota"} 1.0' in text
