"""Room a preemption reserved (a pod's nominatedNodeName, committed by the binder with the evictions) is
held in every session and bound once free (actions/reservations.py). Volcano only tries a nominated node
first, so the room its evictions freed goes to whichever job allocate reaches first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, priority_class

from services.scheduler.core.framework.session import Session
from services.scheduler.core.snapshot import ClusterSnapshot

CLASSES = [priority_class("low", 10), priority_class("high", 100)]
CONF = conf("allocate", ["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder"])


@dataclass
class Case:
    name: str
    objects: list[Any]
    binds: dict[str, str] = field(default_factory=dict)
    pipelined: dict[str, str] = field(default_factory=dict)
    condition: tuple[str, str] | None = None  # the reserving job's Preempting condition: status, reason


CASES = [
    Case(
        "room that is free is bound for the pod it was reserved for, not for an earlier job",
        [
            node("n1", cpu=2),
            podgroup("early", priority_class="high"),
            pod("early-0", "early", cpu=2),
            podgroup("high", priority_class="high"),
            pod("high-0", "high", cpu=2, nominated="n1"),
        ],
        binds={"default/high-0": "n1"},
        condition=("False", "ReservationBound"),
    ),
    Case(
        "while its victim is stopping the room waits for the pod; nothing else is placed in it",
        [
            node("n1", cpu=3),
            podgroup("low", priority_class="low"),
            pod("low-0", "low", cpu=2, node_name="n1", deleting=True),
            podgroup("other", priority_class="high"),
            pod("other-0", "other", cpu=2),
            podgroup("high", priority_class="high"),
            pod("high-0", "high", cpu=2, nominated="n1"),
        ],
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "idle room beside the reservation stays free for others",
        [
            node("n1", cpu=3),
            podgroup("low", priority_class="low"),
            pod("low-0", "low", cpu=2, node_name="n1", deleting=True),
            podgroup("small", priority_class="low"),
            pod("small-0", "small", cpu=1),
            podgroup("high", priority_class="high"),
            pod("high-0", "high", cpu=2, nominated="n1"),
        ],
        binds={"default/small-0": "n1"},
        pipelined={"default/high-0": "n1"},
    ),
    Case(
        "room that cannot come any more is released and the pod placed afresh",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            podgroup("other", priority_class="low"),
            pod("other-0", "other", cpu=2, node_name="n1"),
            podgroup("high", priority_class="high"),
            pod("high-0", "high", cpu=2, nominated="n1"),
        ],
        binds={"default/high-0": "n2"},
        condition=("False", "ReservationReleased"),
    ),
    Case(
        "a gang binds only once all its reserved room is free",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            podgroup("low", priority_class="low"),
            pod("low-1", "low", cpu=2, node_name="n2", deleting=True),
            podgroup("high", priority_class="high", min_member=2),
            pod("high-0", "high", cpu=2, nominated="n1"),
            pod("high-1", "high", cpu=2, nominated="n2"),
        ],
        pipelined={"default/high-0": "n1", "default/high-1": "n2"},
    ),
    Case(
        "a job already at its minAvailable binds what is free and waits for the rest",
        [
            node("n1", cpu=2),
            node("n2", cpu=2),
            node("n3", cpu=2),
            podgroup("low", priority_class="low"),
            pod("low-1", "low", cpu=2, node_name="n2", deleting=True),
            podgroup("high", priority_class="high", min_member=1),
            pod("high-r", "high", cpu=2, node_name="n3"),
            pod("high-0", "high", cpu=2, nominated="n1"),
            pod("high-1", "high", cpu=2, nominated="n2"),
        ],
        binds={"default/high-0": "n1"},
        pipelined={"default/high-1": "n2"},
        condition=("False", "ReservationBound"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reserved_room(case: Case) -> None:
    session = Session(ClusterSnapshot.from_objects([*CLASSES, *case.objects]), CONF)
    result = session.run()
    assert result.binds == case.binds
    assert result.pipelined == case.pipelined
    conditions = {c.type: (c.status, c.reason) for c in result.podgroups["default/high"].conditions}
    assert conditions.get("Preempting") == case.condition


def test_another_replicas_reservation_holds_its_room_too() -> None:
    """The nominated pod's job is not this session's to place: its room is still charged to the node."""
    objects = [
        *CLASSES,
        node("n1", cpu=2),
        podgroup("mine", priority_class="high"),
        pod("mine-0", "mine", cpu=2),
        podgroup("theirs", priority_class="high"),
        pod("theirs-0", "theirs", cpu=2, nominated="n1"),
    ]
    snapshot = ClusterSnapshot.from_objects(objects)
    mine = Session(snapshot, CONF, owns=lambda key: key == "default/mine").run()
    assert mine.binds == {}
    unreserved = [replace_nomination(o) for o in objects]
    free = Session(ClusterSnapshot.from_objects(unreserved), CONF, owns=lambda key: key == "default/mine")
    assert free.run().binds == {"default/mine-0": "n1"}


def replace_nomination(obj: Any) -> Any:
    from dataclasses import replace

    status = getattr(obj, "status", None)
    if status is None or not getattr(status, "nominated_node_name", ""):
        return obj
    return replace(obj, status=replace(status, nominated_node_name=""))
