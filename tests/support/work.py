"""Counting work instead of timing it: how many Python function calls a piece of code makes. A count is
the same on a fast or a busy machine, so a test can say "this costs the same with 10 or 1000 unrelated
jobs in the state" without a timing threshold."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def calls(work: Callable[[], T]) -> tuple[T, int]:
    """work()'s result and the number of Python function calls it made (C functions not counted).

    The garbage collector is run before and held off during the work: a collection inside it would run
    the finalizers (`__del__`, weakref callbacks) of whatever earlier tests in the same worker left
    behind, and count their calls as the work's."""
    count = 0

    def profile(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = work()
    finally:
        sys.setprofile(previous)
        if was_enabled:
            gc.enable()
    return result, count
