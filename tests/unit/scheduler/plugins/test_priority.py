"""priority plugin: task and job order, preemption victims, starving."""

from __future__ import annotations

import pytest
from support.builders import conf, node, pod, podgroup, priority_class, queue, run, session

from services.scheduler.core.framework.plugin import implements

PRIORITY = conf("allocate", ["priority"])
CLASSES = [priority_class("low", 10), priority_class("mid", 50), priority_class("high", 100)]


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        # the pod with the higher index (placed first by the fallback order) loses to the higher priority
        pytest.param({"j-w-0": 1, "j-w-1": 10}, "default/j-w-1", id="higher-priority-task-first"),
        pytest.param({"j-w-0": 10, "j-w-1": 1}, "default/j-w-0", id="lower-index-with-higher-priority"),
        pytest.param({"j-w-0": 5, "j-w-1": 5}, "default/j-w-0", id="tie-falls-back-to-index"),
    ],
)
def test_task_order_in_session(priorities, expected):
    objects = [queue("default"), node("n1", cpu=1), podgroup("j", min_member=1)]
    objects += [pod(name, "j", priority=p) for name, p in priorities.items()]
    assert run(objects, PRIORITY).binds == {expected: "n1"}


def test_task_priority_annotation_overrides_pod_priority():
    objects = [
        queue("default"),
        node("n1", cpu=1),
        podgroup("j", min_member=1),
        pod("j-w-0", "j", priority=100, annotations={"volcano.sh/task-priority": "1"}),
        pod("j-w-1", "j", priority=50),
    ]
    ssn = session(objects, PRIORITY)
    tasks = ssn.jobs["default/j"].tasks
    first, second = tasks["default-j-w-0"], tasks["default-j-w-1"]
    assert ssn.plugins["priority"].task_order(ssn, second, first) == -1
    assert run(objects, PRIORITY).binds == {"default/j-w-1": "n1"}


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        # (name, priority class) in creation order; one slot
        pytest.param([("a", "low"), ("b", "high")], "default/b-w-0", id="high-created-later-wins"),
        pytest.param([("a", "mid"), ("b", "low")], "default/a-w-0", id="high-created-first-wins"),
        pytest.param([("a", ""), ("b", "low")], "default/b-w-0", id="no-class-is-priority-zero"),
        pytest.param([("a", "mid"), ("b", "mid")], "default/a-w-0", id="tie-falls-back-to-creation"),
    ],
)
def test_job_order_in_session(jobs, expected):
    objects = [queue("default"), node("n1", cpu=1), *CLASSES]
    for name, klass in jobs:
        objects += [podgroup(name, min_member=1, priority_class=klass), pod(f"{name}-w-0", name)]
    assert run(objects, PRIORITY).binds == {expected: "n1"}


def _preempt_session():
    objects = [
        queue("default"),
        node("n1", cpu=32, memory="32Gi"),
        *CLASSES,
        podgroup("me", priority_class="mid"),
        pod("me-w-0", "me", priority=5),
        *(pod(f"me-w-{i}", "me", node_name="n1", priority=p) for i, p in ((1, 1), (2, 5), (3, 9))),
    ]
    for name, klass in (("lo", "low"), ("eq", "mid"), ("hi", "high")):
        objects += [podgroup(name, priority_class=klass), pod(f"{name}-w-0", name, node_name="n1")]
    return session(objects, PRIORITY)


@pytest.mark.parametrize(
    ("candidates", "victims"),
    [
        pytest.param(["lo-w-0", "eq-w-0", "hi-w-0"], ["lo-w-0"], id="only-lower-priority-jobs"),
        pytest.param(["me-w-1", "me-w-2", "me-w-3"], ["me-w-1"], id="same-job-lower-task-priority"),
        pytest.param(["hi-w-0", "me-w-1", "lo-w-0"], ["me-w-1", "lo-w-0"], id="mixed-keeps-order"),
        pytest.param(["eq-w-0", "me-w-2"], [], id="nothing-lower"),
    ],
)
def test_preemptable(candidates, victims):
    ssn = _preempt_session()
    by_name = {t.name: t for t in ssn.all_tasks()}
    preemptor = by_name["me-w-0"]
    plugin = ssn.plugins["priority"]
    answer = plugin.preemptable(ssn, preemptor, [by_name[n] for n in candidates])
    assert [t.name for t in answer] == victims
    assert [t.name for t in ssn.preemptable_fn(preemptor, [by_name[n] for n in candidates])] == victims


def test_preemptor_without_job_evicts_nothing():
    ssn = _preempt_session()
    by_name = {t.name: t for t in ssn.all_tasks()}
    orphan = by_name["me-w-0"]
    orphan.job = "default/gone"
    assert ssn.plugins["priority"].preemptable(ssn, orphan, [by_name["lo-w-0"]]) == []


def test_priority_does_not_filter_reclaim():
    ssn = _preempt_session()
    assert not implements(ssn.plugins["priority"], "reclaimable")
    by_name = {t.name: t for t in ssn.all_tasks()}
    # no reclaimable plugin anywhere: the session answer is empty (nothing vouches for a victim)
    assert ssn.reclaimable_fn(by_name["me-w-0"], [by_name["hi-w-0"]]) == []


@pytest.mark.parametrize(
    ("phases", "starving"),
    [
        pytest.param(["Running", "Running"], False, id="all-placed"),
        pytest.param(["Running", None], True, id="one-pending"),
        # Volcano counts every task, so a failed one keeps the job starving
        pytest.param(["Running", "Failed"], True, id="failed-task-counts"),
        pytest.param(["Succeeded", "Running"], False, id="succeeded-is-ready"),
    ],
)
def test_job_starving(phases, starving):
    objects = [queue("default"), node("n1"), podgroup("j", min_member=1)]
    for i, phase in enumerate(phases):
        objects.append(pod(f"j-w-{i}", "j", node_name="n1" if phase else "", phase=phase))
    ssn = session(objects, PRIORITY)
    job = ssn.jobs["default/j"]
    assert ssn.plugins["priority"].job_starving(ssn, job) is starving
    assert ssn.job_starving_fn(job) is starving


def test_pipelined_task_is_not_starving():
    ssn = session([queue("default"), node("n1"), podgroup("j"), pod("j-w-0", "j")], PRIORITY)
    job = ssn.jobs["default/j"]
    assert ssn.job_starving_fn(job)
    ssn.statement().pipeline(job.pending_tasks()[0], 0)
    assert not ssn.job_starving_fn(job)


def test_starving_combines_with_gang_in_one_tier():
    # gang: 1 running >= minMember 1 is not starving; priority: a task is still pending. Same tier -> AND
    objects = [
        queue("default"),
        node("n1"),
        podgroup("j", min_member=1),
        pod("j-w-0", "j", node_name="n1"),
        pod("j-w-1", "j"),
    ]
    job_key = "default/j"
    same_tier = session(objects, conf("allocate", ["priority", "gang"]))
    assert not same_tier.job_starving_fn(same_tier.jobs[job_key])
    priority_first = session(objects, conf("allocate", ["priority"], ["gang"]))
    assert priority_first.job_starving_fn(priority_first.jobs[job_key])
