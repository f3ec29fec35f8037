"""One node's resource scores in plain Python, for the few rows a kept score recomputes after a placement
(kept_scores.py): numpy's fixed cost per call is most of what scoring one row with the vectorised scorers
(nodeorder.py) takes.

Each function repeats its vectorised twin step for step, in the same order and the same types (integer
floor division on integers; IEEE double division, subtraction, product and square root, each correctly
rounded in Python as in numpy), so a row scores exactly as the vectorised scorer scores it;
tests/unit/scheduler/plugins/test_node_scores.py compares the two over random nodes and pods.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_SCORE = 100  # Kubernetes' MaxNodeScore: nodeorder's scorers share it from here


def mean_one(per_resource: Sequence[int], valid: Sequence[bool] | None) -> int:
    """nodeorder._mean for one node (cpu and memory)."""
    if valid is None:
        return (per_resource[0] + per_resource[1]) // 2
    counted = [value if ok else 0 for value, ok in zip(per_resource, valid, strict=True)]
    return (counted[0] + counted[1]) // max(int(valid[0]) + int(valid[1]), 1)


def least_allocated_one(held: Sequence[int], allocatable: Sequence[int], valid: Sequence[bool] | None) -> int:
    divisors = allocatable if valid is None else [max(a, 1) for a in allocatable]
    per = [max(a - h, 0) * MAX_SCORE // d for h, a, d in zip(held, allocatable, divisors, strict=True)]
    return mean_one(per, valid)


def most_allocated_one(held: Sequence[int], allocatable: Sequence[int], valid: Sequence[bool] | None) -> int:
    divisors = allocatable if valid is None else [max(a, 1) for a in allocatable]
    per = [min(h, a) * MAX_SCORE // d for h, a, d in zip(held, allocatable, divisors, strict=True)]
    return mean_one(per, valid)


def balanced_allocation_one(fractions: Sequence[float], valid: Sequence[bool] | None) -> float:
    """nodeorder.balanced_allocation for one node."""
    if valid is None:
        if len(fractions) == 2:
            std = abs(fractions[0] - fractions[1]) / 2
        else:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
        return float(math.trunc((1 - std) * MAX_SCORE))
    count = sum(int(ok) for ok in valid)
    high = max(f if ok else -math.inf for f, ok in zip(fractions, valid, strict=True))
    low = min(f if ok else math.inf for f, ok in zip(fractions, valid, strict=True))
    std = (high - low) / 2 if count == 2 else 0.0
    if count > 2:
        n = max(count, 1)
        pairs = list(zip(fractions, valid, strict=True))
        mean = sum(f if ok else 0.0 for f, ok in pairs) / n
        spread = sum((f - mean) * (f - mean) if ok else 0.0 for f, ok in pairs) / n
        std = math.sqrt(spread)
    return float(math.trunc((1 - std) * MAX_SCORE))
