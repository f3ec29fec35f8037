"""Reading manifests field by field: value conversions and the `Fields` walker.

`Fields` walks one mapping at a known path. Every problem it meets is recorded against the document and
the read goes on with the field's default, so a parser written as a flat list of `Fields` calls reads like
the schema and still reports every problem in a document at once. Fields nobody asks for are ignored, as
the Kubernetes API server ignores unknown fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, TypeVar

from contracts.errors import FieldError
from contracts.limits import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_DURATION_S,
    MAX_EPOCH_SECONDS,
    MAX_QUANTITY_MILLI,
    quote,
)
from contracts.objects import frozen_map
from contracts.resources import QUANTITY_RANGE, Resources, parse_quantity

T = TypeVar("T")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
POD_RESTART_POLICIES = ("Always", "OnFailure", "Never")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
CONDITION_STATUSES = ("True", "False", "Unknown")

_QUOTED_INT_BITS = 128
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_DURATION_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "μs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_DURATION_PART = "(\\d+\\.?\\d*|\\.\\d+)(ns|us|µs|μs|ms|s|m|h)"
_DURATION = re.compile(f"[-+]?(?:{_DURATION_PART})+")
# a timestamp whose seconds have more fractional digits than a datetime holds (seven or more)
_FINE_FRACTION = re.compile(r"(.*\d{2}:\d{2}:\d{2})(\.\d{7,})(.*)")


# --- scalar conversions: each raises ValueError with "expected ..., got ..." -------------------------


def describe(value: object) -> str:
    """How a found value is quoted in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int) and value.bit_length() > _QUOTED_INT_BITS:
        return _integer_text(value)  # its digits would make a long message
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, date):
        return f"timestamp {value.isoformat()}"
    return type(value).__name__


def as_string(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {describe(value)}")
    return value


def as_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {describe(value)}")
    return value


def as_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {describe(value)}")
    return value


def as_string_list(value: object) -> tuple[str, ...]:
    # null is an empty list, as for Go's nil slices
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"expected a list of strings, got {describe(value)}")
    return tuple(value)


def as_quantity(value: object) -> int:
    milli = parse_quantity(value)
    # parse_quantity rejects negative text but lets YAML's own negative numbers through
    if milli < 0:
        raise ValueError(f"expected a non-negative quantity, got {describe(value)}")
    if milli > MAX_QUANTITY_MILLI:
        raise ValueError(f"{QUANTITY_RANGE}, got {describe(value)}")
    return milli


def as_regex(value: object) -> str:
    pattern = as_string(value)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"expected a regular expression, got {describe(value)} ({exc})") from None
    return pattern


def duration_seconds(text: object) -> float:
    """A Go duration ("30s", "1m", "1h30m", "250ms", "1.5h", "0") in seconds; ValueError if malformed."""
    if not isinstance(text, str) or not (text == "0" or _DURATION.fullmatch(text)):
        raise ValueError(f"expected a duration such as 30s, 1m30s or 250ms, got {describe(text)}")
    total = sum(
        (Decimal(number) * _DURATION_UNITS[unit] for number, unit in re.findall(_DURATION_PART, text)),
        Decimal(0),
    )
    if total > Decimal(MAX_DURATION_S):
        raise ValueError(f"expected a duration of at most {MAX_DURATION_S:.0f}s (Go's), got {describe(text)}")
    return float(-total if text.startswith("-") else total)


def timestamp_seconds(value: object) -> float:
    """An RFC 3339 timestamp (as text or as YAML's own timestamp) or plain epoch seconds, as epoch seconds.
    A timestamp without a zone is taken as UTC, the zone Kubernetes always writes."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        # float() of a huge int overflows: only times RFC 3339 can write are taken
        if not -MAX_EPOCH_SECONDS <= value <= MAX_EPOCH_SECONDS:
            raise ValueError(f"expected epoch seconds up to {MAX_EPOCH_SECONDS:.0f}, got {describe(value)}")
        return float(value)
    moment = value
    beyond_micro = Decimal(0)
    if isinstance(value, str):
        # datetime keeps microseconds only: finer digits (lahar writes every digit of its float
        # timestamps, contracts/kube_values.py) are added back exactly
        fine = _FINE_FRACTION.fullmatch(value)
        text = value if fine is None else fine.group(1) + fine.group(3)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            moment = None
        if fine is not None:
            beyond_micro = Decimal(fine.group(2))
    if not isinstance(moment, datetime):
        raise ValueError(
            f"expected an RFC 3339 timestamp such as 2024-01-02T03:04:05Z, got {describe(value)}"
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if beyond_micro:
        return float(Decimal(int(moment.timestamp())) + beyond_micro)
    return moment.timestamp()


def _one_of(choices: Collection[str]) -> Callable[[object], str]:
    def convert(value: object) -> str:
        text = as_string(value)
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {describe(value)}")
        return text

    return convert


def _integer_text(number: int) -> str:
    return str(number) if number.bit_length() <= _QUOTED_INT_BITS else f"a {number.bit_length()}-bit integer"


_WIDTHS = {32: (INT32_MIN, INT32_MAX), 64: (INT64_MIN, INT64_MAX)}


def _in_range(minimum: int | None, maximum: int | None, bits: int = 32) -> Callable[[object], int]:
    """An integer within [minimum, maximum] and within the field's width (Kubernetes' int32 or int64)."""
    low, high = _WIDTHS[bits]

    def convert(value: object) -> int:
        number = as_int(value)
        if minimum is not None and number < minimum:
            raise ValueError(f"expected an integer >= {minimum}, got {_integer_text(number)}")
        if maximum is not None and number > maximum:
            raise ValueError(f"expected an integer <= {maximum}, got {_integer_text(number)}")
        if not low <= number <= high:
            bound = f"<= {high}" if number > high else f">= {low}"
            raise ValueError(
                f"expected an integer {bound} (a {bits}-bit integer), got {_integer_text(number)}"
            )
        return number

    return convert


def _freeze(value: object) -> object:
    """A deep read-only, hashable copy of free-form YAML (mappings become frozen maps, lists tuples)."""
    if isinstance(value, Mapping):
        return frozen_map({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value


def join_path(path: str, key: str) -> str:
    """`key` under `path`: dotted for plain names, bracketed (Kubernetes field-path style) for map keys
    such as `nvidia.com/gpu` whose dots and slashes would make a dotted path ambiguous."""
    if not _PLAIN_KEY.match(key):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


# --- the walker ----------------------------------------------------------------------------------


class Fields:
    """One mapping of a document being read at `path`; problems are appended to a shared error list."""

    __slots__ = ("_data", "_document", "_errors", "path")

    # keys are Any: a YAML mapping's keys may be of any type, and the readers only look strings up
    def __init__(
        self, data: Mapping[Any, object], path: str, document: str, errors: list[FieldError]
    ) -> None:
        self._data = data
        self.path = path
        self._document = document
        self._errors = errors

    def at(self, key: str) -> str:
        return join_path(self.path, key)

    def error(self, message: str, key: str | None = None, *, path: str | None = None) -> None:
        """Record a problem with `key` (or with this mapping itself, or at an explicit path)."""
        where = path if path is not None else (self.at(key) if key is not None else self.path)
        self._errors.append(FieldError(self._document, where, message))

    def present(self, key: str) -> bool:
        """Given and not null: Kubernetes treats an explicit null like an absent field."""
        return self._data.get(key) is not None

    def get(self, key: str, convert: Callable[[object], T], default: T, *, required: bool = False) -> T:
        value = self._data.get(key)
        if value is None:
            if required:
                self.error("required field is missing", key)
            return default
        try:
            return convert(value)
        except ValueError as exc:
            self.error(str(exc), key)
            return default

    # scalars

    def string(
        self, key: str, default: str = "", *, required: bool = False, choices: Collection[str] | None = None
    ) -> str:
        text = self.get(key, _one_of(choices) if choices else as_string, default, required=required)
        if required and self._data.get(key) == "":
            self.error("expected a non-empty string, got ''", key)
        return text

    def integer(
        self,
        key: str,
        default: int = 0,
        *,
        required: bool = False,
        minimum: int | None = None,
        maximum: int | None = None,
        bits: int = 32,
    ) -> int:
        """`bits`: the field's width in Kubernetes' types (int32 unless the API says int64)."""
        return self.get(key, _in_range(minimum, maximum, bits), default, required=required)

    def optional_integer(self, key: str, *, minimum: int | None = None, bits: int = 32) -> int | None:
        return self.get(key, _in_range(minimum, None, bits), None)

    def boolean(self, key: str, default: bool = False) -> bool:
        return self.get(key, as_bool, default)

    def optional_boolean(self, key: str) -> bool | None:
        return self.get(key, as_bool, None)

    def timestamp(self, key: str) -> float | None:
        return self.get(key, timestamp_seconds, None)

    def duration(self, key: str) -> float | None:
        seconds = self.get(key, duration_seconds, None)
        if seconds is not None and seconds < 0:
            self.error(f"expected a non-negative duration, got {describe(self._data.get(key))}", key)
            return None
        return seconds

    def regex(self, key: str, *, required: bool = False) -> str:
        return self.get(key, as_regex, "", required=required)

    # collections

    def list_of(self, key: str, convert: Callable[[object], T]) -> tuple[T, ...]:
        items = self._list(key)
        out = []
        for index, item in enumerate(items):
            try:
                out.append(convert(item))
            except ValueError as exc:
                self.error(str(exc), path=f"{self.at(key)}[{index}]")
        return tuple(out)

    def map_of(self, key: str, convert: Callable[[object], T]) -> Mapping[str, T]:
        items = self._mapping(key)
        out = {}
        for name, item in items.items():
            if not isinstance(name, str):
                self.error(f"expected string keys, got key {describe(name)}", key)
                continue
            try:
                out[name] = convert(item)
            except ValueError as exc:
                self.error(str(exc), path=join_path(self.at(key), name))
        return frozen_map(out)

    def strings(self, key: str, *, choices: Collection[str] | None = None) -> tuple[str, ...]:
        return self.list_of(key, _one_of(choices) if choices else as_string)

    def string_map(self, key: str) -> Mapping[str, str]:
        return self.map_of(key, as_string)

    def int_map(self, key: str, *, minimum: int | None = None) -> Mapping[str, int]:
        return self.map_of(key, _in_range(minimum, None))

    def resources(self, key: str) -> Resources:
        return Resources(self.map_of(key, as_quantity))

    def optional_resources(self, key: str) -> Resources | None:
        """None when absent: for caps and minimums, "not given" differs from "all zero"."""
        return self.resources(key) if self.present(key) else None

    def frozen(self) -> Mapping[str, object]:
        """This whole mapping as free-form read-only data, for fields lahar passes along uninterpreted."""
        return frozen_map({key: _freeze(item) for key, item in self._data.items()})

    # nested objects

    def section(self, key: str, *, required: bool = False) -> Fields:
        """The mapping under `key`, or an empty one when it is absent, so optional sections read uniformly."""
        value = self._mapping(key, required=required)
        return Fields(value, self.at(key), self._document, self._errors)

    def optional(self, key: str, parse: Callable[[Fields], T]) -> T | None:
        """`parse` applied to the mapping under `key`, or None when it is absent."""
        if isinstance(self._data.get(key), Mapping):
            return parse(self.section(key))
        self._mapping(key)  # reports a value of the wrong type
        return None

    def each(self, key: str, parse: Callable[[Fields], T]) -> tuple[T, ...]:
        """`parse` applied to every mapping in the list under `key`."""
        out = []
        for index, item in enumerate(self._list(key)):
            path = f"{self.at(key)}[{index}]"
            if isinstance(item, Mapping):
                out.append(parse(Fields(item, path, self._document, self._errors)))
            else:
                self.error(f"expected a mapping, got {describe(item)}", path=path)
        return tuple(out)

    def _list(self, key: str) -> list[object]:
        value = self._data.get(key)
        if isinstance(value, list):
            return value
        self._wrong_or_missing(key, value, "a list", required=False)
        return []

    def _mapping(self, key: str, *, required: bool = False) -> Mapping[Any, object]:
        value = self._data.get(key)
        if isinstance(value, Mapping):
            return value
        self._wrong_or_missing(key, value, "a mapping", required=required)
        return {}

    def _wrong_or_missing(self, key: str, value: object, expected: str, *, required: bool) -> None:
        if value is not None:
            self.error(f"expected {expected}, got {describe(value)}", key)
        elif required:
            self.error("required field is missing", key)


# --- Kubernetes core/v1 --------------------------------------------------------------------------
