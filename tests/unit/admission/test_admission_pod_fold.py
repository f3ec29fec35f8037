"""What a created pod costs admission's view: its queue is read from the encoded Pod the PodCreated
carries, never by decoding the Pod (one PodCreated arrives for every pod the cluster runs); a pod whose
encoded meta or queue is not of the Pod's types is skipped (it names no queue to count it against)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from support.events import EventLog

from contracts.codec import encode_object
from contracts.objects import Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec
from contracts.resources import Resources
from services.admission.context_core import AdmissionViewCore, View
from services.job_controller.core.expand import QUEUE_NAME, default_job, pod_for
from shared.runner_types import Event

CORE = AdmissionViewCore()


def job(queue: str) -> Job:
    container = Container("c", requests=Resources.parse({"cpu": "1"}))
    task = TaskSpec(name="worker", replicas=3, template=PodTemplate(spec=PodSpec(containers=(container,))))
    meta = ObjectMeta("train", "team-a", uid="u-train", creation_timestamp=1.0)
    return default_job(Job(meta=meta, tasks=(task,), min_available=3, queue=queue))


def created(log: EventLog, encoded: dict[str, Any], key: str = "team-a/train-worker-0") -> Event:
    return log.event("PodCreated", key, {"object": encoded})


def encoded_pod(meta: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Pod", "object": {"meta": {"name": "train-worker-0", "namespace": "team-a", **meta}}}


def functions_called(work: Any) -> list[str]:
    """file:function of every Python call work() makes."""
    called: list[str] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call":
            called.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return called


def test_folding_a_created_pod_decodes_no_pod_and_costs_a_handful_of_calls() -> None:
    log = EventLog(time_from_seq=True)
    training = job("research")
    pods = [pod_for(training, training.tasks[0], i, created_at=2.0) for i in range(3)]
    events = [log.event("PodCreated", p.meta.key, {"object": encode_object(p)}) for p in pods]
    view = CORE.apply(CORE.initial(), events[0])  # anything compiled on first use is compiled now
    for event in events[1:]:
        called = functions_called(lambda event=event: CORE.apply(view, event))
        assert not [f for f in called if "/contracts/codec" in f], called  # no Pod decoded
        assert len(called) <= 8, called
    assert view.pods == {p.meta.key: ["research", False] for p in pods}


@pytest.mark.parametrize(
    ("meta", "queue"),
    [
        ({"annotations": {QUEUE_NAME: "research"}, "labels": {QUEUE_NAME: "other"}}, "research"),
        ({"annotations": {QUEUE_NAME: ""}, "labels": {QUEUE_NAME: "other"}}, "other"),
        ({"annotations": {"unrelated": "x"}, "labels": {QUEUE_NAME: "other"}}, "other"),
        ({"labels": {}}, "default"),
        ({}, "default"),
    ],
)
def test_a_pods_queue_is_its_annotation_then_its_label_then_default(meta: dict[str, Any], queue: str) -> None:
    view = CORE.apply(CORE.initial(), created(EventLog(), encoded_pod(meta)))
    assert view.pods == {"team-a/train-worker-0": [queue, False]}


@pytest.mark.parametrize(
    "meta",
    [
        {"annotations": {QUEUE_NAME: 5}},
        {"annotations": ["not", "a", "mapping"]},
        {"labels": {QUEUE_NAME: {"nested": "x"}}},
    ],
)
def test_a_pod_whose_queue_is_not_a_string_is_skipped_and_the_view_goes_on(meta: dict[str, Any]) -> None:
    log = EventLog()
    view: View = CORE.apply(CORE.initial(), created(log, encoded_pod(meta)))
    assert view.pods == {} and view.seq == 1
    view = CORE.apply(view, created(log, encoded_pod({}), key="team-a/train-worker-1"))
    assert view.pods == {"team-a/train-worker-1": ["default", False]}


def test_a_pod_without_meta_is_skipped() -> None:
    view = CORE.apply(CORE.initial(), created(EventLog(), {"kind": "Pod", "object": {}}))
    assert view.pods == {}


def test_a_pod_counts_from_its_binding_and_its_start_is_not_read() -> None:
    """A pod runs only where it was bound, so PodRunning adds nothing to the count: the view does not
    read it (the runner then skips it before decoding it), and the count goes bound -> stopped."""
    assert "PodRunning" not in CORE.reads and {"PodBound", "PodSucceeded"} <= CORE.reads
    log = EventLog()
    view = CORE.apply(CORE.initial(), created(log, encoded_pod({"annotations": {QUEUE_NAME: "q"}})))
    assert view.context().allocated_pods("q") == 0
    view = CORE.apply(view, log.event("PodBound", "team-a/train-worker-0", {"node": "n1", "plan": "p"}))
    assert view.context().allocated_pods("q") == 1
    view = CORE.apply(view, log.event("PodSucceeded", "team-a/train-worker-0", {"node": "n1"}))
    assert view.context().allocated_pods("q") == 0 and not view.pods
