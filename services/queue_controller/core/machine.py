"""Volcano's queue state machine (pkg/controllers/queue/state): Open, Closing, Closed.

A queue closes only once no PodGroup uses it: CloseQueue on a queue that still has PodGroups makes it
Closing, and it becomes Closed when the last of them is deleted. OpenQueue opens it from any state.
Closing an already Closed queue keeps it Closed, whatever PodGroups it has.
"""

from __future__ import annotations

OPEN = "Open"
CLOSING = "Closing"
CLOSED = "Closed"

OPEN_QUEUE = "OpenQueue"
CLOSE_QUEUE = "CloseQueue"
ACTIONS = frozenset({OPEN_QUEUE, CLOSE_QUEUE})


def after_action(state: str, action: str, has_podgroups: bool) -> str:
    """The state after a bus.volcano.sh Command (OpenQueue or CloseQueue)."""
    if action == OPEN_QUEUE:
        return OPEN
    if state == CLOSED:
        return CLOSED
    return CLOSING if has_podgroups else CLOSED


def after_sync(state: str, has_podgroups: bool) -> str:
    """The state after the queue's PodGroups changed (Volcano's default SyncQueue action)."""
    if state == CLOSING and not has_podgroups:
        return CLOSED
    return state
