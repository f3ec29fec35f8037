"""Queue validation: state, quantities, guarantee <= deserved <= capability, hierarchy annotations,
hierarchical parents and their resources, root protection, and deletion."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from admission_manifests import DOC, assert_problems, context, parse, problems, queue_doc

from contracts.objects import Queue, QueueStatus
from contracts.resources import Resources
from services.admission.core.queue_hierarchy import validate_queue_delete

HIERARCHY = "volcano.sh/hierarchy"
WEIGHTS = "volcano.sh/hierarchy-weights"
HIERARCHY_AT = f"metadata.annotations[{HIERARCHY}]"
WEIGHTS_AT = f"metadata.annotations[{WEIGHTS}]"


def hdrf(name: str, path: str, weights: str) -> dict[str, Any]:
    return queue_doc(name, annotations={HIERARCHY: path, WEIGHTS: weights})


# (id, queue manifest, other queues in the cluster, [(path, fragment)])
CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[tuple[str, str]]]] = [
    ("state-closing", queue_doc("q", status={"state": "Closing"}), [], [("status.state", "Open, Closed")]),
    (
        "guarantee-without-deserved",
        queue_doc("q", guarantee={"resource": {"cpu": 2}}),
        [],
        [("spec.deserved.cpu", "deserved[cpu] must be given and >= guarantee[cpu]=2")],
    ),
    (
        "guarantee-above-deserved",
        queue_doc("q", deserved={"cpu": 1}, guarantee={"resource": {"cpu": 2}}),
        [],
        [("spec.deserved.cpu", "deserved[cpu]=1 must be >= guarantee[cpu]=2")],
    ),
    (
        "deserved-above-capability",
        queue_doc("q", capability={"memory": "4Gi"}, deserved={"memory": "8Gi"}),
        [],
        [("spec.deserved.memory", "deserved[memory]=8Gi must be <= capability[memory]=4Gi")],
    ),
    (
        "hierarchy-without-weights",
        queue_doc("q", annotations={HIERARCHY: "root/a"}),
        [],
        [(WEIGHTS_AT, "must be given together")],
    ),
    (
        "hierarchy-weights-count-mismatch",
        hdrf("q", "root/eng/prod", "1/2"),
        [],
        [(WEIGHTS_AT, "has 3 segments but volcano.sh/hierarchy-weights '1/2' has 2")],
    ),
    ("hierarchy-weight-not-a-number", hdrf("q", "eng", "x"), [], [(WEIGHTS_AT, "weight 'x'")]),
    ("hierarchy-weight-zero", hdrf("q", "eng/prod", "2/0"), [], [(WEIGHTS_AT, "weight '0'")]),
    (
        "hierarchy-prefix-of-another-queue",
        hdrf("sci", "sci", "8"),
        [hdrf("sci-dev", "sci/dev", "8/2")],
        [(HIERARCHY_AT, "'root/sci' and 'root/sci/dev' of queue 'sci-dev'")],
    ),
    (
        "hierarchy-below-another-queue",
        hdrf("sci-dev", "sci/dev", "8/2"),
        [hdrf("sci", "sci", "8")],
        [(HIERARCHY_AT, "must not be a prefix of another queue's path")],
    ),
    ("parent-itself", queue_doc("q", parent="q"), [], [("spec.parent", "cannot use itself as parent")]),
    (
        "parent-missing",
        queue_doc("q", parent="eng"),
        [],
        [("spec.parent", "parent queue 'eng' does not exist")],
    ),
    (
        "ancestor-missing",
        queue_doc("q", parent="eng"),
        [queue_doc("eng", parent="org")],
        [("spec.parent", "ancestor queue (of parent 'eng') 'org' does not exist")],
    ),
    (
        "too-deep",
        queue_doc("q6", parent="q5"),
        [queue_doc("q1")] + [queue_doc(f"q{i}", parent=f"q{i - 1}") for i in range(2, 6)],
        [("spec.parent", "exceeds the maximum queue depth of 5")],
    ),
    (
        "capability-above-ancestor",
        queue_doc("leaf", parent="mid", capability={"cpu": 8}),
        [
            queue_doc("top", capability={"cpu": 4}),
            queue_doc("mid", parent="top", capability={"memory": "1Gi"}),
        ],
        [("spec.capability.cpu", "capability[cpu]=8 exceeds its ancestor's capability 4")],
    ),
    (
        "siblings-guarantee-above-parent",
        queue_doc("b", parent="eng", deserved={"cpu": 2}, guarantee={"resource": {"cpu": 2}}),
        [
            queue_doc("eng", deserved={"cpu": 4}, guarantee={"resource": {"cpu": 3}}),
            queue_doc("a", parent="eng", deserved={"cpu": 2}, guarantee={"resource": {"cpu": 2}}),
        ],
        [
            (
                "spec.guarantee.resource.cpu",
                "children of queue 'eng' together get guarantee[cpu]=4, more than its own 3",
            )
        ],
    ),
    (
        "siblings-deserved-above-parent",
        queue_doc("b", parent="eng", deserved={"cpu": 3}),
        [queue_doc("eng", deserved={"cpu": 4}), queue_doc("a", parent="eng", deserved={"cpu": 2})],
        [("spec.deserved.cpu", "together get deserved[cpu]=5, more than its own 4")],
    ),
    (
        "child-deserved-without-parent-deserved",
        queue_doc("a", parent="eng", deserved={"cpu": 1}),
        [queue_doc("eng")],
        [("spec.deserved.cpu", "more than its own 0")],
    ),
    (
        "capability-below-descendants",
        queue_doc("eng", capability={"cpu": 4}),
        [queue_doc("mid", parent="eng"), queue_doc("leaf", parent="mid", capability={"cpu": 6})],
        [("spec.capability.cpu", "smaller than its descendants' largest capability 6")],
    ),
    (
        "children-guarantee-above-own",
        queue_doc("eng", deserved={"cpu": 8}, guarantee={"resource": {"cpu": 1}}),
        [queue_doc("a", parent="eng", deserved={"cpu": 2}, guarantee={"resource": {"cpu": 2}})],
        [
            (
                "spec.guarantee.resource.cpu",
                "children of queue 'eng' together get guarantee[cpu]=2, more than its own 1",
            )
        ],
    ),
]


@pytest.mark.parametrize(("doc", "others", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_queue_rule(
    doc: dict[str, Any], others: list[dict[str, Any]], expected: list[tuple[str, str]]
) -> None:
    assert_problems(problems(doc, context(*others)), expected)


def _queue(**changes: Any) -> Queue:
    queue = parse(queue_doc("q"))
    assert isinstance(queue, Queue)
    return replace(queue, **changes)


@pytest.mark.parametrize(
    ("queue", "path", "fragment"),
    [
        (_queue(capability=Resources({"cpu": -1000})), "spec.capability.cpu", "non-negative"),
        (
            _queue(guarantee=Resources({"nvidia.com/gpu": -1}), deserved=Resources()),
            "spec.guarantee.resource[nvidia.com/gpu]",
            "non-negative",
        ),
        (_queue(weight=70000), "spec.weight", "from 1 to 65535"),
        (_queue(priority=-1), "spec.priority", ">= 0"),
    ],
    ids=["negative-capability", "negative-guarantee", "weight-too-large", "negative-priority"],
)
def test_queue_rule_on_objects(queue: Queue, path: str, fragment: str) -> None:
    found = problems(queue)
    assert any(p == path and fragment in m for p, m in found), found


def test_valid_queues_pass() -> None:
    ctx = context(
        queue_doc("eng", capability={"cpu": 8}, deserved={"cpu": 6}, guarantee={"resource": {"cpu": 2}}),
        hdrf("sci", "sci", "8"),
    )
    assert problems(queue_doc("plain"), ctx) == []
    # a resource the capability does not name is unlimited
    assert problems(queue_doc("gpu", capability={"cpu": 2}, deserved={"nvidia.com/gpu": 4}), ctx) == []
    assert problems(queue_doc("child", parent="eng", capability={"cpu": 8}, deserved={"cpu": 6}), ctx) == []
    # whole path segments are compared: root/sci is no prefix of root/scidev
    assert problems(hdrf("scidev", "scidev", "2"), ctx) == []


def test_a_used_leaf_cannot_become_a_parent() -> None:
    ctx = context(queue_doc("eng"), queue_pods={"eng": 3})
    assert_problems(
        problems(queue_doc("child", parent="eng"), ctx),
        [
            (
                "spec.parent",
                "queue 'eng' cannot become the parent of queue 'child' because it has 3 allocated pods",
            )
        ],
    )
    # once it has children it is a parent already, and its pods are its children's
    ctx = context(queue_doc("eng"), queue_doc("first", parent="eng"), queue_pods={"eng": 3})
    assert problems(queue_doc("child", parent="eng"), ctx) == []


def test_queue_update_rechecks_hierarchy_only_when_parent_or_resources_change() -> None:
    ctx = context(queue_doc("eng", deserved={"cpu": 1}), queue_doc("a", parent="eng", deserved={"cpu": 4}))
    old = ctx.queues["a"]
    # the tree is already inconsistent; changing only the weight does not block the update
    assert problems(queue_doc("a", parent="eng", weight=3, deserved={"cpu": 4}), ctx, old=old) == []
    found = problems(queue_doc("a", parent="eng", deserved={"cpu": 5}), ctx, old=old)
    assert [p for p, _ in found] == ["spec.deserved.cpu"]


def test_root_queue_resources_are_immutable() -> None:
    ctx = context()
    root = ctx.queues["root"]
    found = problems(queue_doc("root", capability={"cpu": 8}), ctx, old=root)
    assert_problems(
        found, [("spec.capability", "root queue's capability, deserved and guarantee cannot be modified")]
    )
    assert problems(queue_doc("root", weight=2), ctx, old=root) == []


@pytest.mark.parametrize(
    ("name", "ctx_kwargs", "fragment"),
    [
        ("default", {}, "the 'default' queue can not be deleted"),
        ("root", {}, "the 'root' queue can not be deleted"),
        ("nowhere", {}, "queue 'nowhere' not found"),
        ("eng", {}, "it has 1 child queues: child"),
        ("busy", {"queue_pods": {"busy": 2}}, "it has 2 allocated pods"),
    ],
)
def test_queue_delete_rules(name: str, ctx_kwargs: dict[str, Any], fragment: str) -> None:
    ctx = context(queue_doc("eng"), queue_doc("child", parent="eng"), queue_doc("busy"), **ctx_kwargs)
    errors = validate_queue_delete(name, ctx, DOC)
    assert [e.path for e in errors] == ["metadata.name"]
    assert fragment in errors[0].message


def test_queue_delete_reads_allocated_pods_from_the_queue_status() -> None:
    ctx = context(queue_doc("busy"))
    busy = replace(ctx.queues["busy"], status=QueueStatus(allocated=Resources({"pods": 4000})))
    ctx = replace(ctx, queues={**ctx.queues, "busy": busy})
    assert "4 allocated pods" in validate_queue_delete("busy", ctx, DOC)[0].message
    assert validate_queue_delete("eng", context(queue_doc("eng")), DOC) == []
