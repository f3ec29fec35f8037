"""What `lahar events` shows of a preemption: the room reserved (PodNominated), the evictions' reasons,
and the preemptor PodGroup's Preempting / Reclaiming condition when it is the news."""

from __future__ import annotations

from typing import Any

import pytest

from services.cli.event_rows import event_row
from shared.client_reads import HistoryEntry

NOW = 1_700_000_600.0


def event(seq: int, type: str, kind: str, name: str, payload: dict[str, Any]) -> HistoryEntry:
    return HistoryEntry(seq, NOW - 60 + seq, type, kind, "default", name, "binder", f"id{seq}", "", payload)


def condition(type: str, status: str, reason: str, message: str, at: float) -> dict[str, Any]:
    return {"type": type, "status": status, "reason": reason, "message": message, "last_transition_time": at}


UNSCHEDULABLE = condition(
    "Unschedulable", "True", "NotEnoughResources", "1/1 tasks in gang unschedulable", 5.0
)
NO_ROOM = condition(
    "Preempting", "False", "WouldNotMakeRoom", "preempt would not make room, nothing evicted: ...", 5.0
)
RESERVED = condition(
    "Preempting", "True", "RoomReserved", "preempt: evicting 1 pod(s) (default/low-0) ...", 5.0
)
SCHEDULED = condition("Scheduled", "True", "", "", 9.0)


@pytest.mark.parametrize(
    ("entry", "cells"),
    [
        (
            event(
                1,
                "PodNominated",
                "pod",
                "high-0",
                {"node": "n1", "reason": "preempt: evicting default/low-0 on n1"},
            ),
            ("Normal", "Nominated", "room reserved on n1: preempt: evicting default/low-0 on n1"),
        ),
        (
            event(2, "PodEvicting", "pod", "low-0", {"node": "n1", "reason": "preempt: for default/high-0"}),
            ("Warning", "Evicting", "evicting from n1: preempt: for default/high-0"),
        ),
        (
            event(
                3,
                "PodGroupStatusChanged",
                "podgroup",
                "high",
                {"phase": "Inqueue", "conditions": [UNSCHEDULABLE, NO_ROOM]},
            ),
            ("Warning", "Preempting", "preempt would not make room, nothing evicted: ..."),
        ),
        (
            event(
                4, "PodGroupStatusChanged", "podgroup", "high", {"phase": "Inqueue", "conditions": [RESERVED]}
            ),
            ("Normal", "Preempting", "preempt: evicting 1 pod(s) (default/low-0) ..."),
        ),
        (
            # a later change (the gang scheduled) is the news, not the older preemption
            event(
                5,
                "PodGroupStatusChanged",
                "podgroup",
                "high",
                {"phase": "Running", "conditions": [RESERVED, SCHEDULED]},
            ),
            ("Normal", "PodGroupStatusChanged", "podgroup Running"),
        ),
    ],
    ids=["nominated", "evicting", "no-room", "room-reserved", "older-decision"],
)
def test_preemption_rows(entry: HistoryEntry, cells: tuple[str, str, str]) -> None:
    row = event_row(entry, NOW, about=entry.object)
    assert (row.type, row.reason, row.message) == cells
