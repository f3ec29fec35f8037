"""Which of its PodGroups a replica's next session acts for (pure).

A session decides something for an owned PodGroup only if the PodGroup has work waiting (pods waiting
for a node: place them, or preempt and reclaim for them; or the PodGroup waiting in the Pending phase to
be enqueued), or if its pods changed since the replica's last session (the phase and conditions a
session writes follow its pods), or if it is new to the replica (new work, a plan rejected or expired).
Every other owned PodGroup would get the status it already has: the session models it like another
replica's (counted on its job, for queue shares and node use), so that opening a session costs tasks for
the PodGroups it acts for only. With nothing to act for, no session is opened at all.

After the ring changed, the replica may have taken over PodGroups whose history it never answered: the
session then acts for all it owns.
"""

from __future__ import annotations

from collections.abc import Container, Iterable


def session_focus(
    owned: Container[str],
    *,
    ring_changed: bool,
    new_work: Iterable[str],
    touched: Iterable[str],
    waiting: Iterable[str],
) -> set[str] | None:
    """The owned PodGroup keys the session acts for; None: every owned one (the ring changed). An empty
    set: no session is needed. `new_work` and `touched` are owned keys already, `waiting` the view's."""
    if ring_changed:
        return None
    return {*new_work, *touched, *(key for key in waiting if key in owned)}
