"""The reader's book of usage samples (shared/usage/book.py): the last report received for a node wins,
ages count on the reader's clock, and a sample older than the stale-after limit is left out."""

from __future__ import annotations

import pytest

from contracts.usage import NodeUsage, UsageReport
from shared.usage.book import UsageBook


def sample(node: str, cpu: int, time: float = 0.0) -> NodeUsage:
    return NodeUsage(
        node=node,
        time=time,
        cpu_milli=cpu,
        memory_bytes=0,
        cpu_avg_milli=cpu,
        memory_avg_bytes=0,
        window_s=120.0,
    )


def report(*nodes: NodeUsage, agent: str = "sim") -> UsageReport:
    return UsageReport(agent=agent, period_s=10.0, nodes=nodes)


def test_the_last_report_received_for_a_node_wins() -> None:
    book = UsageBook()
    book.apply(report(sample("a", 100), sample("b", 200)), received=10.0)
    # an agent's clock may be behind the reader's: its sample times do not order them, arrival does
    book.apply(report(sample("a", 300, time=-5.0)), received=11.0)
    assert book.latest("a") == sample("a", 300, time=-5.0)
    assert book.latest("b") == sample("b", 200)
    assert book.latest("c") is None
    assert len(book) == 2


@pytest.mark.parametrize(
    ("now", "stale_after_s", "fresh"),
    [
        pytest.param(10.0, 300.0, {"a", "b"}, id="both-fresh"),
        pytest.param(305.0, 300.0, {"b"}, id="a-stale"),
        pytest.param(310.0, 300.0, {"b"}, id="b-exactly-at-the-limit"),
        pytest.param(310.1, 300.0, set(), id="both-stale"),
    ],
)
def test_fresh_leaves_out_samples_older_than_the_limit(now: float, stale_after_s: float, fresh: set) -> None:
    book = UsageBook()
    book.apply(report(sample("a", 1)), received=0.0)
    book.apply(report(sample("b", 2)), received=10.0)
    assert set(book.fresh(now, stale_after_s)) == fresh


def test_age_is_on_the_readers_clock_and_forget_drops_a_node() -> None:
    book = UsageBook()
    assert book.age("a", 5.0) is None
    book.apply(report(sample("a", 1, time=1e9)), received=2.0)
    assert book.age("a", 5.0) == 3.0
    assert book.age("a", 1.0) == 0.0  # never negative
    book.forget("a")
    assert book.latest("a") is None and book.age("a", 5.0) is None
