"""Queue-scoped overcommit (`volcano.sh/overcommit-factor` on a Queue, Volcano 1.16): each queue's enqueue
budget min(real capability, max(deserved, guarantee) x min(factor, max-queue-overcommit-factor)) on the
resources it deserves, after the cluster-wide check; through real sessions."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, queue, res, session

from contracts.pending import INSUFFICIENT_CLUSTER_CAPACITY, INSUFFICIENT_QUEUE_QUOTA
from contracts.queue_overcommit import OVERCOMMIT_FACTOR
from services.scheduler.core.conf import ConfError
from services.scheduler.core.framework.plan import SessionResult

# a big cluster: the global check (x 1.2 of 64 cpu) stays out of the way unless a case fills it
NODES = [node("n1", cpu=32, memory="64Gi"), node("n2", cpu=32, memory="64Gi")]


def overcommit(**arguments: Any):
    plugin = {"name": "overcommit", "arguments": arguments} if arguments else "overcommit"
    return conf("enqueue", ["priority", "gang"], [plugin])


def q(name: str, factor: str | None = None, **spec: Any):
    annotations = {OVERCOMMIT_FACTOR: factor} if factor is not None else {}
    parent = spec.pop("parent", "")
    return queue(name, annotations=annotations, parent=parent, **{k: res(**v) for k, v in spec.items()})


def group(name: str, queue_name: str, phase: str = "Pending", **minimum: Any):
    return podgroup(name, queue=queue_name, phase=phase, min_resources=res(**minimum) if minimum else None)


def running(name: str, queue_name: str, cpu: int, node_name: str = "n1") -> list:
    return [
        group(name, queue_name, "Running"),
        pod(f"{name}-0", name, cpu=cpu, memory=None, node_name=node_name),
    ]


def phases(result: SessionResult, *names: str) -> dict[str, str]:
    return {name: result.podgroups[f"default/{name}"].phase for name in names}


# (id, plugin arguments, objects, expected phases)
CASES = [
    pytest.param(
        {},
        [q("b", "1.5", deserved={"cpu": 4}), group("j", "b", cpu="4800m")],
        {"j": "Inqueue"},
        id="budget-exact",
    ),
    pytest.param(  # the factor is capped by max-queue-overcommit-factor, which defaults to overcommit-factor
        {},
        [q("b", "1.5", deserved={"cpu": 4}), group("j", "b", cpu="4801m")],
        {"j": "Pending"},
        id="capped-1.2",
    ),
    pytest.param(
        {"max-queue-overcommit-factor": 2.0},
        [q("b", "1.5", deserved={"cpu": 4}), group("j", "b", cpu=6)],
        {"j": "Inqueue"},
        id="raised-max",
    ),
    pytest.param(
        {"max-queue-overcommit-factor": 2.0},
        [q("b", "1.5", deserved={"cpu": 4}), group("j", "b", cpu="6001m")],
        {"j": "Pending"},
        id="above-budget",
    ),
    pytest.param(  # a queue without the annotation has no budget of its own
        {}, [q("plain", deserved={"cpu": 1}), group("j", "plain", cpu=40)], {"j": "Inqueue"}, id="unannotated"
    ),
    pytest.param(  # no queue factor passes the cluster-wide check (64 cpu x 1.2)
        {"max-queue-overcommit-factor": 100.0},
        [q("b", "100", deserved={"cpu": 64}), group("j", "b", cpu=77)],
        {"j": "Pending"},
        id="global-check-first",
    ),
    pytest.param(  # allocated pods and Inqueue minResources of the queue count; other queues' do not
        {"max-queue-overcommit-factor": 2.0},
        [
            q("b", "2", deserved={"cpu": 4}),
            q("other"),
            *running("r", "b", 3),
            group("held", "b", "Inqueue", cpu=2),
            *running("elsewhere", "other", 20, "n2"),
            group("fits", "b", cpu=3),
            group("late", "b", cpu=1),
        ],
        {"fits": "Inqueue", "late": "Pending"},
        id="held-and-admitted",
    ),
    pytest.param(  # the guarantee raises the budget of a deserved resource
        {"max-queue-overcommit-factor": 2.0},
        [q("b", "2", deserved={"cpu": 2}, guarantee={"cpu": 3}), group("j", "b", cpu=6)],
        {"j": "Inqueue"},
        id="guarantee-raises",
    ),
    pytest.param(  # the capability caps it
        {"max-queue-overcommit-factor": 2.0},
        [q("b", "2", deserved={"cpu": 4}, capability={"cpu": 5}), group("j", "b", cpu=6)],
        {"j": "Pending"},
        id="capability-caps",
    ),
    pytest.param(  # memory is not deserved: no queue budget on it (not a budget of zero)
        {},
        [q("b", "1", deserved={"cpu": 4}), group("j", "b", cpu=4, memory="32Gi")],
        {"j": "Inqueue"},
        id="undeserved-dimension-free",
    ),
    pytest.param(  # an annotated parent refuses although the leaf has room
        {"max-queue-overcommit-factor": 2.0},
        [
            q("org", "1", deserved={"cpu": 4}),
            q("team", "2", deserved={"cpu": 4}, parent="org"),
            group("j", "team", cpu=5),
        ],
        {"j": "Pending"},
        id="ancestor-refuses",
    ),
    pytest.param(  # an unannotated parent adds no check
        {},
        [
            q("org", deserved={"cpu": 1}),
            q("team", "1", deserved={"cpu": 4}, parent="org"),
            group("j", "team", cpu=4),
        ],
        {"j": "Inqueue"},
        id="unannotated-ancestor",
    ),
    pytest.param(  # an invalid value that bypassed admission: the queue admits no job with minResources
        {},
        [q("b", "0.5", deserved={"cpu": 4}), group("j", "b", cpu=1), group("free", "b")],
        {"j": "Pending", "free": "Inqueue"},
        id="invalid-refuses",
    ),
    pytest.param(
        {}, [q("b", "1.5"), group("j", "b", cpu=1)], {"j": "Pending"}, id="nothing-deserved-refuses"
    ),
]


@pytest.mark.parametrize(("arguments", "objects", "expected"), CASES)
def test_queue_budget(arguments: dict[str, Any], objects: list, expected: dict[str, str]) -> None:
    result = session([*NODES, *objects], overcommit(**arguments)).run()
    assert phases(result, *expected) == expected


def test_two_queues_with_different_factors_admit_different_jobs() -> None:
    objects = [
        q("strict", "1", deserved={"cpu": 4}),
        q("burst", "1.5", deserved={"cpu": 4}),
        group("s", "strict", cpu=5),
        group("b", "burst", cpu=5),
    ]
    result = session([*NODES, *objects], overcommit(**{"max-queue-overcommit-factor": 1.5})).run()
    assert phases(result, "s", "b") == {"s": "Pending", "b": "Inqueue"}
    (cond,) = [c for c in result.podgroups["default/s"].conditions if c.type == "Unschedulable"]
    assert cond.reason == INSUFFICIENT_QUEUE_QUOTA
    assert (
        "queue strict is over its overcommit budget on cpu (volcano.sh/overcommit-factor 1: budget cpu 4,"
        " admitted cpu 0, this job cpu 5)" in cond.message
    )


def test_the_message_says_when_the_factor_was_capped() -> None:
    objects = [q("b", "3", deserved={"cpu": 4}), group("j", "b", cpu=5)]
    result = session([*NODES, *objects], overcommit()).run()
    (cond,) = [c for c in result.podgroups["default/j"].conditions if c.type == "Unschedulable"]
    assert "volcano.sh/overcommit-factor 3, capped at max-queue-overcommit-factor 1.2" in cond.message


def test_an_invalid_annotation_is_named_in_the_pending_reason() -> None:
    objects = [q("b", "lots", deserved={"cpu": 4}), group("j", "b", cpu=1)]
    result = session([*NODES, *objects], overcommit()).run()
    (cond,) = [c for c in result.podgroups["default/j"].conditions if c.type == "Unschedulable"]
    assert cond.reason == INSUFFICIENT_QUEUE_QUOTA
    assert "queue b admits no job: invalid volcano.sh/overcommit-factor: expected a decimal" in cond.message


def test_the_cluster_wide_refusal_stays_capacity() -> None:
    busy = [*running("r1", "other", 30), *running("r2", "other", 30, "n2")]
    objects = [q("b", "2", deserved={"cpu": 64}), q("other"), *busy, group("j", "b", cpu=20)]
    result = session([*NODES, *objects], overcommit(**{"max-queue-overcommit-factor": 2})).run()
    (cond,) = [c for c in result.podgroups["default/j"].conditions if c.type == "Unschedulable"]
    assert cond.reason == INSUFFICIENT_CLUSTER_CAPACITY


@pytest.mark.parametrize("value", [0.5, "x", float("inf"), True])
def test_max_queue_factor_must_be_a_finite_number_of_at_least_one(value: Any) -> None:
    with pytest.raises(ConfError, match="max-queue-overcommit-factor: expected a finite number >= 1"):
        overcommit(**{"max-queue-overcommit-factor": value})
