"""gang plugin: validity, readiness, pipelining, starving, gang-safe victims, job order, close conditions."""

from __future__ import annotations

import pytest
from support.builders import conf, gang, node, pod, podgroup, queue, run, session

from contracts.objects import PodGroupCondition
from services.scheduler.core.framework.plugin import Vote
from services.scheduler.core.model.task import TaskStatus

GANG_ONLY = conf("allocate", ["gang"])
GANG_TIER = conf("allocate", ["priority", "gang", "conformance"], ["drf"])
BUSY = pod("busy", node_name="n1", cpu=2, memory=None)  # a pod of no PodGroup holding 2 cpus of n1


def _condition(result, key: str, kind: str) -> PodGroupCondition | None:
    return next((c for c in result.podgroups[key].conditions if c.type == kind), None)


# --- whole sessions -------------------------------------------------------------------------------------
SESSION_CASES = [
    pytest.param(
        [node("n1", cpu=4), BUSY, *gang("g", 3, cpu=1)],
        {
            "binds": 0,
            "phase": "Inqueue",
            "reason": "InsufficientClusterCapacity",
            "message": "1/3 tasks in gang unschedulable: 1 node: insufficient cpu; cluster lacks cpu 1",
        },
        id="gang-of-3-fits-2",
    ),
    pytest.param(
        # the cluster holds 2 cpus in all: the gang can never fit, however long it waits
        [node("n1", cpu=2), *gang("g", 3, cpu=1)],
        {
            "binds": 0,
            "phase": "Inqueue",
            "reason": "NeverFits",
            "message": "1/3 tasks in gang unschedulable: 1 node: insufficient cpu; "
            "can never fit: its minimum asks cpu 3 in all, the whole cluster has cpu 2",
        },
        id="gang-larger-than-the-cluster",
    ),
    pytest.param(
        # the third task finds no node with room: 3 nodes lack cpu, the gpu-less one lacks the gpu
        [
            node("n1", cpu=1, gpu=1),
            node("n2", cpu=1, gpu=1),
            node("n3", cpu=8),
            node("n4", cpu=1, gpu=1),
            pod("busy", node_name="n4", cpu=1, memory=None),
            *gang("g", 3, cpu=1, gpu=1),
        ],
        {
            "binds": 0,
            "phase": "Inqueue",
            "reason": "InsufficientClusterCapacity",
            "message": "1/3 tasks in gang unschedulable: 3 nodes: insufficient cpu; "
            "1 node: insufficient nvidia.com/gpu; cluster lacks cpu 1, nvidia.com/gpu 1",
        },
        id="per-reason-node-counts",
    ),
    pytest.param(
        [node("n1", cpu=4), *gang("g", 3, cpu=1)],
        {"binds": 3, "phase": "Inqueue", "scheduled": True},
        id="gang-fits",
    ),
    pytest.param(
        [node("n1", cpu=4), podgroup("g", min_member=3), pod("g-w-0", "g"), pod("g-w-1", "g")],
        {
            "binds": 0,
            "phase": "Inqueue",
            "reason": "NotEnoughTasks",
            "message": "Not enough valid tasks for gang-scheduling, valid: 2, min: 3",
        },
        id="fewer-pods-than-min-member",
    ),
    pytest.param(
        [
            node("n1", cpu=8),
            podgroup("g", min_member=3, min_task_member={"ps": 1, "worker": 2}),
            pod("g-ps-0", "g", role="ps"),
            pod("g-worker-0", "g", role="worker"),
            pod("g-x-0", "g", role="x"),
        ],
        {"binds": 0, "phase": "Inqueue", "reason": "NotEnoughPodsOfTask"},
        id="role-below-min-task-member",
    ),
    pytest.param(
        # minMember 1 < 1 + 2: per-role minimums are not checked at all
        [
            node("n1", cpu=8),
            podgroup("g", min_member=1, min_task_member={"ps": 1, "worker": 2}),
            pod("g-ps-0", "g", role="ps"),
        ],
        {"binds": 1, "phase": "Inqueue", "scheduled": True},
        id="role-check-skipped-when-min-member-below-role-sum",
    ),
    pytest.param(
        # 2 of 3 already running, the third cannot fit: running + unschedulable this session -> Unknown
        [
            node("n1", cpu=4),
            BUSY,
            podgroup("g", min_member=3),
            pod("g-w-0", "g", node_name="n1"),
            pod("g-w-1", "g", node_name="n1"),
            pod("g-w-2", "g"),
        ],
        {
            "binds": 0,
            "phase": "Unknown",
            "reason": "InsufficientClusterCapacity",
            "message": "1/3 tasks in gang unschedulable: 1 node: insufficient cpu; cluster lacks cpu 1",
        },
        id="running-gang-short-is-unknown",
    ),
    pytest.param(
        # only short because a scheduled pod is terminating: gang does not call it unschedulable, so the
        # phase stays Running (the NotEnoughTasks condition is job_valid's, written by allocate)
        [
            node("n1", cpu=4),
            podgroup("g", min_member=2, phase="Running"),
            pod("g-w-0", "g", node_name="n1"),
            pod("g-w-1", "g", node_name="n1", deleting=True),
        ],
        {"binds": 0, "phase": "Running", "reason": "NotEnoughTasks"},
        id="releasing-pod-skips-condition",
    ),
    pytest.param(
        # a terminating foreign pod frees the node later: both tasks are pipelined, nothing binds
        [node("n1", cpu=2), pod("old", node_name="n1", cpu=2, deleting=True), *gang("g", 2, cpu=1)],
        {
            "binds": 0,
            "pipelined": 2,
            "phase": "Inqueue",
            "reason": "NotEnoughResources",
            "message": "2/2 tasks in gang unschedulable: "
            "2 pipelined task(s) waiting for resources to be released",
        },
        id="pipelined-gang",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), SESSION_CASES)
def test_gang_in_session(objects, expected):
    result = run([queue("default"), *objects], GANG_TIER)
    assert len(result.binds) == expected["binds"]
    assert len(result.pipelined) == expected.get("pipelined", 0)
    assert result.podgroups["default/g"].phase == expected["phase"]
    unschedulable = _condition(result, "default/g", "Unschedulable")
    if expected.get("scheduled"):
        assert unschedulable is None
        scheduled = _condition(result, "default/g", "Scheduled")
        assert scheduled is not None and scheduled.reason == "tasks in gang are ready to be scheduled"
        return
    assert unschedulable is not None
    assert (unschedulable.reason, unschedulable.status, unschedulable.transition_id) == (
        expected["reason"],
        "True",
        result.session_id,
    )
    if "message" in expected:
        assert unschedulable.message == expected["message"]


def test_not_ready_job_goes_before_ready_job():
    # "ready" was created first and would win the creation-time fallback; gang puts it after "short"
    objects = [
        queue("default"),
        node("n1", cpu=2),
        podgroup("ready", min_member=1),
        pod("ready-w-0", "ready", node_name="n1"),
        pod("ready-w-1", "ready"),
        podgroup("short", min_member=1),
        pod("short-w-0", "short"),
    ]
    assert run(objects, GANG_ONLY).binds == {"default/short-w-0": "n1"}
    assert run(objects, conf("allocate", ["priority"])).binds == {"default/ready-w-1": "n1"}

    ssn = session(objects, GANG_ONLY)
    plugin = ssn.plugins["gang"]
    ready, short = ssn.jobs["default/ready"], ssn.jobs["default/short"]
    assert plugin.job_order(ssn, short, ready) == -1
    assert plugin.job_order(ssn, ready, short) == 1
    assert plugin.job_order(ssn, ready, ready) == 0
    assert ssn.job_order_fn(short, ready) and not ssn.job_order_fn(ready, short)


# --- extension points on a session -------------------------------------------------------------------------
def _job_with(states: list[tuple[str, str]], min_member: int, min_task_member=None):
    """A session holding one job whose tasks are in the given (role, state) pairs; "allocated" and
    "pipelined" are produced through a statement, "besteffort" is a pending pod with no request."""
    objects = [
        queue("default"),
        node("n1", cpu=64, memory="64Gi"),
        podgroup("j", min_member=min_member, min_task_member=min_task_member),
    ]
    placed = []
    for i, (role, state) in enumerate(states):
        name = f"j-{role}-{i}"
        kwargs = {"role": role}
        if state in ("running", "bound", "succeeded", "failed"):
            kwargs["node_name"] = "n1"
            kwargs["phase"] = {"running": "Running", "bound": "Pending"}.get(state, state.capitalize())
        if state == "besteffort":
            kwargs.update(cpu=None, memory=None)
        objects.append(pod(name, "j", **kwargs))
        if state in ("allocated", "pipelined"):
            placed.append((f"default-{name}", state))
    ssn = session(objects, GANG_ONLY)
    job = ssn.jobs["default/j"]
    stmt = ssn.statement()
    for uid, state in placed:
        task = job.tasks[uid]
        (stmt.allocate if state == "allocated" else stmt.pipeline)(task, 0)
    return ssn, job


GATE_CASES = [
    # states, minMember, minTaskMember -> valid reason, ready, pipelined, starving
    pytest.param([("w", "running")] * 3, 3, None, None, True, Vote.PERMIT, False, id="all-running"),
    pytest.param(
        [("w", "running"), ("w", "running"), ("w", "pending")],
        3,
        None,
        None,
        False,
        Vote.REJECT,
        True,
        id="one-pending",
    ),
    pytest.param(
        [("w", "running"), ("w", "pipelined"), ("w", "pending")],
        2,
        None,
        None,
        False,
        Vote.PERMIT,
        False,
        id="pipelined-counts-for-pipelined-and-starving",
    ),
    pytest.param(
        [("w", "allocated"), ("w", "besteffort")],
        2,
        None,
        None,
        True,
        Vote.PERMIT,
        True,
        id="pending-best-effort-counts-as-ready",
    ),
    pytest.param(
        [("w", "succeeded"), ("w", "running"), ("w", "failed")],
        2,
        None,
        None,
        True,
        Vote.PERMIT,
        False,
        id="succeeded-is-ready-failed-is-not-valid",
    ),
    pytest.param(
        [("w", "running"), ("w", "failed")],
        2,
        None,
        "NotEnoughTasks",
        False,
        Vote.REJECT,
        True,
        id="failed-task-not-valid",
    ),
    pytest.param(
        [("ps", "running"), ("w", "running"), ("w", "pending")],
        3,
        {"ps": 1, "w": 2},
        None,
        False,
        Vote.REJECT,
        True,
        id="role-short",
    ),
    pytest.param(
        [("ps", "pending"), ("w", "running"), ("w", "running"), ("w", "running")],
        3,
        {"ps": 1, "w": 2},
        None,
        False,
        Vote.REJECT,
        False,
        id="count-met-role-not",
    ),
    pytest.param(
        [("ps", "pipelined"), ("w", "running"), ("w", "running")],
        3,
        {"ps": 1, "w": 2},
        None,
        False,
        Vote.PERMIT,
        False,
        id="role-met-by-pipelined",
    ),
    pytest.param(
        [("ps", "running"), ("w", "running")],
        2,
        {"ps": 1, "w": 2},
        None,
        True,
        Vote.PERMIT,
        False,
        id="role-checks-skipped-min-below-sum",
    ),
    pytest.param(
        [("ps", "running"), ("w", "running"), ("x", "running")],
        3,
        {"ps": 1, "w": 2},
        "NotEnoughPodsOfTask",
        False,
        Vote.REJECT,
        False,
        id="role-invalid",
    ),
]


@pytest.mark.parametrize(
    ("states", "min_member", "min_task_member", "invalid", "ready", "pipelined", "starving"), GATE_CASES
)
def test_job_gates(states, min_member, min_task_member, invalid, ready, pipelined, starving):
    ssn, job = _job_with(states, min_member, min_task_member)
    plugin = ssn.plugins["gang"]
    result = plugin.job_valid(ssn, job)
    assert (result.reason if result is not None else None) == invalid
    assert plugin.job_ready(ssn, job) is ready
    assert plugin.job_pipelined(ssn, job) == pipelined
    assert plugin.job_starving(ssn, job) is starving
    assert ssn.job_ready_fn(job) is ready


def test_not_enough_tasks_message():
    ssn, job = _job_with([("w", "pending")] * 2, 3)
    result = ssn.plugins["gang"].job_valid(ssn, job)
    assert result is not None and not result.passed
    assert result.message == "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"


def _victim_session():
    objects = [
        queue("default"),
        node("n1", cpu=16, memory="16Gi"),
        podgroup("big", min_member=2),
        podgroup("one", min_member=1),
        podgroup("me", min_member=1),
        pod("me-w-0", "me"),
    ]
    objects += [pod(f"big-w-{i}", "big", node_name="n1") for i in range(4)]
    objects += [pod("one-w-0", "one", node_name="n1")]
    return session(objects, conf("allocate", ["gang"]))


def test_victims_keep_each_gang_at_min_member():
    ssn = _victim_session()
    plugin = ssn.plugins["gang"]
    preemptor = ssn.jobs["default/me"].tasks["default-me-w-0"]
    big = [ssn.jobs["default/big"].tasks[f"default-big-w-{i}"] for i in range(4)]
    one = ssn.jobs["default/one"].tasks["default-one-w-0"]
    # big has 4 ready and needs 2: only 2 of its tasks may go, in the order offered; one is at its minimum
    victims = plugin.preemptable(ssn, preemptor, [big[3], one, big[1], big[0], big[2]])
    assert victims == [big[3], big[1]]
    assert plugin.reclaimable(ssn, preemptor, [one, big[0]]) == [big[0]]
    assert ssn.preemptable_fn(preemptor, big) == big[:2]
    # nothing allowed: the (only) tier vetoes, so the session answer is empty
    assert plugin.preemptable(ssn, preemptor, [one]) == []
    assert ssn.preemptable_fn(preemptor, [one]) == []


# --- session close ----------------------------------------------------------------------------------------
def test_close_aggregates_fit_errors_over_tasks():
    objects = [queue("default"), node("n1", cpu=8), podgroup("g", min_member=6)]
    objects += [pod(f"g-w-{i}", "g", node_name="n1" if i < 3 else "") for i in range(6)]
    ssn = session(objects, GANG_ONLY)
    job = ssn.jobs["default/g"]
    pending = job.pending_tasks()
    gpu, selector = "insufficient nvidia.com/gpu", "node(s) didn't match nodeSelector"
    job.record_fit_errors(pending[0], {gpu: 3, selector: 1})
    job.record_fit_errors(pending[1], {gpu: 2, selector: 2})
    job.record_fit_errors(pending[2], {"queue q1 over capability cpu": 0})
    ssn.plugins["gang"].on_session_close(ssn)
    condition = job.new_conditions["Unschedulable"]
    assert condition.message == (
        "3/6 tasks in gang unschedulable: 3 nodes: insufficient nvidia.com/gpu; "
        "2 nodes: node(s) didn't match nodeSelector; queue q1 over capability cpu"
    )
    # reasons recorded by hand, not met by feasible_nodes: nothing says what they are about
    assert (condition.reason, condition.transition_id) == ("NotEnoughResources", ssn.uid)
    assert job.unschedulable_this_session


@pytest.mark.parametrize(
    ("actions", "phase", "fit_error", "detail"),
    [
        ("allocate", "Inqueue", "", "not attempted this session"),
        ("allocate", "Inqueue", "queue gone not found", "queue gone not found"),
        ("enqueue, allocate", "Pending", "", "podgroup not admitted by enqueue yet"),
    ],
)
def test_close_without_fit_errors_says_why(actions, phase, fit_error, detail):
    objects = [
        queue("default"),
        node("n1"),
        podgroup("g", min_member=2, phase=phase),
        pod("g-w-0", "g"),
        pod("g-w-1", "g"),
    ]
    ssn = session(objects, conf(actions, ["gang"]))
    job = ssn.jobs["default/g"]
    job.job_fit_error = fit_error
    ssn.plugins["gang"].on_session_close(ssn)
    assert job.new_conditions["Unschedulable"].message == f"2/2 tasks in gang unschedulable: {detail}"


def test_close_keeps_job_valid_condition():
    objects = [queue("default"), node("n1"), podgroup("g", min_member=3), pod("g-w-0", "g", node_name="n1")]
    ssn = session(objects, GANG_ONLY)
    job = ssn.jobs["default/g"]
    earlier = PodGroupCondition("Unschedulable", transition_id=ssn.uid, reason="NotEnoughTasks", message="m")
    job.new_conditions["Unschedulable"] = earlier
    ssn.plugins["gang"].on_session_close(ssn)
    assert job.new_conditions["Unschedulable"] is earlier
    assert job.unschedulable_this_session


def test_close_marks_ready_job_scheduled_and_skips_empty_jobs():
    ssn = session(
        [queue("default"), node("n1"), podgroup("g"), pod("g-w-0", "g", node_name="n1"), podgroup("empty")],
        GANG_ONLY,
    )
    ssn.plugins["gang"].on_session_close(ssn)
    job = ssn.jobs["default/g"]
    assert set(job.new_conditions) == {"Scheduled"}
    assert job.new_conditions["Scheduled"].transition_id == ssn.uid
    assert not job.unschedulable_this_session
    assert ssn.jobs["default/empty"].new_conditions == {}


def test_close_skips_gang_short_only_by_terminating_pods():
    objects = [
        queue("default"),
        node("n1"),
        podgroup("g", min_member=2, phase="Running"),
        pod("g-w-0", "g", node_name="n1"),
        pod("g-w-1", "g", node_name="n1", deleting=True),
    ]
    ssn = session(objects, GANG_ONLY)
    ssn.plugins["gang"].on_session_close(ssn)
    job = ssn.jobs["default/g"]
    assert job.new_conditions == {}
    assert not job.unschedulable_this_session


def test_discarded_allocation_counts_as_schedulable():
    # Volcano's LastTransaction: a pending task whose last (discarded) placement was an allocation could
    # be scheduled; a pipelined one could not
    ssn, job = _job_with([("w", "pending")] * 3, 3)
    tasks = list(job.tasks.values())
    stmt = ssn.statement()
    stmt.allocate(tasks[0], 0)
    stmt.pipeline(tasks[1], 0)
    stmt.discard()
    assert all(t.status == TaskStatus.PENDING for t in tasks)
    ssn.plugins["gang"].on_session_close(ssn)
    assert job.new_conditions["Unschedulable"].message.startswith("2/3 tasks in gang unschedulable")
