"""The usage plugin's arguments, Volcano's names and defaults (pkg/scheduler/plugins/usage):

```yaml
- name: usage
  enablePredicate: true     # false: never filter, only score
  arguments:
    usage.weight: 5         # the plugin's weight in the node score
    cpu.weight: 1
    memory.weight: 1
    thresholds: {cpu: 80, mem: 80}   # percent of allocatable: a node above either is filtered
    estimator:              # what a pod not yet in its node's sample is estimated to use
      request_ratio: 0.7    # of its request
      burst_ratio: 0        # of (limit - request)
      risk_threshold: 0.6   # once the node's weighted load reaches this ...
      risk_factor: 1.2      # ... estimates are multiplied by this
      be_cpu: 250m          # a pod without requests (BestEffort)
      be_mem: 200Mi
```
As in Volcano, a value out of its range (a negative weight, a threshold outside 0..100, a ratio outside
0..1, a risk factor below 1, a negative BestEffort quantity) falls back to its default. Unlike Volcano an
unknown key or a value that is not a number (a quantity for be_cpu and be_mem) is an error naming it,
as every unknown argument of the conf is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contracts.resources import QuantityError, parse_quantity

_THRESHOLDS = ("cpu", "mem")
_ESTIMATOR = ("request_ratio", "burst_ratio", "risk_threshold", "risk_factor", "be_cpu", "be_mem")
_MEBIBYTE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class UsageArguments:
    usage_weight: int = 5
    cpu_weight: int = 1
    memory_weight: int = 1
    cpu_threshold: float = 80.0  # percent
    memory_threshold: float = 80.0
    request_ratio: float = 0.7
    burst_ratio: float = 0.0
    risk_threshold: float = 0.6
    risk_factor: float = 1.2
    best_effort_cpu_milli: float = 250.0
    best_effort_memory_bytes: float = 200.0 * _MEBIBYTE

    @classmethod
    def parse(cls, arguments: Mapping[str, Any]) -> UsageArguments:
        """The arguments with Volcano's fallbacks (call argument_problems first: this assumes none)."""
        weights = {
            name: _or_default(arguments.get(key), default, _within(0, None), int)
            for name, key, default in (
                ("usage_weight", "usage.weight", 5),
                ("cpu_weight", "cpu.weight", 1),
                ("memory_weight", "memory.weight", 1),
            )
        }
        thresholds = _section(arguments, "thresholds")
        estimator = _section(arguments, "estimator")
        percent, ratio = _within(0, 100), _within(0, 1)
        return cls(
            **weights,
            cpu_threshold=_or_default(thresholds.get("cpu"), 80.0, percent, float),
            memory_threshold=_or_default(thresholds.get("mem"), 80.0, percent, float),
            request_ratio=_or_default(estimator.get("request_ratio"), 0.7, ratio, float),
            burst_ratio=_or_default(estimator.get("burst_ratio"), 0.0, ratio, float),
            risk_threshold=_or_default(estimator.get("risk_threshold"), 0.6, ratio, float),
            risk_factor=_or_default(estimator.get("risk_factor"), 1.2, _within(1, None), float),
            best_effort_cpu_milli=_best_effort(estimator.get("be_cpu"), 250.0, cpu=True),
            best_effort_memory_bytes=_best_effort(estimator.get("be_mem"), 200.0 * _MEBIBYTE, cpu=False),
        )


def argument_problems(arguments: Mapping[str, Any]) -> list[str]:
    """What is wrong with the nested sections: unknown keys and values that are not numbers (paths
    relative to `arguments`)."""
    problems = []
    for key in ("usage.weight", "cpu.weight", "memory.weight"):
        if key in arguments and not _number(arguments[key]):
            problems.append(f"{key}: expected an integer, got {arguments[key]!r}")
    for section, known in (("thresholds", _THRESHOLDS), ("estimator", _ESTIMATOR)):
        raw = arguments.get(section)
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            problems.append(f"{section}: expected a mapping of {', '.join(known)}")
            continue
        for key, value in raw.items():
            if key not in known:
                problems.append(f"{section}.{key}: unknown (expected one of {', '.join(known)})")
            elif key in ("be_cpu", "be_mem"):
                if not isinstance(value, int | str) or isinstance(value, bool) or not _quantity(value):
                    problems.append(f"{section}.{key}: expected a quantity such as 250m or 200Mi")
            elif not _number(value):
                problems.append(f"{section}.{key}: expected a number, got {value!r}")
    return problems


def _section(arguments: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    raw = arguments.get(name)
    return raw if isinstance(raw, Mapping) else {}


def _number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _quantity(value: int | str) -> bool:
    try:
        parse_quantity(value)
    except QuantityError:
        return False
    return True


def _within(low: float, high: float | None) -> Callable[[float], bool]:
    def valid(value: float) -> bool:
        return low <= value and (high is None or value <= high)

    return valid


def _or_default(value: Any, default: Any, valid: Callable[[float], bool], kind: type) -> Any:
    if value is None or not _number(value):
        return default
    number = float(value)
    return kind(number) if valid(number) else default


def _best_effort(value: Any, default: float, *, cpu: bool) -> float:
    """Volcano's parsing: an integer is milli-cores for cpu and MiB for memory, a string a quantity."""
    if value is None or isinstance(value, bool):
        return default
    if isinstance(value, int):
        return default if value < 0 else float(value if cpu else value * _MEBIBYTE)
    try:
        milli = parse_quantity(str(value))
    except QuantityError:
        return default
    return float(milli if cpu else milli / 1000)
