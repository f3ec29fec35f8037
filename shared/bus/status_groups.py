"""Where the status changes of one publish operation travel together (status bundles,
contracts/bundles.py), without changing the order of any job's events.

A status group gathers the changes of one bundle type in one namespace and is sent as one message at
one place among the operation's messages: where its first change was (the later ones moved earlier) or
where its last one is (the earlier ones moved later). A change is moved only past other jobs' outputs,
so each job's events keep their order:

- placed first: a change joins only if nothing about its job came since the group's first change (the
  job-controller's new jobs: each job's Pending status, then its PodGroup and pods);
- placed last: a change joins only if nothing about the job of any change in the group came since that
  change (the binder's commit of several plans: each plan's binds, then its PodGroup's status).

A group with one change may become either when the second comes; one that can be neither is left as it
is and a new one is opened.
"""

from __future__ import annotations

from shared.runner_types import Output

# a group's place among the slots: undecided (one change), at its first change, at its last
_UNDECIDED, _FIRST, _LAST = 0, 1, 2


class _Group:
    __slots__ = ("jobs", "members", "mode", "movable", "size", "slot")

    def __init__(self, slot: int, first: Output, size: int) -> None:
        self.slot = slot  # where it sits among the slots now (a group placed last moves)
        self.members = [first]
        self.jobs = {first.correlation_id}
        self.size = size
        self.mode = _UNDECIDED
        self.movable = True  # may still move to a later slot: nothing about its jobs came since


class StatusGroups:
    """The open status groups of one publish operation, and where each job's outputs sit."""

    def __init__(self, most_events: int, most_bytes: int) -> None:
        self.most_events = most_events
        self.most_bytes = most_bytes
        self._open: dict[tuple[str, str | None], _Group] = {}
        # job -> the latest slot of its outputs that stay where they are, and the groups holding its
        # changes (wherever those are now)
        self._fixed: dict[str, int] = {}
        self._groups: dict[str, set[_Group]] = {}

    def saw(self, output: Output, slot: int) -> None:
        """An output that is not a status change in a group, sent in the message at `slot` (alone, or in
        a pod bundle opened earlier)."""
        job = output.correlation_id
        if slot > self._fixed.get(job, -1):
            self._fixed[job] = slot
        for group in self._groups.get(job, ()):
            group.movable = False

    def place(
        self, slots: list[list[Output] | None], key: tuple[str, str | None], output: Output, size: int
    ) -> None:
        """Put the status change in its key's open group if its job's order allows, else in a new one;
        the group's list is (or moves to) the right slot."""
        job = output.correlation_id
        group = self._open.get(key)
        mode = self._fitting_mode(group, job, size) if group is not None else None
        if group is None or mode is None:
            group = self._open[key] = _Group(len(slots), output, size)
            slots.append(group.members)
        else:
            group.members.append(output)
            group.jobs.add(job)
            group.size += size
            group.mode = mode
            if mode == _LAST:
                slots[group.slot] = None
                group.slot = len(slots)
                slots.append(group.members)
        mine = self._groups.setdefault(job, set())
        for other in mine:
            if other is not group:
                other.movable = False  # moved later, its change of this job would pass this one
        mine.add(group)

    def _fitting_mode(self, group: _Group, job: str, size: int) -> int | None:
        if len(group.members) >= self.most_events or group.size + size > self.most_bytes:
            return None
        if group.mode != _LAST and self._latest_slot(job, group) < group.slot:
            return _FIRST  # nothing about this job sits after the group's slot: moved there, it passes none
        if group.mode != _FIRST and group.movable:
            return _LAST
        return None

    def _latest_slot(self, job: str, besides: _Group) -> int:
        """The latest slot holding an output about the job, its changes in `besides` left out."""
        latest = self._fixed.get(job, -1)
        for group in self._groups.get(job, ()):
            if group is not besides and group.slot > latest:
                latest = group.slot
        return latest
