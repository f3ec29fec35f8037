"""How long the supervisor waits before restarting a process that exited (pure)."""

from __future__ import annotations

FIRST_S = 0.5
MAX_S = 10.0
STABLE_S = 30.0  # a process that ran this long is restarted promptly again


def restart_delay(previous_s: float, ran_s: float) -> float:
    """The wait before the next restart: a process that keeps dying backs off (doubling up to MAX_S),
    one that ran a while (STABLE_S) is restarted after FIRST_S again. previous_s is 0 before the first
    restart."""
    if ran_s >= STABLE_S or previous_s <= 0:
        return FIRST_S
    return min(previous_s * 2, MAX_S)
