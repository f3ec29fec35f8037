"""Why a PodGroup waits (framework/pending.py): each rule in a whole session, the reason and message of its
Unschedulable condition and the summary the replica exports (reason, queue, what the cluster lacks)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.builders import conf, gang, node, pod, podgroup, queue

from contracts.objects import PodGroupCondition, PodGroupStatus
from contracts.pending import (
    INSUFFICIENT_CLUSTER_CAPACITY,
    INSUFFICIENT_QUEUE_QUOTA,
    NEVER_FITS,
    NO_MATCHING_NODES,
    NOT_ENOUGH_RESOURCES,
)
from contracts.resources import Resources
from services.scheduler.core.framework.plan import PendingSummary
from services.scheduler.core.framework.session import Session
from services.scheduler.core.snapshot import ClusterSnapshot

PROPORTION = conf(
    "enqueue, allocate", ["priority", "gang"], ["overcommit", "drf", "predicates", "proportion"]
)
CAPACITY = conf("enqueue, allocate", ["priority", "gang"], ["predicates", "capacity"])
CPU = Resources.parse


def busy(node_name: str, cpu: int) -> Any:
    """A pod of no PodGroup holding `cpu` cpus of a node."""
    return pod(f"busy-{node_name}", node_name=node_name, cpu=cpu, memory=None)


def job(
    name: str, pods: int = 1, *, queue_name: str = "default", phase: str = "Inqueue", **kwargs: Any
) -> list:
    """A gang of `pods` one-cpu pods unless told otherwise (no memory, so only cpu can be short)."""
    kwargs.setdefault("cpu", 1)
    kwargs.setdefault("memory", None)
    return gang(name, pods, queue_name=queue_name, phase=phase, **kwargs)


def pending_group(name: str, cpu: int, queue_name: str = "default") -> Any:
    return podgroup(name, queue=queue_name, phase="Pending", min_resources=CPU({"cpu": cpu}))


CASES = [
    pytest.param(
        [node("n1", cpu=4), busy("n1", 3), *job("g", 2)],
        PROPORTION,
        INSUFFICIENT_CLUSTER_CAPACITY,
        "1/2 tasks in gang unschedulable: 1 node: insufficient cpu; cluster lacks cpu 1",
        {"cpu": 1000},
        id="capacity-nodes-lack-room",
    ),
    pytest.param(
        [
            node("n1", cpu=4, gpu=1),
            node("n2", cpu=4, gpu=1),
            busy("n1", 4),
            busy("n2", 4),
            *job("g", 2, gpu=1),
        ],
        PROPORTION,
        INSUFFICIENT_CLUSTER_CAPACITY,
        "2/2 tasks in gang unschedulable: 2 nodes: insufficient cpu; cluster lacks cpu 2",
        {"cpu": 2000},
        id="capacity-names-only-what-was-short",
    ),
    pytest.param(
        [node("n1", cpu=8), busy("n1", 6), pending_group("g", 4)],
        PROPORTION,
        INSUFFICIENT_CLUSTER_CAPACITY,
        "1/0 tasks in gang unschedulable: resource in cluster is overused on cpu; cluster lacks cpu 400m",
        {"cpu": 400},
        id="capacity-overcommit-at-enqueue",
    ),
    pytest.param(
        [node("n1", cpu=8), queue("q1", capability=CPU({"cpu": 2})), *job("g", 3, queue_name="q1")],
        PROPORTION,
        INSUFFICIENT_QUEUE_QUOTA,
        "1/3 tasks in gang unschedulable: queue q1 over deserved cpu",
        {},
        id="quota-proportion-share-at-the-capability",
    ),
    pytest.param(
        [node("n1", cpu=8), queue("q1", state="Closed"), *job("g", 1, queue_name="q1")],
        PROPORTION,
        INSUFFICIENT_QUEUE_QUOTA,
        "1/1 tasks in gang unschedulable: queue q1 is Closed",
        {},
        id="quota-closed-queue",
    ),
    pytest.param(
        [node("n1", cpu=8), queue("q1", capability=CPU({"cpu": 2})), pending_group("g", 4, "q1")],
        PROPORTION,
        INSUFFICIENT_QUEUE_QUOTA,
        "1/0 tasks in gang unschedulable: queue q1 capability exceeded on cpu",
        {},
        id="quota-capability-at-enqueue",
    ),
    pytest.param(
        # q1 deserves half of the 4 cpus (q2 asks for the rest) and holds it; no room is left: a share
        # that would grow with the cluster
        [
            node("n1", cpu=4),
            queue("q1"),
            queue("q2"),
            *job("g", 1, queue_name="q1"),
            *job("running", 2, queue_name="q1", node_name="n1"),
            *job("other", 2, queue_name="q2", node_name="n1"),
        ],
        PROPORTION,
        INSUFFICIENT_CLUSTER_CAPACITY,
        "1/1 tasks in gang unschedulable: queue q1 over deserved cpu; cluster lacks cpu 1",
        {"cpu": 1000},
        id="capacity-proportion-share-of-a-full-cluster",
    ),
    pytest.param(
        # the same share, but q2's gang does not fit and leaves 2 cpus idle: the share keeps g out of them
        [
            node("n1", cpu=4),
            queue("q1"),
            queue("q2"),
            *job("g", 1, queue_name="q1"),
            *job("running", 2, queue_name="q1", node_name="n1"),
            *job("other", 3, queue_name="q2"),
        ],
        PROPORTION,
        INSUFFICIENT_QUEUE_QUOTA,
        "1/1 tasks in gang unschedulable: queue q1 over deserved cpu",
        {},
        id="quota-proportion-share-with-room-left",
    ),
    pytest.param(
        [node("n1", cpu=8), queue("q1", capability=CPU({"cpu": 2})), *job("g", 3, queue_name="q1")],
        CAPACITY,
        INSUFFICIENT_QUEUE_QUOTA,
        "1/3 tasks in gang unschedulable: queue q1 over capability cpu",
        {},
        id="quota-capacity-plugin-capability",
    ),
    pytest.param(
        [node("n1", cpu=4), busy("n1", 3), queue("q1"), *job("g", 2, queue_name="q1")],
        CAPACITY,
        INSUFFICIENT_CLUSTER_CAPACITY,
        "1/2 tasks in gang unschedulable: 1 node: insufficient cpu; cluster lacks cpu 1",
        {"cpu": 1000},
        id="capacity-capacity-plugin-without-capability",
    ),
    pytest.param(
        [node("n1", cpu=4), node("n2", cpu=4), *job("g", 1, cpu=6)],
        PROPORTION,
        NEVER_FITS,
        "1/1 tasks in gang unschedulable: 2 nodes: insufficient cpu; "
        "can never fit: no node is large enough for pod g-worker-0 (cpu 6)",
        {},
        id="never-fits-a-pod-larger-than-every-node",
    ),
    pytest.param(
        [node("n1", cpu=4), *job("g", 1, gpu=1)],
        PROPORTION,
        NEVER_FITS,
        "1/1 tasks in gang unschedulable: queue default over deserved nvidia.com/gpu; "
        "can never fit: no node is large enough for pod g-worker-0 (cpu 1, nvidia.com/gpu 1)",
        {},
        id="never-fits-a-resource-no-node-has",
    ),
    pytest.param(
        [node("n1", cpu=4), node("n2", cpu=4), *job("g", 3, cpu=3)],
        PROPORTION,
        NEVER_FITS,
        "1/3 tasks in gang unschedulable: queue default over deserved cpu; "
        "can never fit: its minimum asks cpu 9 in all, the whole cluster has cpu 8",
        {},
        id="never-fits-a-gang-larger-than-the-cluster",
    ),
    pytest.param(
        [node("n1", cpu=4), pending_group("g", 16)],
        PROPORTION,
        NEVER_FITS,
        "1/0 tasks in gang unschedulable: resource in cluster is overused on cpu; "
        "can never fit: its minimum asks cpu 16 in all, the whole cluster has cpu 4",
        {},
        id="never-fits-at-enqueue",
    ),
    pytest.param(
        [node("n1", cpu=4, labels={"zone": "a"}), *job("g", 1, node_selector={"zone": "b"})],
        PROPORTION,
        NO_MATCHING_NODES,
        "1/1 tasks in gang unschedulable: 1 node: node(s) didn't match Pod's node affinity/selector",
        {},
        id="no-matching-nodes",
    ),
    pytest.param(
        [node("n1", cpu=2), pod("old", node_name="n1", cpu=2, memory=None, deleting=True), *job("g", 2)],
        PROPORTION,
        NOT_ENOUGH_RESOURCES,
        "2/2 tasks in gang unschedulable: 2 pipelined task(s) waiting for resources to be released",
        {},
        id="pipelined-waits-for-room-being-released",
    ),
]


@pytest.mark.parametrize(("objects", "scheduler_conf", "reason", "message", "missing"), CASES)
def test_pending_reason(objects: list, scheduler_conf: Any, reason: str, message: str, missing: dict) -> None:
    result = Session(ClusterSnapshot.from_objects([queue("default"), *objects]), scheduler_conf).run()
    condition = next(c for c in result.podgroups["default/g"].conditions if c.type == "Unschedulable")
    assert (condition.reason, condition.message) == (reason, message)
    group = next(o for o in objects if getattr(o, "kind", "") == "PodGroup" and o.meta.name == "g")
    assert result.pending["default/g"] == PendingSummary(group.queue, reason, Resources(missing))


def test_only_waiting_podgroups_have_a_summary() -> None:
    objects = [queue("default"), node("n1", cpu=4), *job("fits", 2), *job("g", 3)]
    result = Session(ClusterSnapshot.from_objects(objects), PROPORTION).run()
    assert set(result.podgroups) == {"default/fits", "default/g"}
    assert set(result.pending) == {"default/g"}


def test_an_unschedulable_condition_keeps_the_time_it_turned_true() -> None:
    before = PodGroupCondition(
        "Unschedulable",
        "True",
        last_transition_time=10.0,
        reason=INSUFFICIENT_CLUSTER_CAPACITY,
        message="old",
    )
    group, *pods = job("g", 2)
    group = replace(group, status=PodGroupStatus(phase="Inqueue", conditions=(before,)))
    objects = [queue("default"), node("n1", cpu=4), busy("n1", 3), group, *pods]
    result = Session(ClusterSnapshot.from_objects(objects), PROPORTION, now=50.0).run()
    condition = next(c for c in result.podgroups["default/g"].conditions if c.type == "Unschedulable")
    assert (condition.last_transition_time, condition.message) == (
        10.0,
        "1/2 tasks in gang unschedulable: 1 node: insufficient cpu; cluster lacks cpu 1",
    )
    # once scheduled, it turns False at that moment, and stays False from then on
    freed = [queue("default"), node("n1", cpu=4), group, *pods]
    scheduled = Session(ClusterSnapshot.from_objects(freed), PROPORTION, now=60.0).run()
    stale = next(c for c in scheduled.podgroups["default/g"].conditions if c.type == "Unschedulable")
    assert (stale.status, stale.last_transition_time) == ("False", 60.0)
    group = replace(
        group, status=PodGroupStatus(phase="Running", conditions=scheduled.podgroups["default/g"].conditions)
    )
    bound = [replace(p, spec=replace(p.spec, node_name="n1")) for p in pods]
    later = Session(
        ClusterSnapshot.from_objects([queue("default"), node("n1", cpu=4), group, *bound]),
        PROPORTION,
        now=70.0,
    ).run()
    stale = next(c for c in later.podgroups["default/g"].conditions if c.type == "Unschedulable")
    assert (stale.status, stale.last_transition_time) == ("False", 60.0)
