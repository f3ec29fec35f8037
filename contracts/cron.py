"""Cron schedules as a CronJob's spec.schedule writes them, and when they next fire.

What is accepted is what Kubernetes' and Volcano's CronJob controllers accept (the "standard" cron
format): five fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6
or SUN-SAT), each a comma-separated list of `*` (or `?`), `N`, `N-M`, any of them with `/step`; the
descriptors @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly; and `@every
<duration>` (a Go duration, whole seconds, at least 1s). A `TZ=<zone>` or `CRON_TZ=<zone>` prefix names
the schedule's time zone (admission refuses it in a CronJob, as Volcano's webhook does: spec.timeZone
says that).

Day of month and day of week combine as cron always has: when both are restricted a day matching either
fires; when one is `*` (or `?`) the other alone decides.

Times are epoch seconds. A schedule fires at whole minutes of its zone's wall clock (`@every` at whole
seconds after the time it counts from); a wall time skipped by a daylight-saving change does not fire,
one repeated fires at its first occurrence. Pure: no clock; the zone rules come from the system's time
zone database.
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from dataclasses import dataclass

from contracts.parse_fields import duration_seconds

UTC = "UTC"
# robfig/cron's horizon: a schedule that does not fire within five years (February 30th) never fires
SEARCH_YEARS = 5
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_ZONE_PREFIX = re.compile(r"^(?:CRON_TZ|TZ)=(\S*)\s+")


class ScheduleError(ValueError):
    """A schedule that cannot be read; the message says which part and why."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names for low, low+1, ... (months, weekdays)


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 6, _WEEKDAYS),
)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule. `every` (seconds) is set for `@every`, the field sets otherwise; weekdays count
    from Sunday = 0. `zone` is an IANA zone name ("UTC" by default)."""

    text: str
    zone: str = UTC
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    any_day: bool = False  # day of month is * or ?
    any_weekday: bool = False  # day of week is * or ?
    every: int | None = None

    def day_matches(self, day: datetime.date) -> bool:
        in_month = day.day in self.days
        in_week = (day.weekday() + 1) % 7 in self.weekdays  # Python's Monday = 0, cron's Sunday = 0
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week


def load_zone(name: str) -> datetime.tzinfo:
    """The time zone of an IANA name; ScheduleError when the database does not know it."""
    if name == UTC:
        return datetime.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ScheduleError(f"unknown time zone {name!r}") from exc


def parse_schedule(text: str, time_zone: str = "") -> Schedule:
    """The schedule `text` describes, in `time_zone` (default UTC) unless the text names its own zone."""
    spec = text.strip()
    zone = time_zone or UTC
    prefix = _ZONE_PREFIX.match(spec)
    if prefix is not None:
        zone, spec = prefix.group(1), spec[prefix.end() :]
        if not zone:
            raise ScheduleError("expected a time zone after TZ=")
    elif spec.startswith(("TZ=", "CRON_TZ=")):
        raise ScheduleError("expected a schedule after the time zone")
    load_zone(zone)
    if not spec:
        raise ScheduleError("expected a schedule, got an empty one")
    if spec.startswith("@every"):
        return Schedule(text, zone, every=_every_seconds(spec))
    if spec.startswith("@"):
        expanded = _DESCRIPTORS.get(spec.lower())
        if expanded is None:
            known = ", ".join(sorted(_DESCRIPTORS))
            raise ScheduleError(f"unknown descriptor {spec!r}; expected one of {known} or @every <duration>")
        spec = expanded
    parts = spec.split()
    if len(parts) != len(_FIELDS):
        raise ScheduleError(
            f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}"
        )
    values = [_field_values(part, field) for part, field in zip(parts, _FIELDS, strict=True)]
    return Schedule(
        text,
        zone,
        minutes=values[0][0],
        hours=values[1][0],
        days=values[2][0],
        months=values[3][0],
        weekdays=values[4][0],
        any_day=values[2][1],
        any_weekday=values[4][1],
    )


def _every_seconds(spec: str) -> int:
    duration = spec[len("@every") :].strip()
    if not duration:
        raise ScheduleError("expected a duration after @every, such as @every 1h30m")
    try:
        seconds = duration_seconds(duration)
    except ValueError as exc:
        raise ScheduleError(f"@every: {exc}") from exc
    if seconds < 0:
        raise ScheduleError(f"@every: expected a positive duration, got {duration!r}")
    return max(1, int(seconds))  # robfig/cron's rule: whole seconds, at least one


def _field_values(expression: str, field: _Field) -> tuple[frozenset[int], bool]:
    """The values a field's expression allows, and whether it is the unrestricted `*` or `?`."""
    values: set[int] = set()
    star = False
    for item in expression.split(","):
        found, item_star = _range_values(item, field)
        values |= found
        star = star or item_star
    return frozenset(values), star


def _range_values(item: str, field: _Field) -> tuple[set[int], bool]:
    where = f"{field.name} field"
    span, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) == 0:
            raise ScheduleError(f"{where}: expected a positive step after '/', got {item!r}")
        step = int(step_text)
    if span in ("*", "?"):
        low, high = field.low, field.high
        star = step == 1  # */2 restricts the field, * and */1 do not
    else:
        star = False
        first, dash, last = span.partition("-")
        low = _value(first, field)
        high = _value(last, field) if dash else (field.high if slash else low)
        if low > high:
            raise ScheduleError(f"{where}: the range {span!r} ends before it starts")
    return set(range(low, high + 1, step)), star


def _value(text: str, field: _Field) -> int:
    lowered = text.lower()
    if lowered in field.names:
        return field.low + field.names.index(lowered)
    if not text.isdigit():
        what = f"a number {field.low}-{field.high}" + (" or a name" if field.names else "")
        raise ScheduleError(f"{field.name} field: expected {what}, got {text!r}")
    value = int(text)
    if not field.low <= value <= field.high:
        raise ScheduleError(f"{field.name} field: expected {field.low}-{field.high}, got {value}")
    return value


def next_time(schedule: Schedule, after: float) -> float | None:
    """The first time the schedule fires strictly after `after` (epoch seconds); None when it never
    fires within SEARCH_YEARS (a day that does not exist, such as February 30th)."""
    if schedule.every is not None:
        return float(int(after) + schedule.every)
    zone = load_zone(schedule.zone)
    start = int(after) + 1
    start += -start % 60  # the next whole minute
    wall = datetime.datetime.fromtimestamp(start, zone).replace(tzinfo=None)
    limit = wall.year + SEARCH_YEARS
    while wall.year <= limit:
        if wall.month not in schedule.months:
            wall = _first_of_next_month(wall)
        elif not schedule.day_matches(wall.date()):
            wall = datetime.datetime.combine(wall.date() + datetime.timedelta(days=1), datetime.time())
        elif wall.hour not in schedule.hours:
            wall = wall.replace(minute=0) + datetime.timedelta(hours=1)
        elif wall.minute not in schedule.minutes:
            wall += datetime.timedelta(minutes=1)
        else:
            moment = _instant(wall, zone)
            if moment is not None and moment > after:
                return moment
            wall += datetime.timedelta(minutes=1)
    return None


def _first_of_next_month(wall: datetime.datetime) -> datetime.datetime:
    year, month = (wall.year + 1, 1) if wall.month == 12 else (wall.year, wall.month + 1)
    return datetime.datetime(year, month, 1)


def _instant(wall: datetime.datetime, zone: datetime.tzinfo) -> float | None:
    """The epoch seconds of a wall-clock time in `zone` (its first occurrence when the clock repeats
    it), None when the clock skips it."""
    moment = wall.replace(tzinfo=zone).timestamp()
    back = datetime.datetime.fromtimestamp(moment, zone).replace(tzinfo=None)
    return moment if back == wall else None


def most_recent_time(schedule: Schedule, earliest: float, now: float) -> tuple[float | None, int]:
    """The latest time the schedule fired after `earliest` and at or before `now`, and about how many
    times it fired in that span (Kubernetes' CronJob controller's estimate, which warns above 100)."""
    first = next_time(schedule, earliest)
    if first is None or first > now:
        return None, 0
    second = next_time(schedule, first)
    if second is None or second > now:
        return first, 1
    interval = max(1.0, second - first)
    missed = int((now - first) // interval) + 1
    # start near `now`, an interval earlier than the estimate to be safe for irregular schedules
    moment = next_time(schedule, max(earliest, first + (missed - 2) * interval)) if missed > 2 else first
    latest = first
    while moment is not None and moment <= now:
        latest = moment
        moment = next_time(schedule, moment)
    return latest, missed
