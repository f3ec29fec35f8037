"""Why a queue gate or the cluster refused a job, as values the session keeps for the PodGroup's
Unschedulable condition (framework/pending.py turns them into a Verdict).

A refusal is QUOTA when a limit of the job's queue stops it that more nodes would not lift (a capability,
a closed queue, a share capped by the capability), CAPACITY when the cluster is too small for it right now
(its free room, or a share that grows with the cluster), BEHIND_HEAD when its fifo queue waits for a job
ahead of it. A CAPACITY refusal says how much more the cluster would need where the refusing rule knows
it (`missing`, milli-units per dimension).
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.resources import EMPTY, Resources

QUOTA = "quota"
CAPACITY = "capacity"
BEHIND_HEAD = "behind-head"

# what a node failure is about (NodeFailure.kind): a placement constraint, the node's free room, or room
# held for a starving job
CONSTRAINT = "constraint"
HELD = "held"


@dataclass(frozen=True, slots=True)
class Refusal:
    text: str  # as the condition's message names it, e.g. "queue q1 over capability cpu"
    kind: str = QUOTA
    missing: Resources = EMPTY
    # a CAPACITY refusal by a fair share of the cluster: the share, not room, stops the job when the
    # cluster is left with room for it at session close (then it is a quota wait)
    share: bool = False

    def outranks(self, other: Refusal | None) -> bool:
        """A quota refusal explains a wait better than a capacity one (more nodes would not end it); of two
        of a kind, the first recorded stands."""
        return other is None or (self.kind == QUOTA and other.kind != QUOTA)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why an owned PodGroup waits, as its Unschedulable condition says: the reason (contracts/pending.py),
    what the message adds to the per-reason node counts, and, for a cluster short of room, how much
    more it would need (milli-units per dimension)."""

    reason: str
    detail: str = ""
    missing: Resources = EMPTY
