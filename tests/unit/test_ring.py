from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.ring import Ring

KEYS = [f"default/job-{i}" for i in range(20_000)]
members = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8, unique=True)
keys = st.lists(st.text(max_size=20), min_size=1, max_size=50)


def test_balance_within_ten_percent_of_fair_share() -> None:
    ring = Ring([f"scheduler-{i}" for i in range(5)])
    shares = ring.assign(KEYS)
    fair = len(KEYS) / 5
    for member, owned in shares.items():
        assert abs(len(owned) - fair) < 0.1 * fair, (member, len(owned))


def test_join_moves_about_one_share_and_only_to_the_newcomer() -> None:
    before = Ring([f"scheduler-{i}" for i in range(4)])
    after = before.with_member("scheduler-4")
    moved = [k for k in KEYS if before.owner(k) != after.owner(k)]
    assert all(after.owner(k) == "scheduler-4" for k in moved)
    assert abs(len(moved) - len(KEYS) / 5) < 0.1 * len(KEYS) / 5


def test_leave_moves_only_the_leavers_keys() -> None:
    before = Ring([f"scheduler-{i}" for i in range(5)])
    after = before.without_member("scheduler-2")
    moved = [k for k in KEYS if before.owner(k) != after.owner(k)]
    assert moved == before.assign(KEYS)["scheduler-2"]


def test_same_membership_same_owners_regardless_of_order() -> None:
    a = Ring(["x", "y", "z"])
    b = Ring(["z", "x", "y", "x"])
    assert a == b
    assert [a.owner(k) for k in KEYS[:500]] == [b.owner(k) for k in KEYS[:500]]


def test_empty_ring_owns_nothing() -> None:
    ring = Ring([])
    with pytest.raises(LookupError):
        ring.owner("k")
    assert not ring.owns("x", "k")
    assert ring.owners("k", 3) == ()
    assert ring.assign([]) == {}


def test_owners_is_the_takeover_order() -> None:
    ring = Ring(["a", "b", "c", "d"])
    for key in KEYS[:200]:
        first, second, *_ = ring.owners(key, 4)
        assert first == ring.owner(key)
        assert ring.without_member(first).owner(key) == second


@settings(max_examples=200, deadline=None)
@given(members=members, newcomer=st.text(min_size=1, max_size=12), keys=keys)
def test_join_never_moves_keys_between_existing_members(
    members: list[str], newcomer: str, keys: list[str]
) -> None:
    before = Ring(members)
    after = before.with_member(newcomer)
    for key in keys:
        assert after.owner(key) in (before.owner(key), newcomer)


@settings(max_examples=200, deadline=None)
@given(members=members, keys=keys, data=st.data())
def test_leave_only_reassigns_the_leavers_keys(
    members: list[str], keys: list[str], data: st.DataObject
) -> None:
    leaver = data.draw(st.sampled_from(members))
    before = Ring(members)
    after = before.without_member(leaver)
    for key in keys:
        if before.owner(key) != leaver:
            assert after.owner(key) == before.owner(key)
        elif len(after):
            assert after.owner(key) == before.owners(key, 2)[1]
