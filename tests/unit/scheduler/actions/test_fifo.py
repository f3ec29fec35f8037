"""Strict FIFO queues (`dequeueStrategy: fifo`): a job that cannot go holds back the jobs behind it, in
enqueue and in allocate, across replicas; `traverse` (Volcano's default) passes it by."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.builders import conf, gang, node, pod, podgroup, queue

from contracts.pending import BEHIND_QUEUE_HEAD
from contracts.resources import Resources
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.session import Session
from services.scheduler.core.snapshot import ClusterSnapshot

DEFAULT = conf("enqueue, allocate", ["priority", "gang"], ["overcommit", "drf", "predicates", "proportion"])


def line(strategy: str) -> Any:
    return replace(queue("line"), dequeue_strategy=strategy)


def inqueue(name: str, pods: int, cpu: int, queue_name: str = "line") -> list[Any]:
    return gang(name, pods, queue_name=queue_name, cpu=cpu, memory=None)


def pending(name: str, cpu: int, queue_name: str = "line") -> Any:
    return podgroup(name, queue=queue_name, phase="Pending", min_resources=Resources.parse({"cpu": cpu}))


def run(objects: list[Any], **kwargs: Any) -> SessionResult:
    return Session(ClusterSnapshot.from_objects([queue("default"), *objects]), DEFAULT, **kwargs).run()


def reason(result: SessionResult, name: str) -> tuple[str, str]:
    condition = next(
        c
        for c in result.podgroups[f"default/{name}"].conditions
        if c.type == "Unschedulable" and c.status == "True"
    )
    return condition.reason, condition.message


# the head (created first) cannot go; "small" behind it could
ENQUEUE = [node("n1", cpu=4), pending("head", 16), pending("small", 1)]
ALLOCATE = [node("n1", cpu=4), *inqueue("head", 2, 4), *inqueue("small", 1, 1)]


@pytest.mark.parametrize(
    "objects", [pytest.param(ENQUEUE, id="enqueue"), pytest.param(ALLOCATE, id="allocate")]
)
def test_fifo_holds_back_what_traverse_lets_pass(objects: list[Any]) -> None:
    traverse = run([line("traverse"), *objects])
    if objects is ENQUEUE:
        assert traverse.podgroups["default/small"].phase == "Inqueue"
    else:
        assert traverse.binds == {"default/small-worker-0": "n1"}
    fifo = run([line("fifo"), *objects])
    assert fifo.binds == {}
    assert fifo.podgroups["default/small"].phase == ("Pending" if objects is ENQUEUE else "Inqueue")
    assert reason(fifo, "small") == (
        BEHIND_QUEUE_HEAD,
        f"1/{0 if objects is ENQUEUE else 1} tasks in gang unschedulable: "
        "waiting behind default/head in fifo queue line",
    )
    assert reason(fifo, "head")[0] != BEHIND_QUEUE_HEAD


def test_only_the_fifo_queue_waits() -> None:
    result = run([line("fifo"), *ALLOCATE, *inqueue("elsewhere", 1, 1, queue_name="default")])
    assert set(result.binds) == {"default/elsewhere-worker-0"}


def test_a_head_that_goes_lets_the_next_one_try() -> None:
    result = run([line("fifo"), node("n1", cpu=4), *inqueue("head", 1, 2), *inqueue("next", 1, 2)])
    assert set(result.binds) == {"default/head-worker-0", "default/next-worker-0"}


def test_a_pipelined_head_does_not_hold_back_the_line() -> None:
    # the head waits for a terminating pod's room (pipelined): it will run, the jobs behind may use the rest
    objects = [
        line("fifo"),
        node("n1", cpu=4),
        pod("old", node_name="n1", cpu=3, memory=None, deleting=True),
        *inqueue("head", 1, 3),
        *inqueue("small", 1, 1),
    ]
    result = run(objects)
    assert result.pipelined == {"default/head-worker-0": "n1"}
    assert result.binds == {"default/small-worker-0": "n1"}


def test_an_elastic_head_short_of_extra_pods_does_not_hold_back_the_line() -> None:
    # minMember 1 of 3: the head runs with what fits, its extra pods are no reason to stop the line
    head = gang("head", 3, min_member=1, queue_name="line", cpu=2, memory=None)
    result = run([line("fifo"), node("n1", cpu=5), *head, *inqueue("small", 1, 1)])
    assert "default/small-worker-0" in result.binds


@pytest.mark.parametrize(
    "objects", [pytest.param(ENQUEUE, id="enqueue"), pytest.param(ALLOCATE, id="allocate")]
)
def test_another_replicas_waiting_head_holds_back_this_replicas_jobs(objects: list[Any]) -> None:
    # the head would go here (room for it), but another replica places it: this one waits its turn
    roomy = [node("n1", cpu=32) if getattr(o, "kind", "") == "Node" else o for o in objects]
    mine = run([line("fifo"), *roomy], owns=lambda key: key != "default/head")
    assert "default/head" not in mine.podgroups
    assert reason(mine, "small")[0] == BEHIND_QUEUE_HEAD
    assert mine.binds == {}
    # the replica that owns both lets the line move
    both = run([line("fifo"), *roomy])
    if objects is ENQUEUE:
        assert both.podgroups["default/small"].phase == "Inqueue"
    else:
        assert set(both.binds) == {"default/head-worker-0", "default/head-worker-1", "default/small-worker-0"}
