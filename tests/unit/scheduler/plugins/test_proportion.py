"""proportion through real sessions: deserved, gates, enqueue, order, figures; reclaim hooks directly."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, queue, res, session

from contracts.resources import Resources
from services.scheduler.core.plugins.proportion import ProportionPlugin

CONF = conf("enqueue, allocate", ["proportion"])


def job(
    name: str, queue_name: str, *cpus: float, phase: str = "Inqueue", min_cpu: float | None = None, **kw: Any
):
    """A PodGroup with one 1Gi pod per entry of `cpus` (cores each), named `<name>-<i>`."""
    minimum = None if min_cpu is None else res(cpu=str(min_cpu))
    group = podgroup(
        name, queue=queue_name, phase=phase, min_resources=minimum, min_member=kw.pop("min_member", 1)
    )
    return [group] + [pod(f"{name}-{i}", name, cpu=str(c), **kw) for i, c in enumerate(cpus)]


def fit_reasons(ssn, job_name: str) -> set[str]:
    return {reason for reasons in ssn.jobs[f"default/{job_name}"].fit_errors.values() for reason in reasons}


# --- whole sessions ---------------------------------------------------------------------------------

CASES = [
    pytest.param(  # seed 003 (1): weights 1 and 3 on 4 cores, jobs of 1 and 3 cores: both fit their share
        [
            node("n1", cpu=4),
            queue("test1", 1),
            queue("test2", 3),
            *job("j1", "test1", 1),
            *job("j2", "test2", 3),
        ],
        {"j1-0", "j2-0"},
        {},
        {},
        id="seed-003-shares",
    ),
    pytest.param(  # seed 003 (2): a lone queue may use the whole cluster
        [node("n1", cpu=4), queue("test1", 1), *job("j1", "test1", 1), *job("j2", "test1", 3)],
        {"j1-0", "j2-0"},
        {},
        {},
        id="seed-003-lone-queue",
    ),
    pytest.param(  # seed 003 (3): capability cpu 2 caps the queue: only the 1-core job binds
        [
            node("n1", cpu=4),
            queue("capped", capability=res(cpu=2)),
            *job("j1", "capped", 1),
            *job("j2", "capped", 3),
        ],
        {"j1-0"},
        {"j2": "queue capped over deserved cpu"},
        {},
        id="seed-003-capability",
    ),
    pytest.param(  # Volcano case0: memory above deserved, a job asking only cpu still fits
        [
            node("n1", cpu=2, memory="2Gi"),
            node("n2", cpu=2, memory="2Gi"),
            queue("q1", capability=res(cpu=2, memory="2Gi")),
            queue("q2", capability=res(cpu=3, memory="3Gi")),
            *job("run1", "q1", 1, memory="2Gi", node_name="n1", phase="Running"),
            *job("run2", "q2", 2, memory="1Gi", node_name="n2", phase="Running"),
            *job("cpu-only", "q1", 1, memory=None),
        ],
        {"cpu-only-0"},
        {},
        {},
        id="only-requested-dimensions",
    ),
    pytest.param(  # a task above deserved on a dimension it requests waits, with the reason recorded
        [
            node("n1", cpu=4),
            queue("q1"),
            queue("q2"),
            *job("run", "q1", 2, node_name="n1", phase="Running"),
            *job("more", "q1", 1),
            *job("other", "q2", 2),
        ],
        {"other-0"},
        {"more": "queue q1 over deserved cpu"},
        {},
        id="deserved-caps-allocation",
    ),
    pytest.param(  # enqueue: minResources above the real capability keep the PodGroup Pending
        [
            node("n1", cpu=4),
            queue("capped", capability=res(cpu=2)),
            *job("big", "capped", 3, phase="Pending", min_cpu=3),
            *job("small", "capped", 1, phase="Pending", min_cpu=1),
        ],
        {"small-0"},
        {},
        {"big": "Pending", "small": "Inqueue"},
        id="enqueue-capability",
    ),
    pytest.param(  # enqueue: admitted minResources count for the next job of the queue
        [
            node("n1", cpu=8),
            queue("capped", capability=res(cpu=3)),
            *job("first", "capped", 2, phase="Pending", min_cpu=2),
            *job("second", "capped", 2, phase="Pending", min_cpu=2),
        ],
        {"first-0"},
        {},
        {"first": "Inqueue", "second": "Pending"},
        id="enqueue-reserves-admitted",
    ),
    pytest.param(  # enqueue: a Closed queue admits nothing that declares minResources
        [node("n1", cpu=4), queue("shut", state="Closed"), *job("j", "shut", 1, phase="Pending", min_cpu=1)],
        set(),
        {},
        {"j": "Pending"},
        id="enqueue-closed-queue",
    ),
    pytest.param(  # an Inqueue job's bound tasks are not counted twice (allocated and reserved)
        [
            node("n1", cpu=4),
            queue("q", capability=res(cpu=4)),
            *job("bound", "q", 1, 1, 1, node_name="n1", phase="Inqueue", min_cpu=3, min_member=3),
            *job("next", "q", 1, phase="Pending", min_cpu=1),
        ],
        {"next-0"},
        {},
        {"next": "Inqueue"},
        id="enqueue-no-double-count",
    ),
    pytest.param(  # what a job holds above its minimum (elastic) does not block admission
        [
            node("n1", cpu=4),
            queue("q", capability=res(cpu=3)),
            *job("elastic", "q", 1, 1, node_name="n1", phase="Running", min_cpu=1),
            *job("next", "q", 2, phase="Pending", min_cpu=2),
        ],
        set(),  # admitted, but 2 held + 2 exceed the 3 cores it deserves
        {"next": "queue q over deserved cpu"},
        {"next": "Inqueue"},
        id="enqueue-elastic",
    ),
]


@pytest.mark.parametrize(("objects", "binds", "reasons", "phases"), CASES)
def test_sessions(objects, binds: set[str], reasons: dict[str, str], phases: dict[str, str]) -> None:
    ssn = session(objects, CONF)
    result = ssn.run()
    assert {key.split("/")[1] for key in result.binds} == binds
    for job_name, reason in reasons.items():
        assert reason in fit_reasons(ssn, job_name)
    for job_name, phase in phases.items():
        assert result.podgroups[f"default/{job_name}"].phase == phase


def test_closed_queue_allocates_nothing() -> None:
    ssn = session([node("n1", cpu=4), queue("shut", state="Closed"), *job("j", "shut", 1)], CONF)
    assert ssn.run().binds == {}
    assert fit_reasons(ssn, "j") == {"queue shut is Closed"}


def test_lower_share_goes_first() -> None:
    objects = [
        node("n1", cpu=8),
        queue("busy"),
        queue("idle"),
        *job("held", "busy", 1, node_name="n1", phase="Running"),
        *job("busy-next", "busy", 1),
        *job("idle-next", "idle", 1),
    ]
    result = session(objects, CONF).run()
    assert [b.task for plan in result.plans for b in plan.binds] == [
        "default/idle-next-0",
        "default/busy-next-0",
    ]


def test_queue_priority_goes_before_share() -> None:
    objects = [
        node("n1", cpu=8),
        queue("busy", priority=10),
        queue("idle"),
        *job("held", "busy", 1, node_name="n1", phase="Running"),
        *job("busy-next", "busy", 1),
        *job("idle-next", "idle", 1),
    ]
    result = session(objects, CONF).run()
    assert [b.task for plan in result.plans for b in plan.binds] == [
        "default/busy-next-0",
        "default/idle-next-0",
    ]


def test_queue_figures() -> None:
    objects = [node("n1", cpu=4, memory="8Gi"), queue("test1", 1), queue("test2", 3)]
    objects += job("j1", "test1", 4) + job("j2", "test2", 1)
    result = session(objects, CONF).run()
    test1, test2 = result.queues["test1"], result.queues["test2"]
    # test2 is met at 1 core in round one; its unused part goes to test1 in round two
    assert test2.deserved == {"cpu": 1000, "memory": 1024**3 * 1000}
    assert test1.deserved == {"cpu": 3000, "memory": 1024**3 * 1000}
    assert test2.allocated == {"cpu": 1000, "memory": 1024**3 * 1000}
    assert test2.share == pytest.approx(1.0)
    assert test1.allocated == {} and test1.share == 0.0
    assert result.queues["default"].deserved == {}


# --- gates on a session ---------------------------------------------------------------------------


def _overused_session():
    """8 cores, 8Gi and 4 pod slots, halved between two queues wanting more: busy already holds its half of
    every dimension, pods included (Volcano counts one pod per task; with the 110 default slots a queue
    with pending tasks would deserve a pod for each and never be overused)."""
    objects = [
        node("n1", cpu=8, memory="8Gi", pods=4),
        queue("busy"),
        queue("other"),
        *job("held", "busy", 2, 2, memory="2Gi", node_name="n1", phase="Running", min_member=2),
        *job("busy-next", "busy", 1, 1, min_member=2),
        *job("other-next", "other", 1, 1, 1, 1, min_member=4),
    ]
    return objects, session(objects, CONF)


def test_overused_counts_pods_like_volcano() -> None:
    _, ssn = _overused_session()
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, ProportionPlugin)
    busy = ssn.queues["busy"]
    assert plugin.ledgers["busy"].deserved == Resources(
        {"cpu": 4000, "memory": 4 * 1024**3 * 1000, "pods": 2000}
    )
    assert plugin.overused(ssn, busy)
    assert not plugin.overused(ssn, ssn.queues["other"])


def test_overused_queue_is_skipped_without_trying_its_jobs() -> None:
    _, ssn = _overused_session()
    ssn.run()
    assert ssn.jobs["default/busy-next"].fit_errors == {}
    placed = {t.name: t.node for t in ssn.jobs["default/busy-next"].tasks.values()}
    assert placed == {"busy-next-0": "", "busy-next-1": ""}


def test_allocate_events_update_share_and_deallocate_restores_it() -> None:
    ssn = session([node("n1", cpu=4), queue("q"), *job("j", "q", 1, 1)], CONF)
    plugin = ssn.plugins["proportion"]
    ledger = plugin.ledgers["q"]
    task = next(iter(ssn.jobs["default/j"].tasks.values()))
    stmt = ssn.statement()
    stmt.allocate(task, 0)
    assert ledger.allocated["cpu"] == 1000 and ledger.allocated["pods"] == 1000
    assert ledger.share == pytest.approx(0.5)
    stmt.discard()
    assert ledger.allocated.get("cpu", 0) == 0 and ledger.share == 0.0


# --- reclaim extension points (the reclaim action calls them) ---------------------------------------


def _seed_reclaim_session():
    """Seed 003 (2): test1 runs jobs of 1 and 3 cores; test2 (weight 3) wants 3 cores: test1 deserves 1."""
    objects = [
        node("n1", cpu=4),
        queue("test1", 1),
        queue("test2", 3),
        *job("small", "test1", 1, node_name="n1", phase="Running"),
        *job("large", "test1", 3, node_name="n1", phase="Running"),
        *job("new", "test2", 3),
    ]
    ssn = session(objects, CONF)
    tasks = {t.name: t for t in ssn.all_tasks()}
    return ssn, ssn.plugins["proportion"], tasks


def test_deserved_after_test2_arrives() -> None:
    _, plugin, _ = _seed_reclaim_session()
    assert plugin.ledgers["test1"].deserved.get("cpu") == 1000
    assert plugin.ledgers["test2"].deserved.get("cpu") == 3000


@pytest.mark.parametrize(
    ("order", "victims"),
    [
        (["small-0", "large-0"], ["small-0", "large-0"]),  # still over deserved after the small one
        (["large-0", "small-0"], ["large-0"]),  # back at deserved after the large one
    ],
)
def test_reclaimable_takes_victims_while_their_queue_is_over_deserved(order, victims) -> None:
    ssn, plugin, tasks = _seed_reclaim_session()
    chosen = plugin.reclaimable(ssn, tasks["new-0"], [tasks[name] for name in order])
    assert [t.name for t in chosen] == victims


def test_reclaimable_spares_a_queue_within_deserved() -> None:
    ssn, plugin, tasks = _seed_reclaim_session()
    assert plugin.reclaimable(ssn, tasks["small-0"], [tasks["new-0"]]) == []


@pytest.mark.parametrize(
    ("queue_name", "task", "expected"),
    [("test2", "new-0", True), ("test1", "small-0", False)],
)
def test_preemptive_while_below_deserved(queue_name: str, task: str, expected: bool) -> None:
    ssn, plugin, tasks = _seed_reclaim_session()
    assert plugin.preemptive(ssn, ssn.queues[queue_name], tasks[task]) is expected


def test_preemptive_refuses_a_closed_queue() -> None:
    ssn = session([node("n1", cpu=4), queue("shut", state="Closed"), *job("j", "shut", 1)], CONF)
    task = next(iter(ssn.jobs["default/j"].tasks.values()))
    assert not ssn.plugins["proportion"].preemptive(ssn, ssn.queues["shut"], task)


def test_enqueue_vote_is_volcanos_formula() -> None:
    """minReq + allocated + inqueue - elastic <= realCapability, on the dimensions minReq asks for."""
    objects = [
        node("n1", cpu=8),
        queue("q", capability=res(cpu=4)),
        *job("running", "q", 1, 1, node_name="n1", phase="Running", min_cpu=1),  # 1 core elastic
        *job("waiting", "q", 1, phase="Inqueue", min_cpu=1),  # 1 core reserved
    ]
    ssn = session(objects, CONF)
    plugin = ssn.plugins["proportion"]
    fits = ssn.jobs["default/waiting"]
    ledger = plugin.ledgers["q"]
    # 2 allocated + 1 reserved - 1 elastic = 2 cores taken of 4
    assert ledger.enqueue_shortfall(res(cpu=2)) == []
    assert ledger.enqueue_shortfall(Resources({"cpu": 2001})) == ["cpu"]
    assert ledger.enqueue_shortfall(res(memory="100Gi")) == ["memory"]
    plugin.job_enqueued(ssn, fits)
    assert ledger.enqueue_shortfall(res(cpu=2)) == ["cpu"]
    assert ledger.enqueue_shortfall(res(cpu=1)) == []


# --- with the reclaim action (actions/reclaim.py) ---------------------------------------------------


@pytest.mark.parametrize(
    ("reclaimable", "evicted", "pipelined"),
    [
        (None, ["default/large-0"], {"default/new-0": "n1"}),  # seed 003 (2): test1 gives back its 3 cores
        (False, [], {}),  # seed 003 (4): a queue with reclaimable: false keeps what it holds
    ],
)
def test_reclaim_brings_a_queue_back_to_deserved(reclaimable, evicted: list[str], pipelined: dict[str, str]):
    objects = [
        node("n1", cpu=4),
        queue("test1", 1, reclaimable=reclaimable),
        queue("test2", 3),
        *job("small", "test1", 1, node_name="n1", phase="Running"),
        *job("large", "test1", 3, node_name="n1", phase="Running"),
        *job("new", "test2", 3),
    ]
    scheduler_conf = conf(
        "enqueue, allocate, reclaim", ["priority", "gang", "conformance"], ["proportion", "predicates"]
    )
    result = session(objects, scheduler_conf).run()
    assert result.evictions == evicted
    assert result.pipelined == pipelined
