"""A replica's owned keys: the ring's answers, remembered while the ring stays and only for the keys the
last session asked about."""

from __future__ import annotations

from collections import Counter

import pytest

from services.scheduler.ownership import Owned
from shared.ring import Ring

RING = Ring(["r1", "r2", "r3"])
KEYS = [f"ns/job-{i}" for i in range(30)]


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counted: Counter[str] = Counter()
    owns = Ring.owns

    def counting(self: Ring, member: str, key: str) -> bool:
        counted[key] += 1
        return owns(self, member, key)

    monkeypatch.setattr(Ring, "owns", counting)
    return counted


def test_answers_are_the_rings_and_each_key_is_hashed_once_per_ring(hashed: Counter[str]) -> None:
    owned = Owned(RING, "r2")
    assert [key in owned for key in KEYS] == [RING.owner(key) == "r2" for key in KEYS]
    owned.next_session()
    assert sum(owned.owns(key) for key in KEYS) == sum(RING.owner(key) == "r2" for key in KEYS)
    assert set(hashed.values()) == {1}


def test_keys_no_session_asked_about_are_forgotten(hashed: Counter[str]) -> None:
    owned = Owned(RING, "r1")
    mine = RING.owner("ns/finished") == "r1"
    assert ("ns/finished" in owned) == mine
    owned.next_session()
    assert ("ns/finished" in owned) == mine  # remembered from the session before
    assert hashed["ns/finished"] == 1
    owned.next_session()
    owned.next_session()  # two sessions that did not ask about it
    assert ("ns/finished" in owned) == mine
    assert hashed["ns/finished"] == 2
