"""nodeorder's kept resource scores (kept_scores.py, node_scores.py): after any sequence of placements,
pipelines, evictions and undos, the scores the plugin gives are exactly those a plugin opened afresh on
the same nodes gives, whether the changed rows were recomputed one by one in plain Python or together
in numpy; over nodes without memory or gpus (the scorers' `valid` paths), gpu pods and best-effort pods,
and each scorer's weights."""

from __future__ import annotations

import random

import numpy as np
import pytest
from support.builders import conf, node, pod, queue, session

from services.scheduler.core.framework.session import Session
from services.scheduler.core.model.task import TaskInfo, TaskStatus
from services.scheduler.core.plugins.kept_scores import ONE_BY_ONE_ROWS
from services.scheduler.core.plugins.nodeorder import NodeOrderPlugin

OFF = {
    "leastrequested.weight": 0,
    "mostrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "tainttoleration.weight": 0,
}
NODES = 80
WEIGHTS = [
    pytest.param({}, id="defaults"),
    pytest.param({**OFF, "mostrequested.weight": 2, "balancedresource.weight": 3}, id="most-and-balanced"),
    pytest.param({**OFF, "leastrequested.weight": 1}, id="least-alone"),
]


def cluster(rng: random.Random, *, gaps: bool) -> list[object]:
    """Nodes of mixed sizes, with `gaps` some without memory or without gpus (the scorers then check which
    resources each node has); pending pods of every kind. No taints and no node affinity: the scores
    left to compare are the resource scores, whichever candidates they are asked for."""
    nodes = []
    for i in range(NODES):
        memory = "0" if gaps and i % 7 == 3 else f"{rng.choice([2, 8, 13, 64])}Gi"
        gpus = rng.choice([0, 0, 1, 8] if gaps else [1, 2, 8])
        nodes.append(node(f"n{i}", cpu=rng.choice([1, 3, 4, 16]), memory=memory, gpu=gpus))
    pods = []
    for i in range(240):
        kind = i % 4
        if kind == 0:
            pods.append(pod(f"p{i}", cpu=rng.choice([1, 2]), memory=f"{rng.choice([1, 3])}Gi"))
        elif kind == 1:
            pods.append(pod(f"p{i}", cpu=1, memory="1Gi", gpu=rng.choice([1, 2])))
        elif kind == 2:
            pods.append(pod(f"p{i}", cpu=None, memory=None))  # best effort
        else:
            pods.append(pod(f"p{i}", cpu=3, memory=None))
    return [queue("default"), *nodes, *pods]


def tasks(ssn: Session) -> list[TaskInfo]:
    return [task for job in ssn.jobs.values() for task in job.tasks.values()]


def assert_fresh(ssn: Session, arguments: dict[str, int], rng: random.Random, *, whole: bool) -> None:
    """Every task scores as a freshly opened plugin scores it in numpy (it scores every node: more rows
    than ONE_BY_ONE_ROWS). The kept plugin is asked for every node (`whole`: its due rows, more than
    ONE_BY_ONE_ROWS after a big change, are scored in numpy) or for a few (scored one by one)."""
    kept = ssn.plugins["nodeorder"]
    fresh = NodeOrderPlugin(arguments)
    fresh.on_session_open(ssn)
    everything = np.arange(len(ssn.nodes))
    for task in tasks(ssn)[::3]:
        expected = fresh.node_order(ssn, task, everything)
        candidates = everything if whole else np.array(sorted(rng.sample(range(NODES), 25)))
        assert kept.node_order(ssn, task, candidates).tolist() == expected[candidates].tolist()


@pytest.mark.parametrize("arguments", WEIGHTS)
@pytest.mark.parametrize("gaps", [False, True], ids=["every-node-has-all", "some-nodes-lack-some"])
@pytest.mark.parametrize("seed", range(3))
def test_kept_scores_equal_fresh_ones_after_any_changes(
    arguments: dict[str, int], gaps: bool, seed: int
) -> None:
    rng = random.Random(seed)
    nodeorder = [{"name": "nodeorder", "arguments": arguments}]
    ssn = session(cluster(rng, gaps=gaps), conf("allocate", ["gang"], nodeorder))
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrderPlugin)
    assert plugin.scores_every_resource_of_every_node() is not gaps  # the scorers' path the case is about
    assert_fresh(ssn, arguments, rng, whole=True)  # every request's scores now kept
    for _ in range(12):
        stmt = ssn.statement()
        # a few changed nodes between calls, or more than ONE_BY_ONE_ROWS of them
        big = rng.random() < 0.3
        count = ONE_BY_ONE_ROWS + 8 if big else rng.choice([1, 2, 5])
        waiting = [t for t in tasks(ssn) if t.status is TaskStatus.PENDING]
        for task, where in zip(rng.sample(waiting, count), rng.sample(range(NODES), count), strict=True):
            # placed beyond what the node has, too: the scorers cap at the node's allocatable
            (stmt.allocate if rng.random() < 0.7 else stmt.pipeline)(task, where)
        assert_fresh(ssn, arguments, rng, whole=big)
        if rng.random() < 0.4:
            stmt.discard()
            assert_fresh(ssn, arguments, rng, whole=big)
        else:
            allocated = [t for t in tasks(ssn) if t.status is TaskStatus.ALLOCATED]
            for task in rng.sample(allocated, min(2, len(allocated))):
                stmt.evict(task, "preempt")  # Releasing: still held
            assert_fresh(ssn, arguments, rng, whole=False)
            stmt.commit()
