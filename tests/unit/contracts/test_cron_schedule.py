"""Cron schedules (contracts/cron.py): what parses, what is refused and why, and when a schedule fires next
(in UTC and in other time zones, across a daylight-saving change), table-driven."""

from __future__ import annotations

import datetime
import zoneinfo

import pytest

from contracts.cron import ScheduleError, most_recent_time, next_time, parse_schedule


def at(text: str, zone: str = "UTC") -> float:
    """Epoch seconds of an ISO wall-clock time in `zone`."""
    wall = datetime.datetime.fromisoformat(text)
    tz = datetime.UTC if zone == "UTC" else zoneinfo.ZoneInfo(zone)
    return wall.replace(tzinfo=tz).timestamp()


def iso(seconds: float | None, zone: str = "UTC") -> str | None:
    if seconds is None:
        return None
    tz = datetime.UTC if zone == "UTC" else zoneinfo.ZoneInfo(zone)
    return datetime.datetime.fromtimestamp(seconds, tz).replace(tzinfo=None).isoformat()


@pytest.mark.parametrize(
    ("schedule", "zone", "after", "expected"),
    [
        # every minute: the next whole minute, strictly after
        ("* * * * *", "", "2024-05-01T10:00:00", "2024-05-01T10:01:00"),
        ("* * * * *", "", "2024-05-01T10:00:30", "2024-05-01T10:01:00"),
        # steps and ranges
        ("*/5 * * * *", "", "2024-05-01T10:03:00", "2024-05-01T10:05:00"),
        ("*/5 * * * *", "", "2024-05-01T10:55:00", "2024-05-01T11:00:00"),
        ("10-20/5 * * * *", "", "2024-05-01T10:16:00", "2024-05-01T10:20:00"),
        ("10-20/5 * * * *", "", "2024-05-01T10:20:00", "2024-05-01T11:10:00"),
        ("7/20 * * * *", "", "2024-05-01T10:28:00", "2024-05-01T10:47:00"),  # N/step: N to the end
        ("0,30 9-17 * * *", "", "2024-05-01T17:30:00", "2024-05-02T09:00:00"),
        # descriptors
        ("@hourly", "", "2024-05-01T10:00:00", "2024-05-01T11:00:00"),
        ("@daily", "", "2024-05-01T10:00:00", "2024-05-02T00:00:00"),
        ("@midnight", "", "2024-12-31T23:59:59", "2025-01-01T00:00:00"),
        ("@weekly", "", "2024-05-01T10:00:00", "2024-05-05T00:00:00"),  # Sunday
        ("@monthly", "", "2024-05-01T00:00:00", "2024-06-01T00:00:00"),
        ("@yearly", "", "2024-05-01T00:00:00", "2025-01-01T00:00:00"),
        ("@annually", "", "2024-05-01T00:00:00", "2025-01-01T00:00:00"),
        ("@every 90s", "", "2024-05-01T10:00:00.5", "2024-05-01T10:01:30"),
        # names, any case
        ("0 0 * JAN,jul *", "", "2024-05-01T00:00:00", "2024-07-01T00:00:00"),
        ("0 9 * * MON-FRI", "", "2024-05-03T09:00:00", "2024-05-06T09:00:00"),  # Friday -> Monday
        ("0 9 * * sun", "", "2024-05-01T00:00:00", "2024-05-05T09:00:00"),
        # day of month and day of week: either when both are restricted, both when one is *
        ("0 0 13 * 5", "", "2024-05-01T00:00:00", "2024-05-03T00:00:00"),  # Friday the 3rd
        ("0 0 13 * *", "", "2024-05-01T00:00:00", "2024-05-13T00:00:00"),
        ("0 0 ? * 5", "", "2024-05-01T00:00:00", "2024-05-03T00:00:00"),
        ("0 0 */2 * 5", "", "2024-05-01T00:00:00", "2024-05-03T00:00:00"),  # */2 restricts
        # a day some months lack, and one no month has
        ("0 0 31 * *", "", "2024-04-01T00:00:00", "2024-05-31T00:00:00"),
        ("0 0 29 2 *", "", "2024-03-01T00:00:00", "2028-02-29T00:00:00"),
        ("0 0 30 2 *", "", "2024-03-01T00:00:00", None),
        # time zones: 09:00 in Berlin is 07:00 UTC in summer, 08:00 in winter
        ("0 9 * * *", "Europe/Berlin", "2024-07-01T12:00:00", "2024-07-02T07:00:00"),
        ("0 9 * * *", "Europe/Berlin", "2024-01-01T12:00:00", "2024-01-02T08:00:00"),
        ("TZ=Asia/Tokyo 0 9 * * *", "", "2024-07-01T12:00:00", "2024-07-02T00:00:00"),
        (
            "CRON_TZ=America/New_York 30 6 * * *",
            "Europe/Berlin",
            "2024-07-01T12:00:00",
            "2024-07-02T10:30:00",
        ),
        # DST: Berlin skips 02:00-03:00 on 2024-03-31 (no run that day) and repeats it on 2024-10-27 (once)
        ("30 2 * * *", "Europe/Berlin", "2024-03-30T12:00:00", "2024-04-01T00:30:00"),
        ("30 2 * * *", "Europe/Berlin", "2024-10-26T12:00:00", "2024-10-27T00:30:00"),
        ("30 2 * * *", "Europe/Berlin", "2024-10-27T00:30:00", "2024-10-28T01:30:00"),
    ],
)
def test_next_time(schedule: str, zone: str, after: str, expected: str | None) -> None:
    assert iso(next_time(parse_schedule(schedule, zone), at(after))) == expected


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("", "an empty one"),
        ("* * * *", "expected 5 fields"),
        ("* * * * * *", "expected 5 fields"),
        ("60 * * * *", "minute field: expected 0-59, got 60"),
        ("* 24 * * *", "hour field: expected 0-23, got 24"),
        ("* * 0 * *", "day of month field: expected 1-31, got 0"),
        ("* * * 13 *", "month field: expected 1-12, got 13"),
        ("* * * * 7", "day of week field: expected 0-6, got 7"),
        ("* * * foo *", "month field: expected a number 1-12 or a name, got 'foo'"),
        ("*/0 * * * *", "minute field: expected a positive step"),
        ("30-10 * * * *", "minute field: the range '30-10' ends before it starts"),
        ("@fortnightly", "unknown descriptor '@fortnightly'"),
        ("@every", "expected a duration after @every"),
        ("@every soon", "@every: "),
        ("TZ=Mars/Olympus * * * * *", "unknown time zone 'Mars/Olympus'"),
        ("TZ=UTC", "expected a schedule after the time zone"),
    ],
)
def test_bad_schedules_say_what_is_wrong(schedule: str, message: str) -> None:
    with pytest.raises(ScheduleError) as raised:
        parse_schedule(schedule)
    assert message in str(raised.value)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ScheduleError, match="unknown time zone 'Nowhere/City'"):
        parse_schedule("* * * * *", "Nowhere/City")


@pytest.mark.parametrize(
    ("schedule", "earliest", "now", "latest", "missed"),
    [
        ("*/5 * * * *", "2024-05-01T10:00:00", "2024-05-01T10:04:59", None, 0),
        ("*/5 * * * *", "2024-05-01T10:00:00", "2024-05-01T10:05:00", "2024-05-01T10:05:00", 1),
        ("*/5 * * * *", "2024-05-01T10:00:00", "2024-05-01T10:27:00", "2024-05-01T10:25:00", 5),
        ("@hourly", "2024-05-01T00:00:00", "2024-05-06T00:30:00", "2024-05-06T00:00:00", 120),
        # irregular: Friday afternoon to Monday morning
        ("30 6-16/4 * * 1-5", "2024-05-03T15:00:00", "2024-05-06T07:00:00", "2024-05-06T06:30:00", 1),
    ],
)
def test_most_recent_time(schedule: str, earliest: str, now: str, latest: str | None, missed: int) -> None:
    found, count = most_recent_time(parse_schedule(schedule), at(earliest), at(now))
    assert iso(found) == latest
    assert count >= missed and (count == 0) == (latest is None)
