"""The Queue annotation `volcano.sh/overcommit-factor` (Volcano 1.16's queue-scoped overcommit): admission
refuses a value this module rejects, the scheduler reads the factor with it (and, should an invalid value
reach it anyway, keeps the queue's jobs Pending rather than ignore the policy, as Volcano's design asks).

The value is a finite decimal number >= 1, and a queue that gives it must deserve some resource (a
positive `spec.deserved` quantity): the factor multiplies what the queue deserves.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

OVERCOMMIT_FACTOR = "volcano.sh/overcommit-factor"
_DECIMAL = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def overcommit_factor_problem(value: str) -> str:
    """Why `value` is not a valid factor ("" when it is)."""
    text = value.strip()
    if not _DECIMAL.match(text) or not math.isfinite(float(text)):
        return f"expected a decimal number >= 1, got {value!r}"
    if float(text) < 1.0:
        return f"must be >= 1 (a factor below 1 would admit less than the queue deserves), got {value!r}"
    return ""


def deserves_something(deserved: Mapping[str, int] | None) -> bool:
    """Whether a queue's spec.deserved grants a positive quantity of some resource."""
    return any(v > 0 for v in (deserved or {}).values())


def parse_overcommit_factor(annotations: Mapping[str, str]) -> float | str | None:
    """The queue's factor; None without the annotation; the problem (a str) when the value is invalid."""
    value = annotations.get(OVERCOMMIT_FACTOR)
    if value is None:
        return None
    problem = overcommit_factor_problem(value)
    return problem or float(value.strip())
