"""Scalar values as the Kubernetes API writes them: RFC 3339 timestamps, Go durations, quantity strings,
and free-form data thawed back into plain mappings and lists.

Each is the exact inverse of what the manifest parser (contracts/parse_fields.py) reads, so an object
written out and read back is the same value: timestamps and durations keep every digit of the float they
come from (Kubernetes itself writes whole seconds; RFC 3339 and Go's duration syntax both allow more), and
quantities are written in milli-units where they are not whole.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.resources import format_quantity

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HOUR = Decimal(3600)
_MINUTE = Decimal(60)


def rfc3339(seconds: float) -> str:
    """Epoch seconds as "2024-01-02T03:04:05Z", with as many fractional digits as the float needs to be
    read back exactly (none for whole seconds, as Kubernetes writes them)."""
    exact = Decimal(repr(float(seconds)))
    whole = math.floor(exact)  # toward minus infinity, so the fraction is never negative
    fraction = exact - whole
    moment = _EPOCH + timedelta(seconds=whole)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if fraction:
        text += format(fraction, "f")[1:].rstrip("0")  # "0.25" -> ".25"
    return text + "Z"


def optional_rfc3339(seconds: float | None) -> str | None:
    """A time that may be unset: None stays None (and `put` leaves the field out)."""
    return None if seconds is None else rfc3339(seconds)


def go_duration(seconds: float) -> str:
    """Seconds as Go's time.Duration prints them ("1h30m0s", "1m30s", "45s"); a fraction of a second keeps
    every digit of the float ("0.25s"), which Go's parser reads as well."""
    exact = Decimal(repr(float(seconds)))
    sign = "-" if exact < 0 else ""
    exact = abs(exact)
    hours, rest = divmod(exact, _HOUR)
    minutes, secs = divmod(rest, _MINUTE)
    secs_text = format(secs.normalize(), "f") if secs else "0"
    if hours:
        return f"{sign}{int(hours)}h{int(minutes)}m{secs_text}s"
    if minutes:
        return f"{sign}{int(minutes)}m{secs_text}s"
    return f"{sign}{secs_text}s"


def quantities(resources: Mapping[str, int]) -> dict[str, str]:
    """A ResourceList: dimension -> a quantity string ("500m", "2", "1Gi")."""
    return {name: format_quantity(name, milli) for name, milli in resources.items()}


def thaw(value: Any) -> Any:
    """Free-form data lahar keeps read-only (frozen maps, tuples) as plain mappings and lists."""
    if isinstance(value, Mapping):
        return {str(key): thaw(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(item) for item in value]
    return value


def put(out: dict[str, Any], key: str, value: Any, default: Any = None) -> None:
    """Set `key` unless the value is what the parser assumes when the field is absent (Kubernetes'
    omitempty: a manifest only carries what it says)."""
    if value is None or value == default:
        return
    if isinstance(value, Mapping | tuple | list | str) and not value and default is None:
        return
    out[key] = value
