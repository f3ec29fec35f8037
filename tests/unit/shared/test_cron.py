"""Five-field cron expressions, as Volcano's descheduler takes --descheduling-interval-cron-expression."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.cron import CronError, parse_cron


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("*/5 * * * *", "2024-03-01T10:02:30", "2024-03-01T10:05:00"),
        ("*/5 * * * *", "2024-03-01T10:05:00", "2024-03-01T10:10:00"),  # strictly after
        ("0 3 * * *", "2024-03-01T04:00:00", "2024-03-02T03:00:00"),
        ("30 9 * * mon-fri", "2024-03-01T10:00:00", "2024-03-04T09:30:00"),  # Friday after 9:30 -> Monday
        ("0 0 1 jan *", "2024-03-01T00:00:00", "2025-01-01T00:00:00"),
        ("0 0 * * 7", "2024-03-01T00:00:00", "2024-03-03T00:00:00"),  # 7 is Sunday
        ("0 12 13 * 5", "2024-03-01T00:00:00", "2024-03-01T12:00:00"),  # day 13 OR a Friday
        ("15,45 1-2 * * *", "2024-03-01T01:20:00", "2024-03-01T01:45:00"),
        ("@hourly", "2024-03-01T10:59:00", "2024-03-01T11:00:00"),
        ("@daily", "2024-03-01T10:00:00", "2024-03-02T00:00:00"),
    ],
)
def test_next_run(expression: str, after: str, expected: str) -> None:
    assert parse_cron(expression).next_after(at(after)) == at(expected)


def test_every_and_never() -> None:
    assert parse_cron("@every 90s").next_after(100.0) == 190.0
    assert parse_cron("0 0 30 feb *").next_after(at("2024-01-01T00:00:00")) is None


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("* * * *", "expected 5 fields"),
        ("60 * * * *", "minute: expected a number in 0-59"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day of month"),
        ("* * * foo *", "month"),
        ("* * * * 8", "day of week"),
        ("*/0 * * * *", "positive step"),
        ("5-1 * * * *", "backwards"),
        ("@fortnightly", "unknown descriptor"),
        ("@every soon", "@every"),
    ],
)
def test_errors_name_the_field(expression: str, words: str) -> None:
    with pytest.raises(CronError, match=words):
        parse_cron(expression)
