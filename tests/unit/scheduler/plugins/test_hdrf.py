"""drf with enableHierarchy (hdrf): hierarchical queue order and reclaim victims."""

from __future__ import annotations

from collections import Counter

import pytest
from support.builders import conf, node, pod, podgroup, queue, run, session

HDRF = conf("allocate", [{"name": "drf", "enableHierarchy": True}])


def hqueue(name: str, hierarchy: str, weights: str):
    notes = {"volcano.sh/hierarchy": hierarchy, "volcano.sh/hierarchy-weights": weights}
    return queue(name, annotations=notes)


def job(name: str, queue_name: str, running: int, pending: int, node_name: str = "n1") -> list:
    objects = [podgroup(name, queue=queue_name, min_member=1)]
    objects += [pod(f"{name}-r{i}", name, node_name=node_name) for i in range(running)]
    objects += [pod(f"{name}-p{i}", name) for i in range(pending)]
    return objects


@pytest.mark.parametrize(
    ("tiers", "split"),
    [
        # weights 1:3 under root: b gets three tasks for each of a's (ties go to the older queue)
        pytest.param([[{"name": "drf", "enableHierarchy": True}]], {"ja": 2, "jb": 6}, id="hdrf-by-weight"),
        # plain drf orders jobs only: the older queue always goes first
        pytest.param([["drf"]], {"ja": 8}, id="flat-drf"),
    ],
)
def test_allocation_follows_hierarchical_weights(tiers, split):
    objects = [
        node("n1", cpu=8, memory="64Gi"),
        hqueue("qa", "root/a", "1/1"),
        hqueue("qb", "root/b", "1/3"),
        *job("ja", "qa", 0, 8),
        *job("jb", "qb", 0, 8),
    ]
    binds = run(objects, conf("allocate", *tiers)).binds
    assert Counter(key.split("/")[1].split("-")[0] for key in binds) == split


ORDER_CASES = [
    # queues (name, hierarchy, weights, running, pending), node cpu 16 -> expected order (first, second)
    pytest.param(
        [("qa", "root/a", "1/1", 2, 1), ("qb", "root/b", "1/4", 4, 1)],
        ("qb", "qa"),
        id="weighted-share",  # a: 2/16 / 1 = .125; b: 4/16 / 4 = .0625
    ),
    pytest.param(
        [("qa", "root/a", "1/1", 1, 0), ("qb", "root/b", "1/1", 4, 1)],
        ("qb", "qa"),
        id="saturated-last",  # a got all it asked for: it goes last despite the lower share
    ),
    pytest.param(
        [("qa", "root/a", "1/0", 2, 1), ("qb", "root/b", "1/1", 3, 1)],
        ("qa", "qb"),
        id="weight-below-one-is-one",
    ),
    pytest.param(
        # eng's children are scaled to the smaller share (prod 1 cpu, dev 4 -> 1): eng counts 2 cpu < sci 3
        [
            ("dev", "root/eng/dev", "1/1/1", 4, 1),
            ("prod", "root/eng/prod", "1/1/1", 1, 1),
            ("sci", "root/sci", "1/1", 3, 1),
        ],
        ("dev", "sci"),
        id="children-scaled-to-min-share",
    ),
    pytest.param(
        [
            ("dev", "root/eng/dev", "1/1/1", 4, 1),
            ("prod", "root/eng/prod", "1/1/1", 1, 1),
            ("sci", "root/sci", "1/1", 3, 1),
        ],
        ("prod", "dev"),
        id="same-parent-compares-next-level",
    ),
]


def _order_session(specs):
    objects = [node("n1", cpu=16, memory="64Gi")]
    for name, hierarchy, weights, running, pending in specs:
        objects += [hqueue(name, hierarchy, weights), *job(f"j{name}", name, running, pending)]
    return session(objects, HDRF)


@pytest.mark.parametrize(("specs", "order"), ORDER_CASES)
def test_queue_order(specs, order):
    ssn = _order_session(specs)
    plugin = ssn.plugins["drf"]
    first, second = (ssn.queues[name] for name in order)
    assert plugin.queue_order(ssn, first, second) == -1
    assert plugin.queue_order(ssn, second, first) == 1
    assert ssn.queue_order_fn(first, second)


def test_queue_order_follows_allocations():
    ssn = _order_session([("qa", "root/a", "1/1", 2, 4), ("qb", "root/b", "1/1", 3, 1)])
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    plugin = ssn.plugins["drf"]
    assert plugin.queue_order(ssn, qa, qb) == -1
    stmt = ssn.statement()
    for task in ssn.jobs["default/jqa"].pending_tasks()[:2]:
        stmt.allocate(task, 0)
    assert plugin.queue_order(ssn, qa, qb) == 1  # a now holds 4 cpu to b's 3
    stmt.discard()
    assert plugin.queue_order(ssn, qa, qb) == -1


RECLAIM_CASES = [
    # running tasks of the reclaimer's job (qb, 2 more pending) and of the victim job (qa) on a 4-cpu node
    pytest.param(0, 4, ["jqa-r0", "jqa-r1", "jqa-r2", "jqa-r3"], id="greedy-queue-gives-back"),
    pytest.param(3, 1, [], id="reclaimer-already-ahead"),
    # equal shares after the move: not a victim (strictly before is required)
    pytest.param(1, 3, [], id="tie-is-not-victim"),
    # not cumulative (as Volcano): taken together, the second eviction would already tie the shares
    pytest.param(0, 3, ["jqa-r0", "jqa-r1", "jqa-r2"], id="each-victim-judged-alone"),
]


@pytest.mark.parametrize(("mine", "theirs", "victims"), RECLAIM_CASES)
def test_reclaimable(mine, theirs, victims):
    objects = [
        node("n1", cpu=4, memory="64Gi"),
        hqueue("qa", "root/a", "1/1"),
        hqueue("qb", "root/b", "1/1"),
        *job("jqa", "qa", theirs, 0),
        *job("jqb", "qb", mine, 2),
    ]
    ssn = session(objects, HDRF)
    plugin = ssn.plugins["drf"]
    reclaimer = ssn.jobs["default/jqb"].pending_tasks()[0]
    reclaimees = sorted(ssn.jobs["default/jqa"].tasks.values(), key=lambda t: t.name)
    before = plugin.queue_order(ssn, ssn.queues["qa"], ssn.queues["qb"])
    assert [t.name for t in plugin.reclaimable(ssn, reclaimer, reclaimees)] == victims
    assert [t.name for t in ssn.reclaimable_fn(reclaimer, reclaimees)] == victims
    # the trial trees do not leak into the live queue order
    assert plugin.queue_order(ssn, ssn.queues["qa"], ssn.queues["qb"]) == before
