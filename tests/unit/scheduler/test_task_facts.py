"""Opening a session costs what it may move: each pod's task facts are computed once per version of the
pod, in the view, and a session makes tasks only of the pods its replica places or may evict. Counted
in calls, not time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from support.builders import gang, node, pod, podgroup, queue
from support.events import job_status

from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from services.scheduler.core import live, snapshot
from services.scheduler.core.conf import default_conf
from services.scheduler.core.framework import build, session
from services.scheduler.core.framework.build import build_model
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.model.facts import task_facts
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.snapshot import ClusterSnapshot
from services.scheduler.view import SchedulerView
from shared.runner_types import Event


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts task facts computed (by the view's live objects, and by a snapshot without kept facts)
    and the tasks a session builds."""
    calls: Counter[str] = Counter()
    facts_of, task_info = live.task_facts, build.TaskInfo

    def counting_facts(pod: Any, previous: Any = None) -> Any:
        calls["facts"] += 1
        return facts_of(pod, previous)

    def counting_task(*args: Any, **kwargs: Any) -> Any:
        calls["tasks"] += 1
        return task_info(*args, **kwargs)

    monkeypatch.setattr(live, "task_facts", counting_facts)
    monkeypatch.setattr(snapshot, "task_facts", counting_facts)
    monkeypatch.setattr(build, "TaskInfo", counting_task)
    yield calls


def _event(seq: int, type: str, key: str, payload: dict[str, Any]) -> Event:
    namespace, _, name = key.rpartition("/")
    kind = EVENT_TYPES[type].subject_kind
    return Event(seq, type, kind, namespace or None, name, payload, f"e{seq}", float(seq), key)


def _view(*objects: Any) -> SchedulerView:
    created = {"Node": "NodeRegistered", "Pod": "PodCreated", "PodGroup": "PodGroupCreated"}
    created |= {"Queue": "QueueApplied"}
    view = SchedulerView()
    for seq, obj in enumerate(objects, start=1):
        view.apply(_event(seq, created[obj.kind], obj.meta.key, {"object": encode_object(obj)}))
    return view


def test_sessions_open_from_kept_facts_computed_once_per_pod_version(counted: Counter[str]) -> None:
    view = _view(node("n1", cpu=64), node("n2", cpu=64), queue("q1"), *gang("g", 10, queue_name="q1"))
    assert counted["facts"] == 0  # folding computes nothing a session has not asked for yet
    run_session(view.snapshot(), default_conf())
    assert counted["facts"] == 10
    run_session(view.snapshot(), default_conf())
    assert counted["facts"] == 10  # nothing changed: no pod is read again
    seq = view.seq + 1
    view.apply(_event(seq, "PodBound", "default/g-worker-3", {"node": "n1", "plan": "p1"}))
    # the same answer again changes nothing
    view.apply(_event(seq + 1, "PodBound", "default/g-worker-3", {"node": "n1", "plan": "p1"}))
    snap = view.snapshot()
    assert snap.task_facts is not None and counted["facts"] == 11  # only the pod that changed
    [bound] = [f for f in snap.task_facts if f.key == "default/g-worker-3"]
    assert bound.node == "n1" and bound.status.name == "BOUND"


def test_a_snapshot_without_kept_facts_computes_them() -> None:
    snap = ClusterSnapshot.from_objects([node("n1"), *gang("g", 3)])
    assert snap.task_facts is None
    assert [f.key for f in snap.facts()] == [p.meta.key for p in snap.pods]


def _cluster() -> list[Any]:
    """Two queues; gangs of three replicas' worth, running, pending, releasing and finished."""
    objects: list[Any] = [*(node(f"n{i}", cpu=16, memory="64Gi") for i in range(4)), queue("q1"), queue("q2")]
    for name, q in (("mine", "q1"), ("a", "q1"), ("b", "q2"), ("c", "q2")):
        objects.append(podgroup(name, min_member=2, queue=q, phase="Running"))
        objects += [pod(f"{name}-{i}", name, cpu=2, node_name=f"n{i}", phase="Running") for i in range(3)]
        objects.append(pod(f"{name}-pending", name, cpu=1))
        objects.append(pod(f"{name}-leaving", name, cpu=1, node_name="n3", phase="Running", deleting=True))
        objects.append(pod(f"{name}-done", name, cpu=1, node_name="n2", phase="Succeeded"))
        objects.append(pod(f"{name}-besteffort", name, cpu=None, memory=None))
    objects.append(pod("loose", None, cpu=3, node_name="n1", phase="Running"))  # a pod of no PodGroup
    objects.append(pod("lost", "a", cpu=1, node_name="gone", phase="Running"))  # on a node nobody knows
    return objects


def _mine(key: str) -> bool:
    return key == "default/mine"


def test_without_eviction_a_session_builds_tasks_only_for_its_own_jobs(counted: Counter[str]) -> None:
    snap = ClusterSnapshot.from_objects(_cluster())
    build_model(snap, _mine, victims=False)
    assert counted["tasks"] == 7  # the owned job's pods, nothing of the other replicas' jobs
    counted.clear()
    build_model(snap, _mine, victims=True)
    # where preempt or reclaim may run, other jobs' pods on nodes (victims) and best-effort pods too
    assert counted["tasks"] == 7 + 3 * 6 + 1


def test_counted_jobs_and_charged_nodes_equal_modelled_ones() -> None:
    """What plugins and the close read of a job another replica places, and the node accounting, are the
    same whether its pods are tasks or only counted."""
    snap = ClusterSnapshot.from_objects(_cluster())
    counted, modelled = build_model(snap, _mine, victims=False), build_model(snap, _mine, victims=True)
    for column in ("used", "idle", "future", "releasing", "pipelined", "pod_count"):
        assert np.array_equal(getattr(counted.nodes, column), getattr(modelled.nodes, column)), column
    assert counted.skipped_pods == modelled.skipped_pods == ["default/lost: bound to unknown node gone"]

    def reads(job: JobInfo) -> tuple[Any, ...]:
        return (
            job.allocated,
            job.total_request(),
            job.task_count(),
            job.ready_task_num(),
            job.valid_task_num() - job.status_counts[build.TaskStatus.PENDING],
            {role: dict(c) for role, c in job.role_status_counts.items() if any(c.values())},
        )

    for key in ("default/a", "default/b", "default/c"):
        assert not counted.jobs[key].tasks
        # pending pods are unplaced either way: the gang counters agree on everything placed
        assert reads(counted.jobs[key])[:5] == reads(modelled.jobs[key])[:5]
    assert reads(counted.jobs["default/mine"]) == reads(modelled.jobs["default/mine"])


def test_a_replica_decides_the_same_with_counted_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's whole result (binds, statuses, queue figures) does not depend on whether the other
    replicas' pods were tasks or only counted."""
    snap = ClusterSnapshot.from_objects(_cluster())
    counted = run_session(snap, default_conf(), owns=_mine)
    # every action counts as evicting: the same session over a model with every pod a task
    monkeypatch.setattr(session, "EVICTING_ACTIONS", frozenset(default_conf().actions))
    modelled = run_session(snap, default_conf(), owns=_mine)
    assert counted.binds and counted.binds == modelled.binds
    assert (counted.podgroups, counted.queues) == (modelled.podgroups, modelled.queues)


def test_a_job_status_event_leaves_the_facts_alone(counted: Counter[str]) -> None:
    view = _view(node("n1", cpu=64), *gang("g", 4))
    view.snapshot().facts()
    view.apply(_event(view.seq + 1, "JobStatusChanged", "default/g", job_status("Running")))
    view.snapshot().facts()
    assert counted["facts"] == 4


def _fields(facts: Any) -> dict[str, Any]:
    return {name: getattr(facts, name) for name in type(facts).__slots__}


def test_a_pod_bound_started_or_deleted_keeps_the_rest_of_its_facts() -> None:
    base = pod("p-3", "g", role="worker", annotations={"volcano.sh/task-priority": "7"})
    first = task_facts(base)
    bound = replace(base, spec=replace(base.spec, node_name="n1"))
    running = replace(bound, status=replace(bound.status, phase="Running"))
    leaving = replace(running, meta=replace(running.meta, deletion_timestamp=3.0))
    previous = first
    for version in (bound, running, leaving):
        derived = task_facts(version, previous)
        assert derived is not previous and _fields(derived) == _fields(task_facts(version))
        assert derived.requests is first.requests  # taken over, not read again
        previous = derived
    assert (previous.node, previous.status.name, previous.task_priority) == ("n1", "RELEASING", 7)
    # anything else changed: read anew
    relabelled = replace(base, meta=replace(base.meta, annotations={"volcano.sh/task-priority": "9"}))
    assert task_facts(relabelled, first).task_priority == 9
