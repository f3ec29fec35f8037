"""A session that places only the PodGroups its replica owns: the whole cluster stays in the model (queue
shares, victims), the work follows the owned pending pods."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.builders import conf, gang, node, pod, podgroup, priority_class, queue, res

from services.scheduler.core.conf import default_conf
from services.scheduler.core.framework import build
from services.scheduler.core.framework.session import Session, run_session
from services.scheduler.core.snapshot import ClusterSnapshot
from services.scheduler.plans import build_plans

QUEUES = [queue("q0"), queue("q1"), queue("q2")]


def jobs(count: int, pods: int, *, prefix: str = "j", phase: str = "Inqueue") -> list[Any]:
    objects: list[Any] = []
    for i in range(count):
        objects += gang(f"{prefix}{i}", pods, queue_name=f"q{i % 3}", phase=phase)
    return objects


def snapshot(*objects: Any) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects(
        [*(node(f"n{i}", cpu=64, memory="256Gi") for i in range(8)), *objects]
    )


def owning(*names: str) -> Callable[[str], bool]:
    keys = {f"default/{name}" for name in names}
    return keys.__contains__


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts the tasks a session builds and the predicate evaluations (one per node search)."""
    counted: Counter[str] = Counter()
    task_info = build.TaskInfo
    predicate_failures = Session.predicate_failures

    def counting_task(*args: Any, **kwargs: Any) -> Any:
        counted["tasks"] += 1
        return task_info(*args, **kwargs)

    def counting_predicates(self: Session, task: Any) -> Any:
        counted["predicates"] += 1
        return predicate_failures(self, task)

    monkeypatch.setattr(build, "TaskInfo", counting_task)
    monkeypatch.setattr(Session, "predicate_failures", counting_predicates)
    yield counted


def test_session_work_follows_the_owned_pending_pods(work: Counter[str]) -> None:
    snap = snapshot(*QUEUES, *jobs(12, 4))
    full = run_session(snap, default_conf())
    assert (work["tasks"], work["predicates"], len(full.binds)) == (48, 48, 48)
    work.clear()
    mine = run_session(snap, default_conf(), owns=owning("j0", "j5", "j7"))
    assert (work["tasks"], work["predicates"]) == (12, 12)
    assert {key.split("-")[0] for key in mine.binds} == {"default/j0", "default/j5", "default/j7"}
    # statuses only for what this replica owns
    assert set(mine.podgroups) == {"default/j0", "default/j5", "default/j7"}


@pytest.mark.parametrize("others", [10, 100])
def test_pending_work_of_other_replicas_costs_no_tasks(work: Counter[str], others: int) -> None:
    snap = snapshot(*QUEUES, *jobs(2, 4, prefix="mine"), *jobs(others, 4, prefix="other"))
    result = run_session(snap, default_conf(), owns=owning("mine0", "mine1"))
    assert (work["tasks"], work["predicates"], len(result.binds)) == (8, 8, 8)


def test_queue_shares_count_the_pending_pods_other_replicas_place() -> None:
    """Two equal queues on 8 cpus: the owned job may take only its queue's half, because the other
    queue's pending job (another replica's) asks for the rest."""
    objects = [
        node("n1", cpu=8, memory="64Gi"),
        queue("q1"),
        queue("q2"),
        *gang("mine", 8, min_member=1, queue_name="q1"),
        *gang("theirs", 8, min_member=1, queue_name="q2"),
    ]
    snap = ClusterSnapshot.from_objects(objects)
    full = run_session(snap, default_conf())
    mine = run_session(snap, default_conf(), owns=owning("mine"))
    assert sum(key.startswith("default/mine-") for key in full.binds) == 4
    assert sorted(mine.binds) == sorted(key for key in full.binds if key.startswith("default/mine-"))
    assert {q: u.deserved for q, u in mine.queues.items()} == {q: u.deserved for q, u in full.queues.items()}


def test_the_model_counts_other_replicas_pending_pods_without_tasks() -> None:
    snap = snapshot(
        *QUEUES, *gang("mine", 2), *gang("theirs", 3), pod("theirs-x", "theirs", cpu=None, memory=None)
    )
    ssn = Session(snap, default_conf(), owns=owning("mine"))
    theirs = ssn.jobs["default/theirs"]
    assert (theirs.owned, len(theirs.tasks), theirs.task_count()) == (False, 0, 4)
    assert theirs.total_request() == res(cpu=3, memory="3Gi")
    assert list(ssn.owned_jobs) == ["default/mine"]
    # where the session may evict, the best-effort pod stays a task (the gang plugin counts it as placed)
    evicting = conf("enqueue, allocate, preempt", ["priority", "gang", "conformance"], ["drf", "proportion"])
    theirs = Session(snap, evicting, owns=owning("mine")).jobs["default/theirs"]
    assert (len(theirs.tasks), theirs.task_count()) == (1, 4)
    assert theirs.total_request() == res(cpu=3, memory="3Gi")


def test_only_owned_podgroups_are_enqueued() -> None:
    snap = snapshot(*QUEUES, *jobs(4, 0, phase="Pending"))
    result = run_session(snap, default_conf(), owns=owning("j1", "j2"))
    assert {key: update.phase for key, update in result.podgroups.items()} == {
        "default/j1": "Inqueue",
        "default/j2": "Inqueue",
    }


def test_running_pods_of_other_replicas_are_victims_and_the_preemptor_owns_the_plan() -> None:
    objects = [
        priority_class("low", 10),
        priority_class("high", 100),
        node("n1", cpu=2),
        podgroup("low", priority_class="low"),
        pod("low-0", "low", cpu=2, node_name="n1"),
        podgroup("high", priority_class="high"),
        pod("high-0", "high", cpu=1),
    ]
    snap = ClusterSnapshot.from_objects(objects)
    # gang's victim filter off (Volcano's Helm default): a job at minAvailable may lose pods
    gang_plugin = {"name": "gang", "enablePreemptable": False}
    scheduler_conf = conf(
        "allocate, preempt", ["priority", gang_plugin, "conformance"], ["predicates", "proportion"]
    )
    result = run_session(snap, scheduler_conf, owns=owning("high"))
    assert (result.evictions, result.pipelined) == (["default/low-0"], {"default/high-0": "n1"})
    assert set(result.podgroups) == {"default/high"}
    [message] = build_plans(result, snap, "r1", {"default/high"})
    assert ([e.task for e in message.evictions], list(message.podgroups)) == (
        ["default/low-0"],
        ["default/high"],
    )
    # the replica that owns the victim's group sends nothing about it
    assert build_plans(result, snap, "r2", {"default/low"}) == []
