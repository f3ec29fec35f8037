"""kubectl describe's layout: "Key:" fields with their values aligned, maps one entry a line under the
first, nested sections indented two spaces, and tables under a heading."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from services.cli import output

Field = tuple[str, Any]
NONE = "<none>"


def fields(pairs: Iterable[Field], indent: int = 0) -> list[str]:
    """Each (key, value) as "Key:  value", values aligned; a value of several lines continues in the
    value column; a value of None leaves the key alone on its line (a section heading)."""
    pairs = list(pairs)
    width = max((len(key) for key, value in pairs if value is not None), default=0) + 3
    pad = " " * indent
    lines = []
    for key, value in pairs:
        if value is None:
            lines.append(f"{pad}{key}:")
            continue
        text = str(value) if value != "" else NONE
        first, *rest = text.splitlines() or [NONE]
        lines.append(f"{pad}{(key + ':').ljust(width)}{first}")
        lines.extend(f"{pad}{' ' * width}{line}" for line in rest)
    return lines


def entries(values: Mapping[str, Any], separator: str = "=") -> str:
    """A map as kubectl shows labels: one key=value a line, sorted; <none> when empty."""
    if not values:
        return NONE
    return "\n".join(f"{key}{separator}{value}" for key, value in sorted(values.items()))


def quantities(resources: Mapping[str, int] | None) -> str:
    return output.quantities(resources) or NONE


def when(seconds: float | None, now: float) -> str:
    """A time as "2024-01-02 03:04:05 UTC (5m ago)"."""
    if not seconds:
        return NONE
    return f"{output.utc(seconds)} UTC ({output.age(seconds, now)} ago)"


def section(heading: str, body: Sequence[str], indent: int = 0) -> list[str]:
    """A heading and its lines indented under it; "Heading:  <none>" when there are none."""
    pad = " " * indent
    if not body:
        return [f"{pad}{heading}:  {NONE}"]
    return [f"{pad}{heading}:"] + [f"{pad}  {line}" for line in body]


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """kubectl describe's tables: the headers underlined with dashes."""
    dashes = tuple("-" * len(h) for h in headers)
    return output.table(headers, [dashes, *rows]).splitlines()
