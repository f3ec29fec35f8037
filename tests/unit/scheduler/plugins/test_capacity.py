"""capacity through real sessions, flat and hierarchical; reclaim hooks directly on a session."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, queue, res, session

from contracts.resources import Resources

FLAT = conf("enqueue, allocate", ["capacity"])
TREE = conf("enqueue, allocate", [{"name": "capacity", "enableHierarchy": True}])
GIB = 1024**3 * 1000


def tree_conf(level: int):
    return conf(
        "enqueue, allocate",
        [{"name": "capacity", "enableHierarchy": True, "arguments": {"ancestorReclaimLevel": level}}],
    )


def job(
    name: str, queue_name: str, *cpus: float, phase: str = "Inqueue", min_cpu: float | None = None, **kw: Any
):
    """A PodGroup with one pod per entry of `cpus` (cores each), named `<name>-<i>`."""
    minimum = None if min_cpu is None else res(cpu=str(min_cpu))
    group = podgroup(name, queue=queue_name, phase=phase, min_resources=minimum)
    return [group] + [pod(f"{name}-{i}", name, cpu=str(c), **kw) for i, c in enumerate(cpus)]


def fit_reasons(ssn, job_name: str) -> set[str]:
    return {reason for reasons in ssn.jobs[f"default/{job_name}"].fit_errors.values() for reason in reasons}


def tasks_of(ssn) -> dict[str, Any]:
    return {t.name: t for t in ssn.all_tasks()}


# --- whole sessions ---------------------------------------------------------------------------------

CASES = [
    pytest.param(  # capability caps the queue; the reason names the queue and the dimension
        FLAT,
        [
            node("n1", cpu=4),
            queue("capped", capability=res(cpu=2)),
            *job("j1", "capped", 1),
            *job("j2", "capped", 3),
        ],
        {"j1-0"},
        {"j2": "queue capped over capability cpu"},
        {},
        id="capability",
    ),
    pytest.param(  # elastic: no overused gate, a queue grows past deserved up to its capability
        FLAT,
        [node("n1", cpu=4), queue("q", deserved=res(cpu=1)), *job("j1", "q", 1), *job("j2", "q", 3)],
        {"j1-0", "j2-0"},
        {},
        {},
        id="elastic-beyond-deserved",
    ),
    pytest.param(  # other queues' guarantees are not available to a queue
        FLAT,
        [
            node("n1", cpu=4),
            queue("q"),
            queue("reserved", guarantee=res(cpu=3), deserved=res(cpu=3)),
            *job("j1", "q", 1),
            *job("j2", "q", 1),
        ],
        {"j1-0"},
        {"j2": "queue q over capability cpu"},
        {},
        id="guarantee-held-back",
    ),
    pytest.param(  # enqueue against the real capability; admitted minimums count for the next
        FLAT,
        [
            node("n1", cpu=8),
            queue("capped", capability=res(cpu=3)),
            *job("big", "capped", 4, phase="Pending", min_cpu=4),
            *job("first", "capped", 2, phase="Pending", min_cpu=2),
            *job("second", "capped", 2, phase="Pending", min_cpu=2),
        ],
        {"first-0"},
        {},
        {"big": "Pending", "first": "Inqueue", "second": "Pending"},
        id="enqueue",
    ),
    pytest.param(  # a child's capability limits it below the parent's
        TREE,
        [
            node("n1", cpu=8),
            queue("eng", capability=res(cpu=6)),
            queue("dev", parent="eng", capability=res(cpu=3)),
            *job("d", "dev", 1, 1, 1, 1),
        ],
        {"d-0", "d-1", "d-2"},
        {"d": "queue dev over capability cpu"},
        {},
        id="child-capability",
    ),
    pytest.param(  # the parent's capability caps its children together; children inherit its cpu cap
        TREE,
        [
            node("n1", cpu=8),
            queue("eng", capability=res(cpu=4)),
            queue("dev", parent="eng"),
            queue("prod", parent="eng"),
            *job("d", "dev", 1, 1, 1),
            *job("p", "prod", 1, 1, 1),
        ],
        4,
        {},
        {},
        id="ancestor-capability",
    ),
    pytest.param(  # jobs go to leaves only: the parent's job waits, its children still schedule
        TREE,
        [
            node("n1", cpu=8),
            queue("eng"),
            queue("dev", parent="eng"),
            *job("on-parent", "eng", 1, phase="Pending", min_cpu=1),
            *job("on-parent-inqueue", "eng", 1),
            *job("on-leaf", "dev", 1, phase="Pending", min_cpu=1),
        ],
        {"on-leaf-0"},
        {"on-parent-inqueue": "queue eng is not a leaf queue"},
        {"on-parent": "Pending", "on-leaf": "Inqueue"},
        id="leaf-only",
    ),
    pytest.param(  # enqueue checks every ancestor: the sibling's usage counts at the parent
        TREE,
        [
            node("n1", cpu=8),
            queue("eng", capability=res(cpu=4)),
            queue("dev", parent="eng"),
            queue("prod", parent="eng"),
            *job("held", "prod", 3, node_name="n1", phase="Running", min_cpu=3),  # no elastic part
            *job("wide", "dev", 2, phase="Pending", min_cpu=2),
            *job("narrow", "dev", 1, phase="Pending", min_cpu=1),
        ],
        {"narrow-0"},
        {},
        {"wide": "Pending", "narrow": "Inqueue"},
        id="enqueue-ancestor",
    ),
    pytest.param(  # an explicit root queue with a capability caps the whole tree
        TREE,
        [
            node("n1", cpu=8),
            queue("root", capability=res(cpu=3, memory="8Gi")),
            queue("dev"),
            queue("prod"),
            *job("d", "dev", 1, 1),
            *job("p", "prod", 1, 1),
        ],
        3,
        {},
        {},
        id="explicit-root",
    ),
    pytest.param(  # an unknown parent invalidates the hierarchy: nothing is admitted or placed
        TREE,
        [
            node("n1", cpu=8),
            queue("dev", parent="missing"),
            queue("ok"),
            *job("d", "ok", 1),
            *job("e", "ok", 1, phase="Pending", min_cpu=1),
        ],
        set(),
        {"d": "queue hierarchy is invalid: queue dev has unknown parent queue missing"},
        {"e": "Pending"},
        id="invalid-hierarchy",
    ),
]


@pytest.mark.parametrize(("scheduler_conf", "objects", "binds", "reasons", "phases"), CASES)
def test_sessions(scheduler_conf, objects, binds, reasons: dict[str, str], phases: dict[str, str]) -> None:
    ssn = session(objects, scheduler_conf)
    result = ssn.run()
    bound = {key.split("/")[1] for key in result.binds}
    assert (len(bound) if isinstance(binds, int) else bound) == binds
    for job_name, reason in reasons.items():
        assert reason in fit_reasons(ssn, job_name)
    for job_name, phase in phases.items():
        assert result.podgroups[f"default/{job_name}"].phase == phase


@pytest.mark.parametrize(
    ("parent", "expected"),
    [
        (queue("eng", capability=res(cpu=3)), "queue eng over capability cpu"),
        (queue("root", capability=res(cpu=3, memory="8Gi")), "queue root over capability cpu"),
    ],
)
def test_capability_reason_names_the_ancestor_that_is_full(parent, expected: str) -> None:
    """A child's real capability is within its parent's, so only siblings' usage makes an ancestor the
    one that refuses."""
    objects = [
        node("n1", cpu=8),
        parent,
        queue("dev", parent=parent.meta.name),
        queue("prod", parent=parent.meta.name),
        *job("held", "prod", 2, node_name="n1", phase="Running"),
        *job("d", "dev", 1, 1, 1),
    ]
    ssn = session(objects, TREE)
    assert len(ssn.run().binds) == 1
    assert fit_reasons(ssn, "d") == {expected}


def test_queue_figures_flat() -> None:
    objects = [
        node("n1", cpu=4, memory="8Gi"),
        queue("big", deserved=res(cpu=10)),  # clamped to what the cluster minus guarantees leaves
        queue("floor", guarantee=res(cpu=1)),  # raised to its guarantee
        *job("b", "big", 1),
        *job("f", "floor", 1),
    ]
    result = session(objects, FLAT).run()
    assert result.queues["big"].deserved == {"cpu": 3000}
    assert result.queues["big"].share == pytest.approx(1 / 3)
    assert result.queues["floor"].deserved == {"cpu": 1000}
    assert result.queues["floor"].share == pytest.approx(1.0)


def test_queue_figures_tree_roll_up() -> None:
    objects = [
        node("n1", cpu=8, memory="8Gi"),
        queue("eng", deserved=res(cpu=4), guarantee=res(cpu=2)),
        queue("dev", parent="eng", deserved=res(cpu=2), guarantee=res(cpu=1)),
        *job("d", "dev", 1, 1),
    ]
    ssn = session(objects, TREE)
    result = ssn.run()
    assert result.queues["dev"].share == pytest.approx(1.0)
    assert result.queues["eng"].deserved == {"cpu": 4000}
    assert result.queues["eng"].share == pytest.approx(0.5)  # ancestors follow allocations live
    root = ssn.plugins["capacity"].tree.ledgers["root"]
    assert root.deserved.to_dict() == {"cpu": 4000} and root.guarantee.to_dict() == {"cpu": 2000}
    assert root.allocated["cpu"] == 2000
    assert "root" not in result.queues  # the virtual root is no Queue object


# --- ordering --------------------------------------------------------------------------------------


def test_queue_without_deserved_goes_after_equal_share() -> None:
    objects = [
        node("n1", cpu=8),
        queue("best-effort"),
        queue("entitled", deserved=res(cpu=1)),
        *job("held", "entitled", 1, node_name="n1", phase="Running"),
        *job("be", "best-effort", 1),
        *job("ent", "entitled", 1),
    ]
    result = session(objects, FLAT).run()
    # both have share 1: entitled (1 of 1 deserved) and best-effort (nothing deserved)
    assert [b.task for plan in result.plans for b in plan.binds] == ["default/ent-0", "default/be-0"]


def test_tree_queue_order_compares_through_ancestors() -> None:
    objects = [
        node("n1", cpu=8),
        queue("a", deserved=res(cpu=4)),
        queue("a1", parent="a", deserved=res(cpu=1)),
        queue("b", deserved=res(cpu=4)),
        queue("b1", parent="b", deserved=res(cpu=4)),
        *job("held", "a1", 1, node_name="n1", phase="Running"),
        *job("held-b", "b1", 3, node_name="n1", phase="Running"),
    ]
    ssn = session(objects, TREE)
    plugin, queues = ssn.plugins["capacity"], ssn.queues
    # a1 (share 1) vs b1 (share 0.75) compare as a (0.25) vs b (0.75)
    assert plugin.queue_order(ssn, queues["a1"], queues["b1"]) < 0
    assert plugin.queue_order(ssn, queues["a"], queues["a1"]) > 0  # leaves before parents
    assert plugin.victim_queue_order(ssn, queues["b1"], queues["a"], queues["a1"]) == 0
    assert plugin.victim_queue_order(ssn, queues["a1"], queues["b1"], queues["a1"]) < 0


# --- reclaim extension points -----------------------------------------------------------------------


def _reclaim_session(victim_queue=None, victim_memory: str | None = None, more=()):
    """victim holds 3 one-core tasks and deserves 1 core; starved wants a core."""
    objects = [
        node("n1", cpu=6, memory="16Gi"),
        victim_queue or queue("victim", deserved=res(cpu=1)),
        queue("starved", deserved=res(cpu=3)),
        *job("v", "victim", 1, 1, 1, node_name="n1", phase="Running", memory=victim_memory),
        *job("r", "starved", 1, memory=None),
        *more,
    ]
    ssn = session(objects, FLAT)
    return ssn, ssn.plugins["capacity"], tasks_of(ssn)


def _victims(ssn, plugin, tasks, reclaimer: str) -> list[str]:
    names = [n for n in tasks if n.startswith("v-")]
    return sorted(t.name for t in plugin.reclaimable(ssn, tasks[reclaimer], [tasks[n] for n in names]))


def test_reclaimable_takes_what_the_victim_queue_holds_above_deserved() -> None:
    ssn, plugin, tasks = _reclaim_session()
    assert len(_victims(ssn, plugin, tasks, "r-0")) == 2


def test_reclaimable_keeps_the_guarantee() -> None:
    """Above deserved on cpu, two victims could go; the memory guarantee lets only one."""
    victim = queue("victim", deserved=res(cpu=1), guarantee=res(memory="2Gi"))
    ssn, plugin, tasks = _reclaim_session(victim_queue=victim, victim_memory="1Gi")
    assert len(_victims(ssn, plugin, tasks, "r-0")) == 1


def test_reclaimable_counts_pods_in_what_a_queue_deserves() -> None:
    """As in Volcano every task requests a pod: a queue deserving pods deserves something of every task, so
    its tasks are judged on the dimensions it names (here none the tasks use): no victim."""
    victim = queue("victim", deserved=Resources({"pods": 10_000}))
    ssn, plugin, tasks = _reclaim_session(victim_queue=victim)
    assert _victims(ssn, plugin, tasks, "r-0") == []


def test_reclaimable_needs_a_shared_resource() -> None:
    ssn, plugin, tasks = _reclaim_session(more=job("gpu", "starved", 0, memory=None, gpu=1))
    assert _victims(ssn, plugin, tasks, "gpu-0") == []


def test_reclaimable_takes_a_victim_its_queue_deserves_nothing_of() -> None:
    victim = queue("victim", deserved=res(memory="1Gi"))
    ssn, plugin, tasks = _reclaim_session(victim_queue=victim)
    assert len(_victims(ssn, plugin, tasks, "r-0")) == 3


@pytest.mark.parametrize(
    ("request_cpu", "memory", "expected"),
    [
        (1, None, True),  # 0 + 1 <= 3 deserved
        (4, None, False),  # 4 > 3 deserved on its only dimension
        (4, "1Gi", True),  # ... but memory: 1Gi <= 4Gi deserved
        (7, "1Gi", False),  # beyond the real capability (6 cores)
    ],
)
def test_preemptive(request_cpu: int, memory: str | None, expected: bool) -> None:
    starved = queue("starved", deserved=res(cpu=3, memory="4Gi"))
    objects = [node("n1", cpu=6, memory="16Gi"), starved, *job("r", "starved", request_cpu, memory=memory)]
    ssn = session(objects, FLAT)
    plugin = ssn.plugins["capacity"]
    assert plugin.preemptive(ssn, ssn.queues["starved"], tasks_of(ssn)["r-0"]) is expected


def _tree_reclaim_session(level: int):
    """eng deserves 8 cores, its child dev 1 and holds 1. ops holds 3 above its 1 core, but its parent team
    is within the 4 it deserves; web, dev's sibling, holds 3 above its 1 too."""
    objects = [
        node("n1", cpu=16, memory="16Gi"),
        queue("eng", deserved=res(cpu=8)),
        queue("dev", parent="eng", deserved=res(cpu=1)),
        queue("web", parent="eng", deserved=res(cpu=1)),
        queue("team", deserved=res(cpu=4)),
        queue("ops", parent="team", deserved=res(cpu=1)),
        *job("held", "dev", 1, node_name="n1", phase="Running", memory=None),
        *job("v", "ops", 1, 1, 1, node_name="n1", phase="Running", memory=None),
        *job("w", "web", 1, 1, 1, node_name="n1", phase="Running", memory=None),
        *job("r", "dev", 1, memory=None),
    ]
    ssn = session(objects, tree_conf(level))
    return ssn, ssn.plugins["capacity"], tasks_of(ssn)


@pytest.mark.parametrize(("level", "expected"), [(0, False), (1, True)])
def test_preemptive_looks_at_ancestors_up_to_the_level(level: int, expected: bool) -> None:
    ssn, plugin, tasks = _tree_reclaim_session(level)
    assert plugin.preemptive(ssn, ssn.queues["dev"], tasks["r-0"]) is expected


@pytest.mark.parametrize(
    ("level", "prefix", "expected"),
    [
        (0, "v-", 2),  # ops is 2 above deserved
        (1, "v-", 0),  # ... but its parent team is not: no real contention between the subtrees
        (1, "w-", 2),  # web shares eng with dev: only web's own deserved matters
    ],
)
def test_reclaimable_in_a_tree(level: int, prefix: str, expected: int) -> None:
    ssn, plugin, tasks = _tree_reclaim_session(level)
    candidates = [t for name, t in sorted(tasks.items()) if name.startswith(prefix)]
    assert len(plugin.reclaimable(ssn, tasks["r-0"], candidates)) == expected


@pytest.mark.parametrize(("level", "expected"), [(0, 2), (1, 0)])
def test_no_reclaim_between_siblings_that_deserve_nothing_of_it(level: int, expected: int) -> None:
    """dev and scratch share eng; neither deserves cpu: at ancestorReclaimLevel 1 there is no contention."""
    objects = [
        node("n1", cpu=8),
        queue("eng"),
        queue("dev", parent="eng", deserved=res(memory="1Gi")),
        queue("scratch", parent="eng", deserved=res(memory="1Gi")),
        *job("s", "scratch", 1, 1, node_name="n1", phase="Running", memory=None),
        *job("r", "dev", 1, memory=None),
    ]
    ssn = session(objects, tree_conf(level))
    tasks = tasks_of(ssn)
    victims = ssn.plugins["capacity"].reclaimable(ssn, tasks["r-0"], [tasks["s-0"], tasks["s-1"]])
    assert len(victims) == expected


@pytest.mark.parametrize("capability", [None, res(cpu=0)])
def test_children_inherit_the_parents_capability(capability: Resources | None) -> None:
    """A child's guarantee beyond what its parent has left is still capped by the parent's capability,
    which the child inherits for cpu and memory when it sets none or <= 0, and for every other resource
    it does not name."""
    objects = [
        node("n1", cpu=8, gpu=4),
        queue("eng", capability=res(cpu=4, gpu=2)),
        queue("dev", parent="eng", capability=capability, guarantee=res(cpu=6, gpu=3)),
    ]
    ssn = session(objects, TREE)
    real = ssn.plugins["capacity"].tree.ledgers["dev"].real_capability
    assert real.get("cpu") == 4000 and real.get("nvidia.com/gpu") == 2000


def test_invalid_hierarchy_reclaims_nothing() -> None:
    objects = [node("n1", cpu=4), queue("x", parent="nowhere"), queue("q"), *job("a", "q", 1, node_name="n1")]
    objects += job("b", "q", 1)
    ssn = session(objects, TREE)
    plugin, tasks = ssn.plugins["capacity"], tasks_of(ssn)
    assert plugin.reclaimable(ssn, tasks["b-0"], [tasks["a-0"]]) == []
    assert not plugin.preemptive(ssn, ssn.queues["q"], tasks["b-0"])
    assert plugin.queue_figures(ssn) == {}


# --- with the reclaim action (actions/reclaim.py) ---------------------------------------------------


@pytest.mark.parametrize(
    ("deserved", "evicted"),
    [
        (res(cpu=3), ["default/large-0"]),  # test1 holds 3 cores above the 1 it deserves
        (None, []),  # test2 deserves nothing: it may not reclaim (not preemptive)
    ],
)
def test_reclaim_up_to_deserved(deserved, evicted: list[str]) -> None:
    objects = [
        node("n1", cpu=4),
        queue("test1", deserved=res(cpu=1)),
        queue("test2", deserved=deserved),
        *job("small", "test1", 1, node_name="n1", phase="Running"),
        *job("large", "test1", 3, node_name="n1", phase="Running"),
        *job("new", "test2", 3),
    ]
    scheduler_conf = conf(
        "enqueue, allocate, reclaim", ["priority", "gang", "conformance"], ["capacity", "predicates"]
    )
    assert session(objects, scheduler_conf).run().evictions == evicted
