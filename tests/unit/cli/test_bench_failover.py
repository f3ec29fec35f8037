"""`lahar bench failover`'s figures (pure): medians and worst cases over the kills, and which bind counts
as the first after a kill."""

from __future__ import annotations

from services.cli.bench_failover import BindLog, Kill, summary


def test_the_summary_gives_medians_and_worst_cases_over_the_kills() -> None:
    kills = [Kill("binder", 2.0, 2.1), Kill("binder-2", 1.4, 1.5), Kill("binder", 2.2, 2.9)]
    figures = summary(kills)
    assert (figures["takeover_p50_s"], figures["takeover_max_s"]) == (2.0, 2.2)
    assert (figures["next_bind_p50_s"], figures["next_bind_max_s"]) == (2.1, 2.9)
    assert [k["killed"] for k in figures["per_kill"]] == ["binder", "binder-2", "binder"]


def test_only_a_bind_written_after_the_kill_counts_as_the_next() -> None:
    log = BindLog(bind_times=[10.0, 11.5, 13.25])
    assert (
        log.first_bind_after(11.5) == 13.25
    )  # the one written at the moment of the kill was the old leader's
    assert log.first_bind_after(13.25) is None
