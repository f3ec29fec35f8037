"""The queue-scoped overcommit annotation at admission (Volcano 1.16's queue webhook rules): a finite
decimal >= 1 on a queue that deserves a positive quantity of some resource; every refusal names the
annotation's field path."""

from __future__ import annotations

from typing import Any

import pytest
from admission_manifests import assert_problems, context, problems, queue_doc

from contracts.queue_overcommit import OVERCOMMIT_FACTOR, parse_overcommit_factor

AT = f"metadata.annotations[{OVERCOMMIT_FACTOR}]"


def annotated(factor: str, **spec: Any) -> dict[str, Any]:
    return queue_doc("batch", annotations={OVERCOMMIT_FACTOR: factor}, **spec)


# (id, manifest, [(path, fragment)]): [] when admitted
CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("one", annotated("1", deserved={"cpu": 4}), []),
    ("decimal", annotated("1.5", deserved={"cpu": 4, "memory": "8Gi"}), []),
    ("spaces-around", annotated(" 2.0 ", deserved={"nvidia.com/gpu": 2}), []),
    ("below-one", annotated("0.8", deserved={"cpu": 4}), [(AT, "must be >= 1")]),
    ("zero", annotated("0", deserved={"cpu": 4}), [(AT, "must be >= 1")]),
    ("negative", annotated("-1.5", deserved={"cpu": 4}), [(AT, "expected a decimal number >= 1")]),
    ("not-a-number", annotated("lots", deserved={"cpu": 4}), [(AT, "expected a decimal number >= 1")]),
    ("infinite", annotated("inf", deserved={"cpu": 4}), [(AT, "expected a decimal number >= 1")]),
    ("nan", annotated("NaN", deserved={"cpu": 4}), [(AT, "expected a decimal number >= 1")]),
    ("exponent", annotated("1e3", deserved={"cpu": 4}), [(AT, "expected a decimal number >= 1")]),
    ("empty", annotated("", deserved={"cpu": 4}), [(AT, "expected a decimal number >= 1")]),
    ("no-deserved", annotated("1.5"), [(AT, "needs spec.deserved with a positive quantity")]),
    ("zero-deserved", annotated("1.5", deserved={"cpu": 0}), [(AT, "needs spec.deserved")]),
    (
        "guarantee-is-not-deserved",
        annotated("1.5", deserved={"cpu": 0}, guarantee={"resource": {"cpu": 0}}),
        [(AT, "needs spec.deserved")],
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_overcommit_annotation(doc: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert_problems(problems(doc, context()), expected)


def test_every_problem_is_named() -> None:
    found = problems(annotated("0.5"), context())
    assert [p for p, _ in found] == [AT, AT]
    assert "must be >= 1" in found[0][1] and "needs spec.deserved" in found[1][1]


def test_a_queue_without_the_annotation_is_not_asked_for_deserved() -> None:
    assert problems(queue_doc("plain"), context()) == []


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [({}, None), ({OVERCOMMIT_FACTOR: "1.25"}, 1.25), ({OVERCOMMIT_FACTOR: "3"}, 3.0)],
)
def test_the_scheduler_reads_the_factor(annotations: dict[str, str], expected: float | None) -> None:
    assert parse_overcommit_factor(annotations) == expected


def test_the_scheduler_reads_an_invalid_factor_as_its_problem() -> None:
    found = parse_overcommit_factor({OVERCOMMIT_FACTOR: "0.5"})
    assert isinstance(found, str) and "must be >= 1" in found
