"""Volcano's Watched and Bound task latencies, observed after each batch for the pods of the PodGroups a
replica owns: the series of a stage is looked up once a batch, not once a pod."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from support.builders import gang
from support.events import EventLog

from services.scheduler.metrics import SchedulerMetrics
from services.scheduler.ownership import Owned
from services.scheduler.replica_series import ReplicaSeries
from services.scheduler.view import SchedulerView
from shared.ring import Ring
from shared.telemetry.metrics import Registry


def test_a_batch_of_pods_looks_each_stage_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    view, log = SchedulerView(), EventLog(time_from_seq=True)
    view.watching = True
    metrics = SchedulerMetrics(Registry())
    now = 1e12  # after every creation time
    series = ReplicaSeries(metrics, lambda: view, lambda: Owned(Ring(["s0"]), "s0"), lambda: now)
    objects = gang("g", 30)
    pods = objects[1:]
    for obj in objects:
        view.apply(log.created(obj))
    for p in pods:
        view.apply(log.event("PodBound", p.meta.key, {"node": "n1", "plan": "x"}))
    looked_up: Counter[str] = Counter()
    original = metrics.task_latency_ms.labels

    def counted(*values: Any) -> Any:
        looked_up[values[0]] += 1
        return original(*values)

    monkeypatch.setattr(metrics.task_latency_ms, "labels", counted)
    series.time_tasks()
    assert looked_up == {"Watched": 1, "Bound": 1}
    for stage in ("Watched", "Bound"):
        assert original(stage)._sum.get() > 0 and sum(b.get() for b in original(stage)._buckets) == 30
