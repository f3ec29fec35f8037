"""A replica's session acts only for the PodGroups that have something to decide (new, changed, waiting):
the others would keep their status, so they are modelled like another replica's and cost no tasks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from support.builders import conf, gang, node, pod, podgroup, priority_class, queue

from contracts.objects import PodGroup
from services.scheduler.core.conf import default_conf
from services.scheduler.core.framework import build
from services.scheduler.core.framework.session import Session, run_session
from services.scheduler.core.snapshot import ClusterSnapshot, podgroup_key
from services.scheduler.focus import session_focus
from services.scheduler.plans import build_plans, status_changed


def test_the_focus_is_new_changed_and_waiting_owned_podgroups() -> None:
    owned = {"a", "b", "c", "d"}
    focus = session_focus(owned, ring_changed=False, new_work={"a"}, touched={"b"}, waiting={"c", "x"})
    assert focus == {"a", "b", "c"}  # not d (nothing to decide), not x (another replica's)
    assert session_focus(owned, ring_changed=False, new_work=(), touched=(), waiting={"x"}) == set()
    assert session_focus(owned, ring_changed=True, new_work=(), touched=(), waiting=()) is None


def _cluster() -> list[Any]:
    """Settled gangs (Running, all pods running, Scheduled), one waiting for a node, one waiting to be
    enqueued, one whose pods all finished (its status is to become Completed)."""
    objects: list[Any] = [*(node(f"n{i}", cpu=8, memory="32Gi") for i in range(4)), queue("q1"), queue("q2")]
    for i in range(6):
        objects.append(podgroup(f"run{i}", min_member=2, queue=f"q{i % 2 + 1}", phase="Running"))
        objects += [pod(f"run{i}-{k}", f"run{i}", node_name=f"n{i % 4}", phase="Running") for k in range(2)]
    objects += gang("waits", 2, queue_name="q1")
    objects.append(podgroup("early", queue="q2", phase="Pending"))
    objects.append(podgroup("done", min_member=1, queue="q1", phase="Running"))
    objects.append(pod("done-0", "done", node_name="n0", phase="Succeeded"))
    objects.append(pod("plain", None))  # a plain pod: its own implicit PodGroup
    return objects


def _settled(obj: Any, updates: dict[str, Any]) -> Any:
    if not isinstance(obj, PodGroup) or not obj.meta.name.startswith("run"):
        return obj
    update = updates[obj.meta.key]
    return replace(obj, status=replace(obj.status, phase=update.phase, conditions=update.conditions))


@pytest.fixture
def tasks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    built: Counter[str] = Counter()
    task_info = build.TaskInfo

    def counting(facts: Any, job: str, *args: Any) -> Any:
        built[job] += 1
        return task_info(facts, job, *args)

    monkeypatch.setattr(build, "TaskInfo", counting)
    yield built


@pytest.mark.parametrize("evicting", [False, True], ids=["default", "preempt"])
def test_a_focused_session_decides_what_the_full_one_does(evicting: bool, tasks: Counter[str]) -> None:
    objects = [priority_class("high", 100), *_cluster()]
    # the running gangs settled: their statuses as a session wrote them (phase, Scheduled condition)
    first = run_session(ClusterSnapshot.from_objects(objects), default_conf())
    snap = ClusterSnapshot.from_objects([_settled(obj, first.podgroups) for obj in objects])
    scheduler_conf = (
        conf(
            "enqueue, allocate, preempt",
            ["priority", "gang", "conformance"],
            ["drf", "predicates", "proportion"],
        )
        if evicting
        else default_conf()
    )
    full = run_session(snap, scheduler_conf)
    statuses = {pg.meta.key: pg.status for pg in snap.podgroups}
    plain = next(podgroup_key(p) for p in snap.pods if p.meta.name == "plain")
    focus = {"default/waits", "default/early", "default/done", plain}
    # everything the full session changed is in the focus: the rest keeps its status
    unchanged = {k for k, u in full.podgroups.items() if k in statuses and not status_changed(statuses[k], u)}
    assert unchanged == {f"default/run{i}" for i in range(6)}
    tasks.clear()
    session = Session(snap, scheduler_conf, owns=focus.__contains__)
    focused = session.run()
    assert full.binds and focused.binds == full.binds and focused.queues == full.queues
    assert {k: full.podgroups[k] for k in focus} == focused.podgroups
    everything = {pg.meta.key for pg in snap.podgroups}
    everything.add(plain)
    plans = build_plans(full, snap, "r", everything)
    assert plans and build_plans(focused, snap, "r", everything) == plans
    # the statuses the session read at open, instead of a walk over the snapshot's PodGroups
    assert set(session.owned_statuses()) == focus - {plain}
    assert build_plans(focused, snap, "r", everything, session.owned_statuses()) == plans
    # tasks only for the focus, unless another job's pods may be evicted
    expected = {"default/waits": 2, "default/done": 1, plain: 1}
    if evicting:
        expected |= {f"default/run{i}": 2 for i in range(6)}
    assert dict(tasks) == expected
