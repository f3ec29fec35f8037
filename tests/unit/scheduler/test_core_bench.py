"""`lahar bench core`: rounds of sessions, one per replica, through a binder that refuses conflicts."""

from __future__ import annotations

from collections import Counter

import pytest
from support.builders import node, pod

from contracts.plans import Bind
from services.scheduler.bench.binder import BenchBinder
from services.scheduler.bench.core_bench import run_bench
from services.scheduler.core.framework import build
from services.scheduler.core.framework.plan import Plan
from services.scheduler.core.model.node_base import NodeBase


def test_replicas_share_the_work_and_every_pod_is_placed() -> None:
    result = run_bench(40, 400, queues=4, replicas=3)
    assert (result["placed"], result["replicas"], len(result["session_cpu_s"])) == (400, 3, 3)
    assert all(cpu > 0 for cpu in result["session_cpu_s"])


@pytest.mark.parametrize("finished", [0, 600])
def test_finished_history_builds_no_task(monkeypatch: pytest.MonkeyPatch, finished: int) -> None:
    built: Counter[str] = Counter()
    task_info = build.TaskInfo

    def counting(*args: object, **kwargs: object) -> object:
        built["tasks"] += 1
        return task_info(*args, **kwargs)

    monkeypatch.setattr(build, "TaskInfo", counting)
    result = run_bench(20, 200, queues=4, finished=finished)
    # the round's session builds the 200 pending pods, the settled one the same 200, running, and so
    # do its five CPU repeats; the five sessions acting for no PodGroup build none
    assert (result["placed"], result["sessions"], built["tasks"]) == (200, 1, 200 + 200 + 5 * 200)


def test_the_binder_refuses_a_gang_that_no_longer_fits() -> None:
    binder = BenchBinder(NodeBase.build([node("n1", cpu=4), node("n2", cpu=4), node("n3", cpu=64, pods=1)]))
    pods = {p.meta.key: p for p in (pod(f"p{i}", "g", cpu=2) for i in range(5))}

    def plan(*placements: tuple[int, str]) -> Plan:
        return Plan(tuple(Bind(f"default/p{i}", "default/g", n) for i, n in placements))

    assert binder.commit(plan((0, "n1"), (1, "n2")), pods)
    assert not binder.commit(plan((2, "n2"), (3, "n1"), (4, "n1")), pods)  # n1 has 2 cpus left
    assert binder.free[:, 0].tolist() == [2000, 2000, 64000]  # a refused gang takes nothing
    assert binder.commit(plan((2, "n1"), (3, "n2")), pods)
    assert not binder.commit(plan((4, "n1")), pods)  # no cpu left
    assert not binder.commit(plan((4, "n3"), (1, "n3")), pods)  # room for one pod only
    assert binder.commit(plan((4, "n3")), pods)
