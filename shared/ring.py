"""Which replica owns which key: rendezvous (highest-random-weight) hashing over the live members.

Every member scores every key with a hash of (member, key); the highest score owns the key. A key changes
owner only when its owner leaves (it goes to its second choice) or when a newcomer outscores the owner,
so a membership change moves about 1/n of the keys, all to or from the changed member, and never between
two members that stayed. Pure and deterministic: every replica computes the same owners from the same
membership, without coordinating.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any


class Ring:
    """An immutable set of members and the key → owner mapping it implies."""

    __slots__ = ("_members", "_seeds")

    def __init__(self, members: Iterable[str]) -> None:
        self._members: tuple[str, ...] = tuple(sorted(set(members)))
        # Hashing the member's part once and copying the state per key halves the per-key hashing cost.
        self._seeds: tuple[Any, ...] = tuple(
            hashlib.blake2b(member.encode() + b"\0", digest_size=8) for member in self._members
        )

    @property
    def members(self) -> tuple[str, ...]:
        return self._members

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, member: object) -> bool:
        return member in self._members

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ring) and other._members == self._members

    def __hash__(self) -> int:
        return hash(self._members)

    def __repr__(self) -> str:
        return f"Ring({list(self._members)!r})"

    def _scores(self, key: str) -> Iterator[tuple[int, str]]:
        raw = key.encode()
        for seed, member in zip(self._seeds, self._members, strict=True):
            h = seed.copy()
            h.update(raw)
            yield int.from_bytes(h.digest(), "big"), member

    def owner(self, key: str) -> str:
        """The member that owns key; LookupError if the ring is empty."""
        if not self._members:
            raise LookupError("no live members: nobody owns anything")
        return max(self._scores(key))[1]

    def owners(self, key: str, n: int) -> tuple[str, ...]:
        """The first n members in key's preference order (the owner first, then who would take over)."""
        return tuple(member for _, member in sorted(self._scores(key), reverse=True)[:n])

    def owns(self, member: str, key: str) -> bool:
        return bool(self._members) and self.owner(key) == member

    def assign(self, keys: Iterable[str]) -> dict[str, list[str]]:
        """Every member's keys (members owning nothing map to [])."""
        shares: dict[str, list[str]] = {member: [] for member in self._members}
        for key in keys:
            shares[self.owner(key)].append(key)
        return shares

    def with_member(self, member: str) -> Ring:
        return Ring((*self._members, member))

    def without_member(self, member: str) -> Ring:
        return Ring(m for m in self._members if m != member)
