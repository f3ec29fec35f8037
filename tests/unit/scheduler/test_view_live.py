"""What the view hands a session besides the objects: the node table kept between sessions, and only the
live pods and PodGroups (finished work stays readable in the view but leaves the snapshot)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from support.builders import gang, node, pod, podgroup, queue
from support.events import EventLog, job_status

from services.scheduler.core.conf import default_conf
from services.scheduler.core.framework import build
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.snapshot import ClusterSnapshot
from services.scheduler.view import SchedulerView


def folded(*objects: Any) -> tuple[SchedulerView, EventLog]:
    view, log = SchedulerView(), EventLog(time_from_seq=True)
    for obj in objects:
        view.apply(log.created(obj))
    return view, log


def status(log: EventLog, key: str, phase: str) -> Any:
    return log.event("PodGroupStatusChanged", key, {"phase": phase, "conditions": []})


def finish(view: SchedulerView, log: EventLog, *pods: str, phase: str = "PodSucceeded") -> None:
    for key in pods:
        view.apply(log.event("PodRunning", key, {"node": "n1"}))
        view.apply(log.event(phase, key, {"node": "n1", "exit_code": 0}))


def seen(view: SchedulerView) -> tuple[set[str], set[str]]:
    snap = view.snapshot()
    return {p.meta.name for p in snap.pods}, {g.meta.name for g in snap.podgroups}


# --- nodes ---------------------------------------------------------------------------------------------


def test_node_events_update_single_rows_of_the_kept_table() -> None:
    view, log = folded(*(node(f"n{i}") for i in range(50)))
    rows = view.node_rows
    assert (rows.rows_built, rows.rows_updated) == (50, 0)
    first = view.snapshot().node_base
    assert view.snapshot().node_base is first  # nothing changed: the same base, no copy
    view.apply(log.event("NodeNotReady", "n7", {"last_heartbeat": 0.0}))
    view.apply(log.event("NodeNotReady", "n7", {"last_heartbeat": 0.0}))
    snap = view.snapshot()
    assert (rows.rows_built, rows.rows_updated) == (50, 1)
    assert snap.node_base is not None and not snap.node_base.ready[7] and first is not None and first.ready[7]
    assert [n.meta.name for n in snap.nodes] == list(snap.node_base.names)
    assert {k: v for k, v in view.counts().items() if k.startswith("nodes")} == {
        "nodes": 50,
        "nodes_ready": 49,
    }


def test_a_session_over_the_view_places_as_over_the_same_objects() -> None:
    objects = [node("n1", cpu=4), node("n2", cpu=8), queue("q1"), *gang("g", 3, queue_name="q1", cpu=3)]
    view, _ = folded(*objects)
    via_view = run_session(view.snapshot(), seed=3).binds
    assert via_view == run_session(ClusterSnapshot.from_objects(objects), seed=3).binds
    assert sorted(via_view.values()) == ["n1", "n2", "n2"]


# --- finished work -------------------------------------------------------------------------------------


def test_succeeded_pods_of_a_live_gang_are_seen() -> None:
    view, log = folded(node("n1"), *gang("g", 2, node_name="n1", phase="Running"))
    finish(view, log, "default/g-worker-0")
    assert seen(view) == ({"g-worker-0", "g-worker-1"}, {"g"})


def test_a_completed_gang_leaves_the_snapshot_and_stays_readable() -> None:
    view, log = folded(node("n1"), *gang("g", 2, node_name="n1", phase="Running"))
    finish(view, log, "default/g-worker-0", "default/g-worker-1")
    assert seen(view) == ({"g-worker-0", "g-worker-1"}, {"g"})  # not Completed yet: the session says so
    view.apply(status(log, "default/g", "Completed"))
    assert seen(view) == (set(), set())
    assert view.pod("default/g-worker-0") is not None and view.podgroup("default/g") is not None
    counts = {k: v for k, v in view.counts().items() if not k.startswith("nodes")}
    assert counts == {"pods": 2, "live_pods": 0, "podgroups": 1, "live_podgroups": 0}
    # a new pod for the group brings the group and its finished pods back
    view.apply(log.created(pod("g-worker-2", "g", role="worker")))
    assert seen(view) == ({"g-worker-0", "g-worker-1", "g-worker-2"}, {"g"})


def test_a_final_jobs_gang_that_a_session_will_mark_completed_stays_until_it_is() -> None:
    view, log = folded(node("n1"), *gang("g", 2, node_name="n1", phase="Running"))
    finish(view, log, "default/g-worker-0", "default/g-worker-1")
    view.apply(log.event("JobStatusChanged", "default/g", job_status("Completed")))
    assert seen(view) == ({"g-worker-0", "g-worker-1"}, {"g"})
    assert run_session(view.snapshot()).podgroups["default/g"].phase == "Completed"
    view.apply(status(log, "default/g", "Completed"))
    assert seen(view) == (set(), set())


@pytest.mark.parametrize("phase", ["Completed", "Failed", "Terminated"])
def test_a_short_gang_of_a_final_job_leaves_once_its_pods_stopped(phase: str) -> None:
    view, log = folded(node("n1"), *gang("g", 3, node_name="n1", phase="Running"))
    finish(view, log, "default/g-worker-0", phase="PodFailed")
    view.apply(log.event("PodDeletionRequested", "default/g-worker-1", {"reason": "JobFailed"}))
    view.apply(log.event("PodTerminated", "default/g-worker-2", {"node": "n1", "reason": "Killed"}))
    view.apply(log.event("JobStatusChanged", "default/g", job_status(phase)))
    # worker-1 still holds its node while it terminates: the group stays
    assert seen(view) == ({"g-worker-0", "g-worker-1"}, {"g"})
    view.apply(log.event("PodTerminated", "default/g-worker-1", {"node": "n1", "reason": "Killed"}))
    assert seen(view) == (set(), set())
    new_incarnation = {"object": {"kind": "Job", "object": {}}}  # a JobSubmitted under the same name
    view.apply(log.event("JobSubmitted", "default/g", new_incarnation))
    assert seen(view) == ({"g-worker-0"}, {"g"})


def test_a_job_that_is_not_final_keeps_its_gang() -> None:
    view, log = folded(node("n1"), *gang("g", 1, node_name="n1", phase="Running"))
    finish(view, log, "default/g-worker-0", phase="PodFailed")
    view.apply(log.event("JobStatusChanged", "default/g", job_status("Restarting")))
    assert seen(view) == ({"g-worker-0"}, {"g"})


def test_finished_pods_without_a_podgroup_are_not_seen_and_running_ones_are() -> None:
    view, log = folded(
        node("n1"), pod("lone", "nogroup", node_name="n1"), pod("other", "nogroup", node_name="n1")
    )
    finish(view, log, "default/lone")
    assert seen(view) == ({"other"}, set())
    view.apply(log.created(podgroup("nogroup", phase="Running")))
    assert seen(view) == ({"lone", "other"}, {"nogroup"})


@pytest.fixture
def tasks_built(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    counted: Counter[str] = Counter()
    task_info = build.TaskInfo

    def counting(*args: Any, **kwargs: Any) -> Any:
        counted["tasks"] += 1
        return task_info(*args, **kwargs)

    monkeypatch.setattr(build, "TaskInfo", counting)
    yield counted


@pytest.mark.parametrize("history", [0, 40])
def test_session_work_does_not_grow_with_finished_gangs(history: int, tasks_built: Counter[str]) -> None:
    view, log = folded(node("n1", cpu=64, memory="256Gi"), *gang("live", 4), *gang("busy", 2, node_name="n1"))
    for i in range(history):
        for obj in gang(f"done{i}", 3, node_name="n1", phase="Running"):
            view.apply(log.created(obj))
        finish(view, log, *(f"default/done{i}-worker-{w}" for w in range(3)))
        view.apply(status(log, f"default/done{i}", "Completed"))
    snap = view.snapshot()
    assert (len(snap.pods), len(snap.podgroups), view.counts()["pods"]) == (6, 2, 6 + 3 * history)
    result = run_session(snap, default_conf())
    assert (tasks_built["tasks"], len(result.binds), set(result.podgroups)) == (
        6,
        4,
        {"default/live", "default/busy"},
    )


# --- the cost of a pod's change ------------------------------------------------------------------------


def test_a_pod_changing_in_its_group_walks_the_group_only_when_it_finishes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pod bound, started or finished keeps its group: the group's counts change by that pod alone, and
    the group is looked at again (a walk over its pods when it finishes) only when the pod ends."""
    members = [pod(f"w{i}", "g") for i in range(40)]
    view, log = folded(podgroup("g", min_member=40), *members)
    calls: Counter[str] = Counter()
    for name in ("_sort_group", "_sort_pod", "_join", "_leave"):
        original = getattr(type(view.shown), name)

        def counted(self: Any, *args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            calls[_name] += 1
            return _original(self, *args, **kw)

        monkeypatch.setattr(type(view.shown), name, counted)
    view.apply(log.event("PodBound", "default/w0", {"node": "n1", "plan": "x"}))
    view.apply(log.event("PodRunning", "default/w0", {"node": "n1"}))
    assert calls == {"_sort_pod": 2}
    assert view.waiting_groups() == {"default/g"}  # 39 pods still wait
    view.apply(log.event("PodSucceeded", "default/w0", {"node": "n1", "exit_code": 0}))
    assert calls == {"_sort_pod": 3, "_sort_group": 1}
    for p in members[1:]:
        key = p.meta.key
        view.apply(log.event("PodBound", key, {"node": "n1", "plan": "x"}))
    assert view.waiting_groups() == set()
    assert calls["_sort_group"] == 1 and calls["_join"] == calls["_leave"] == 0
    # the same counts as a view that saw each pod only as it is now
    fresh, _ = folded(podgroup("g", min_member=40), *(view.pod(p.meta.key) for p in members))
    assert view.shown._unfinished == fresh.shown._unfinished and view.shown._waiting == fresh.shown._waiting
    assert seen(view) == seen(fresh)
