"""shared/bus/log_gaps.py: which records a follower receives show a gap."""

from __future__ import annotations

from shared.bus.log_gaps import GapWatch, LogGap


def watch(*, unfiltered: bool) -> tuple[GapWatch, list[LogGap]]:
    gaps: list[LogGap] = []
    times = iter(float(t) for t in range(100))
    return GapWatch(gaps.append, unfiltered=unfiltered, clock=lambda: next(times)), gaps


def test_consecutive_records_of_one_consumer_are_no_gap() -> None:
    gaps_watch, gaps = watch(unfiltered=True)
    for cseq, seq in enumerate((5, 6, 7), start=1):
        gaps_watch.saw(seq, cseq)
    assert gaps == []


def test_a_recreated_consumer_is_a_gap_with_its_extent() -> None:
    gaps_watch, gaps = watch(unfiltered=False)
    gaps_watch.saw(10, 1)
    gaps_watch.saw(14, 2)  # a filtered follower skips other subjects' records: no gap
    gaps_watch.saw(15, 1)  # the client recreated the consumer: it counts from 1 again
    assert gaps == [LogGap(after_seq=14, seq=15, restarted=True, skipped=0, silent_s=1.0)]


def test_an_unfiltered_follower_sees_records_it_never_got() -> None:
    gaps_watch, gaps = watch(unfiltered=True)
    gaps_watch.saw(1, 1)
    gaps_watch.saw(5, 2)
    assert gaps == [LogGap(after_seq=1, seq=5, restarted=False, skipped=3, silent_s=1.0)]
