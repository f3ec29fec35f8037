"""NodeTable.future_is_idle: true exactly while no node has a Pipelined or Releasing task or reserved room,
and then every node's future idle is its idle (placement skips the second fit check on that word)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from support.builders import conf, node, pod, queue, session

from services.scheduler.core.model.task import TaskInfo, TaskStatus

DIVERGING = (TaskStatus.PIPELINED, TaskStatus.RELEASING)


@pytest.mark.parametrize("seed", range(4))
def test_future_is_idle_while_nothing_is_pipelined_reserved_or_releasing(seed: int) -> None:
    rng = random.Random(seed)
    objects = [queue("default"), *(node(f"n{i}") for i in range(6)), *(pod(f"p{i}") for i in range(8))]
    ssn = session(objects, conf("allocate", ["gang"]))
    nodes = ssn.nodes
    assert nodes.future_is_idle()
    waiting = [task for job in ssn.jobs.values() for task in job.tasks.values()]
    placed: list[tuple[TaskInfo, int]] = []
    idle_again = 0  # times the table came back to no diverging task after having some
    for _ in range(300):
        if waiting and (not placed or rng.random() < 0.5):
            task = waiting.pop(rng.randrange(len(waiting)))
            task.status = rng.choice([TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.RELEASING])
            row = rng.randrange(len(nodes))
            nodes.add_task(row, task)
            placed.append((task, row))
        else:
            task, row = placed.pop(rng.randrange(len(placed)))
            was = task.status
            nodes.remove_task(row, task)
            task.status = TaskStatus.PENDING
            waiting.append(task)
            idle_again += was in DIVERGING and not any(t.status in DIVERGING for t, _ in placed)
        diverging = sum(task.status in DIVERGING for task, _ in placed)
        assert nodes.future_is_idle() is (diverging == 0)
        if nodes.future_is_idle():
            assert np.array_equal(nodes.future, nodes.idle)
    assert idle_again  # the case the word is for: back to nothing pipelined or releasing


def test_reserved_room_keeps_the_future_apart() -> None:
    nodes = session([queue("default"), node("n1"), node("n2")], conf("allocate", ["gang"])).nodes
    nodes.reserve(1, np.ones(nodes.future.shape[1], dtype=np.int64))
    assert not nodes.future_is_idle()
    assert not np.array_equal(nodes.future, nodes.idle)


def test_pods_releasing_on_nodes_at_open_keep_the_future_apart() -> None:
    objects = [queue("default"), node("n1"), node("n2")]
    nodes = session(objects, conf("allocate", ["gang"])).nodes
    width = nodes.future.shape[1]
    nodes.charge(np.array([0]), np.ones((1, width), dtype=np.int64))
    assert nodes.future_is_idle()
    nodes.charge(np.array([1]), np.ones((1, width), dtype=np.int64), releasing=True)
    assert not nodes.future_is_idle()
    assert not np.array_equal(nodes.future, nodes.idle)
