"""The binder's fast plan reader decodes every plan as the plans module's reader does: the same
PlanMessage, or the same PlanError naming every bad field."""

from __future__ import annotations

from functools import partial
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.work import calls

from contracts.objects import PodGroupCondition
from contracts.plans import (
    Bind,
    Eviction,
    PlanError,
    PlanMessage,
    PodGroupUpdate,
    Reservation,
    decode_plan,
    encode_plan,
)
from services.binder.plan_reader import read_plan

names = st.text(min_size=1, max_size=12)
counts = st.integers(min_value=0, max_value=2**40)
conditions = st.builds(
    PodGroupCondition,
    type=names,
    status=st.sampled_from(["True", "False"]),
    transition_id=st.text(max_size=8),
    last_transition_time=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    reason=st.text(max_size=8),
    message=st.text(max_size=20),
)
updates = st.builds(
    PodGroupUpdate,
    phase=names,
    conditions=st.lists(conditions, max_size=3).map(tuple),
    running=counts,
    succeeded=counts,
    failed=counts,
    allocated_hypernode=st.text(max_size=8),
)
plans = st.builds(
    PlanMessage,
    plan_id=names,
    replica=names,
    seq=counts,
    binds=st.lists(st.builds(Bind, names, names, names), max_size=4).map(tuple),
    evictions=st.lists(st.builds(Eviction, names, names, names, names), max_size=2).map(tuple),
    podgroups=st.dictionaries(names, updates, max_size=3),
    reservations=st.lists(st.builds(Reservation, names, names, names, st.text(max_size=8)), max_size=2).map(
        tuple
    ),
)


@given(plans)
def test_a_plan_reads_as_the_plans_module_reads_it(plan: PlanMessage) -> None:
    data = encode_plan(plan)
    try:
        expected: PlanMessage | str = decode_plan(data)
    except PlanError as exc:  # only an empty plan
        expected = str(exc)
    try:
        read: PlanMessage | str = read_plan(data)
    except PlanError as exc:
        read = str(exc)
    assert read == expected


def _valid() -> dict[str, Any]:
    return {
        "plan_id": "p1",
        "replica": "r1",
        "seq": 3,
        "binds": [{"pod": "default/a", "job": "default/g", "node": "n1"}],
        "podgroups": {"default/g": {"phase": "Inqueue", "conditions": [{"type": "Scheduled"}]}},
    }


def _with(**changes: Any) -> dict[str, Any]:
    return {**_valid(), **changes}


def _condition(**fields: Any) -> dict[str, Any]:
    return _with(
        podgroups={"default/g": {"phase": "Running", "conditions": [{"type": "Scheduled", **fields}]}}
    )


@pytest.mark.parametrize(
    "doc",
    [
        _valid(),
        _with(extra="ignored", binds=[{"pod": "default/a", "job": "default/g", "node": "n1", "more": 1}]),
        _condition(last_transition_time=12),  # an integer time, read as a float
        _condition(reason=None),  # the codec keeps a None: the fast reader hands this one over
        _condition(unknown="x"),
        _with(reservations=[{"pod": "default/a", "job": "default/g", "node": "n1"}]),
        # bad plans: the same PlanError, every bad field named
        {k: v for k, v in _valid().items() if k != "plan_id"},
        _with(replica=""),
        _with(seq=-1),
        _with(seq=True),
        _with(binds=[{"pod": "default/a"}, "x"]),
        _with(evictions=[{"pod": "default/b", "job": "default/h", "node": "n2"}]),
        _with(podgroups={"default/g": {"phase": "Inqueue", "running": -1}}),
        _with(podgroups={"default/g": {"phase": "Inqueue", "conditions": [{}]}}),
        _with(podgroups={"": {"phase": "Inqueue"}}),
        _with(binds=[], podgroups={}),
        ["not", "a", "map"],
    ],
)
def test_odd_and_bad_plans_read_as_the_plans_module_reads_them(doc: Any) -> None:
    data = msgpack.packb(doc)
    outcomes = []
    for reader in (decode_plan, read_plan):
        try:
            outcomes.append(reader(data))
        except PlanError as exc:
            outcomes.append(str(exc))
    assert outcomes[1] == outcomes[0]


def test_bytes_that_are_not_msgpack_are_refused_alike() -> None:
    with pytest.raises(PlanError, match="not a MessagePack document"):
        read_plan(b"\xc1")


def test_reading_a_plan_costs_no_python_call_per_field() -> None:
    """The fields are checked in C: each bind costs the fast reader at most the Bind it builds (two
    calls), where the plans module's reader checks each field in Python."""
    warm = encode_plan(PlanMessage("w", "r", 1, (Bind("ns/w", "ns/g", "n1"),)))
    for reader in (read_plan, decode_plan):  # whatever either builds on first use is not per bind
        reader(warm)
    work = []
    for size in (2, 8):
        data = encode_plan(
            PlanMessage("p", "r", 1, tuple(Bind(f"ns/p{i}", "ns/g", "n1") for i in range(size)))
        )
        work.append([calls(partial(reader, data))[1] for reader in (read_plan, decode_plan)])
    per_bind = [(more - fewer) / 6 for fewer, more in zip(*work, strict=True)]
    # at most the Bind's two (a cache warmed by another test in the same worker may save one)
    assert per_bind[0] <= 2 < per_bind[1], f"calls per bind (fast, field by field): {per_bind}"
