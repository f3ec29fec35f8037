"""Types shared by tests that wait for conditions (the fixtures live in each directory's conftest)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

# await eventually(check, what=..., timeout_s=...): poll check() (sync or async) until truthy
Eventually = Callable[..., Awaitable[Any]]
