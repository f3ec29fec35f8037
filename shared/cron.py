"""Five-field cron expressions, as Volcano's descheduler reads `--descheduling-interval-cron-expression`
(robfig/cron's standard parser): minute, hour, day of month, month, day of week, each `*`, a number, a
range `a-b`, a step `*/n` or `a-b/n`, or a comma list of those; month and weekday names (jan, mon);
weekday 7 is Sunday; and the descriptors @yearly (@annually), @monthly, @weekly, @daily (@midnight),
@hourly and `@every <duration>`. As in cron, when both the day of month and the day of week are
restricted a day matching either runs. Times are UTC.

Pure: `parse_cron(text)` gives a schedule whose `next_after(epoch_s)` is the first run strictly after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, lowest, highest, names for lowest.. in order)
_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = re.compile(r"^@every\s+(\S+)$")
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|m|s|ms))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_SEARCH_DAYS = 366 * 5  # a schedule with no run within five years (Feb 30) never runs


class CronError(ValueError):
    """An expression that does not parse; the message names the field."""


@dataclass(frozen=True, slots=True)
class CronSchedule:
    text: str
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()  # 0 = Sunday
    any_day: bool = True  # day of month is `*`
    any_weekday: bool = True  # day of week is `*`
    every_s: float | None = None  # @every

    def next_after(self, epoch_s: float) -> float | None:
        """The first run strictly after `epoch_s` (None: there is none within five years)."""
        if self.every_s is not None:
            return epoch_s + self.every_s
        start = datetime.fromtimestamp(epoch_s, UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        for _ in range(_SEARCH_DAYS):
            if day.month in self.months and self._day_matches(day):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        moment = day.replace(hour=hour, minute=minute)
                        if moment >= start:
                            return moment.timestamp()
            day += timedelta(days=1)
        return None

    def _day_matches(self, day: datetime) -> bool:
        by_date = day.day in self.days
        by_weekday = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return by_date and by_weekday
        return by_date or by_weekday


def parse_cron(text: str) -> CronSchedule:
    spec = text.strip()
    every = _EVERY.match(spec)
    if every:
        seconds = _duration(every.group(1))
        if seconds <= 0:
            raise CronError(
                f"@every: expected a positive duration such as 90s or 1h30m, got {every.group(1)!r}"
            )
        return CronSchedule(text, every_s=seconds)
    spec = _DESCRIPTORS.get(spec.lower(), spec)
    if spec.startswith("@"):
        raise CronError(f"unknown descriptor {spec!r}; expected one of {', '.join(_DESCRIPTORS)} or @every")
    parts = spec.split()
    if len(parts) != len(_FIELDS):
        raise CronError(
            f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)} in {text!r}"
        )
    values = [_field(part, *field) for part, field in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in values[4])
    return CronSchedule(
        text,
        frozenset(values[0]),
        frozenset(values[1]),
        frozenset(values[2]),
        frozenset(values[3]),
        weekdays,
        any_day=parts[2] in ("*", "?"),
        any_weekday=parts[4] in ("*", "?"),
    )


def _duration(text: str) -> float:
    if not _DURATION.match(text):
        raise CronError(f"@every: expected a duration such as 90s or 1h30m, got {text!r}")
    return sum(float(number) * _UNITS[unit] for number, unit in _DURATION_PART.findall(text))


def _field(part: str, name: str, low: int, high: int, names: tuple[str, ...]) -> set[int]:
    out: set[int] = set()
    for item in part.split(","):
        out |= _item(item, name, low, high, names)
    return out


def _item(item: str, name: str, low: int, high: int, names: tuple[str, ...]) -> set[int]:
    spread, _, step_text = item.partition("/")
    step = 1
    if step_text:
        if not step_text.isdigit() or int(step_text) == 0:
            raise CronError(f"{name}: expected a positive step after '/', got {item!r}")
        step = int(step_text)
    if spread in ("*", "?"):
        first, last = low, high
    else:
        start, dash, end = spread.partition("-")
        first = _number(start, name, low, high, names)
        last = _number(end, name, low, high, names) if dash else (high if step_text else first)
        if first > last:
            raise CronError(f"{name}: range {item!r} runs backwards")
    return set(range(first, last + 1, step))


def _number(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> int:
    lowered = text.lower()
    if lowered in names:
        return low + names.index(lowered)
    if not text.isdigit() or not low <= int(text) <= high:
        named = f" or a name ({', '.join(names)})" if names else ""
        raise CronError(f"{name}: expected a number in {low}-{high}{named}, got {text!r}")
    return int(text)
