"""Which outputs of one publish operation travel together as bundles (contracts/bundles.py), and where,
without changing the order of any job's or any object's events.

A group gathers the events of one bundle type in one namespace and is sent as one message at one place
among the operation's messages: where its first event was (the later ones moved earlier) or, for an
object bundle (the Jobs' and PodGroups' events), where its last one is (the earlier ones moved later).
An event is moved only past outputs about other jobs and other objects:

- placed first: an event joins only if nothing about its job or its object sits after the group (the
  job-controller's new jobs: each job's Pending status, then its PodGroup, then its pods; a node agent's
  reports of pods of many jobs);
- placed last: an event joins only if nothing about the job or the object of any event in the group
  came since that event (the binder's commit of several plans: each plan's binds, then its PodGroup's
  status).

An object group with one event may become either when the second comes; a group that can take the
event neither way is left as it is and a new one is opened.
"""

from __future__ import annotations

from collections.abc import Hashable

from shared.runner_types import Output

# a group's place among the slots: undecided (one event), at its first event, at its last
_UNDECIDED, _FIRST, _LAST = 0, 1, 2


def _order_keys(output: Output) -> tuple[Hashable, Hashable]:
    """What an output's order is kept with: its job's other outputs and its object's."""
    return output.correlation_id, (output.kind, output.namespace, output.name)


class _Group:
    __slots__ = ("keys", "members", "mode", "movable", "size", "slot")

    def __init__(self, slot: int, first: Output, size: int, mode: int) -> None:
        self.slot = slot  # where it sits among the slots now (a group placed last moves)
        self.members = [first]
        self.keys = set(_order_keys(first))
        self.size = size
        self.mode = mode
        self.movable = mode != _FIRST  # may still move later: nothing about its jobs or objects came since


class BundleGroups:
    """The open groups of one publish operation, and where each job's and object's outputs sit."""

    def __init__(self, most_events: int, most_bytes: int) -> None:
        self.most_events = most_events
        self.most_bytes = most_bytes
        self._open: dict[Hashable, _Group] = {}
        # order key -> the latest slot of its outputs that stay where they are, and the groups holding
        # its events (wherever those are now)
        self._fixed: dict[Hashable, int] = {}
        self._groups: dict[Hashable, set[_Group]] = {}

    def saw(self, output: Output, slot: int) -> None:
        """An output sent in no group of this operation's, in the message at `slot` (alone, or in a
        bundle sent again as it was)."""
        for key in _order_keys(output):
            if slot > self._fixed.get(key, -1):
                self._fixed[key] = slot
            for group in self._groups.get(key, ()):
                group.movable = False

    def place(
        self,
        slots: list[list[Output] | None],
        key: Hashable,
        output: Output,
        size: int,
        *,
        may_move_last: bool,
    ) -> None:
        """Put the event in its key's open group if every order allows, else in a new one; the group's
        list is (or moves to) the right slot. may_move_last: the group may be placed at its last event."""
        group = self._open.get(key)
        mode = self._fitting_mode(group, output, size) if group is not None else None
        if group is None or mode is None:
            group = _Group(len(slots), output, size, _UNDECIDED if may_move_last else _FIRST)
            self._open[key] = group
            slots.append(group.members)
        else:
            group.members.append(output)
            group.keys.update(_order_keys(output))
            group.size += size
            group.mode = mode
            if mode == _LAST:
                slots[group.slot] = None
                group.slot = len(slots)
                slots.append(group.members)
        for order_key in _order_keys(output):
            mine = self._groups.setdefault(order_key, set())
            for other in mine:
                if other is not group:
                    other.movable = False  # moved later, its event would pass this one
            mine.add(group)

    def _fitting_mode(self, group: _Group, output: Output, size: int) -> int | None:
        if len(group.members) >= self.most_events or group.size + size > self.most_bytes:
            return None
        if group.mode != _LAST and all(self._latest_slot(k, group) < group.slot for k in _order_keys(output)):
            return _FIRST  # nothing about its job or object sits after the group: moved there, passes none
        if group.mode != _FIRST and group.movable:
            return _LAST
        return None

    def _latest_slot(self, key: Hashable, besides: _Group) -> int:
        """The latest slot holding an output with this order key, the events in `besides` left out."""
        latest = self._fixed.get(key, -1)
        for group in self._groups.get(key, ()):
            if group is not besides and group.slot > latest:
                latest = group.slot
        return latest
