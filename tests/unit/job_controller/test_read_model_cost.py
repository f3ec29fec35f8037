"""What one pod change costs the job-controller's read model and reconcile: its pod, its job and its
PodGroup marked once however often they change before the next write, and the work of the event — fold,
reconcile of its job, render of what it marked — the same for a job of 4 pods and one of 200 (nothing
walks the job's other pods). And what the fold leaves undecoded: a Job's PodGroup in the plain core, a
created pod's spec."""

from __future__ import annotations

from typing import Any

import pytest
from support.events import EventLog
from support.work import calls

from contracts import codec
from contracts.codec import encode_object
from contracts.job_shape import default_job
from contracts.objects import Container, Job, ObjectMeta, PodGroup, PodSpec, PodTemplate, TaskSpec
from contracts.podgroup_owner import OWNER, owned_by_pod
from contracts.resources import Resources
from services.job_controller.core.controller import ControllerCore, ControllerState
from services.job_controller.core.expand import pod_for, podgroup_for
from services.job_controller.core.plain import fold as plain_fold
from shared.runner_types import Event

NS = "team-a"


def wide_job(pods: int) -> Job:
    container = Container("c", requests=Resources.parse({"cpu": "1"}))
    task = TaskSpec(name="worker", replicas=pods, template=PodTemplate(spec=PodSpec(containers=(container,))))
    return default_job(Job(ObjectMeta("wide", NS, uid="uid-wide", creation_timestamp=1.0), (task,)))


def running(pods: int) -> tuple[ControllerCore, ControllerState, EventLog]:
    """The job's pods all running, settled and written (no dirty mark left)."""
    core, log = ControllerCore(), EventLog(time_from_seq=True)
    job = wide_job(pods)
    state = core.initial()
    history = [
        log.event("JobSubmitted", job.meta.key, {"object": encode_object(job)}),
        log.event("PodGroupCreated", job.meta.key, {"object": encode_object(podgroup_for(job))}),
        log.event("PodGroupStatusChanged", job.meta.key, {"phase": "Running", "conditions": []}),
    ]
    for i in range(pods):
        pod = pod_for(job, job.tasks[0], i, created_at=2.0)
        history.append(log.event("PodCreated", pod.meta.key, {"object": encode_object(pod)}))
        history.append(log.event("PodBound", pod.meta.key, {"node": "n0", "plan": "p"}))
        history.append(log.event("PodRunning", pod.meta.key, {"node": "n0", "started_at": 3.0}))
    for event in history:
        state = core.apply(state, event)
    core.reconcile(state, 10.0)
    core.dirty(state).clear()
    return core, state, log


def pod_event(log: EventLog, type: str, index: int, **payload: Any) -> Event:
    return log.event(type, f"{NS}/wide-worker-{index}", {"node": "n0", **payload})


def test_a_pod_change_marks_its_pod_job_and_podgroup_once_per_write() -> None:
    core, state, log = running(4)
    state = core.apply(state, pod_event(log, "PodEvicting", 1, reason="preempt", plan="p2"))
    state = core.apply(state, pod_event(log, "PodTerminated", 1, reason="Evicted"))
    state = core.apply(state, pod_event(log, "PodSucceeded", 2, exit_code=0))
    dirty = core.dirty(state)
    # pod 1 changed twice, the job and the PodGroup three times: each is rendered and written once
    assert set(dirty) == {("pod", NS, "wide-worker-1"), ("pod", NS, "wide-worker-2")} | {
        ("job", NS, "wide"),
        ("podgroup", NS, "wide"),
    }
    assert dirty[("job", NS, "wide")] == log.seq  # as of the last change


def one_pod_change(pods: int) -> int:
    core, state, log = running(pods)
    for key in (("job", NS, "wide"), ("podgroup", NS, "wide"), ("pod", NS, "wide-worker-1")):
        core.render(state, key)  # written before: the job's spec parts are encoded already
    event = pod_event(log, "PodSucceeded", 0, exit_code=0)

    def work() -> int:
        applied = core.apply(state, event)
        core.reconcile(applied, 10.0, core.touched(applied, event))
        marked = core.dirty(applied)
        for key in marked:
            core.render(applied, key)
        return len(marked)

    rendered, count = calls(work)
    assert rendered == 3  # the pod, the job's counts, the PodGroup's counts
    return count


def test_a_pod_changes_work_does_not_grow_with_its_jobs_other_pods() -> None:
    small, large = one_pod_change(4), one_pod_change(200)
    assert small > 0 and large == small, f"{small} calls for a job of 4 pods, {large} for one of 200"


def test_the_plain_core_decodes_no_jobs_podgroup_created(monkeypatch: Any) -> None:
    """A Job's PodGroup is decoded by the Jobs' fold; the plain core tells it is not one of its own from
    its annotations, undecoded (it decoded each one again before)."""
    decoded: list[str] = []
    plain_decoded = plain_fold._decoded

    def counting(document: Any, cls: Any) -> Any:
        obj = plain_decoded(document, cls)
        decoded.append(obj.meta.name)
        return obj

    monkeypatch.setattr(plain_fold, "_decoded", counting)
    core, log = ControllerCore(), EventLog(time_from_seq=True)
    state = core.initial()
    job = wide_job(2)
    state = core.apply(state, log.event("JobSubmitted", job.meta.key, {"object": encode_object(job)}))
    group = encode_object(podgroup_for(job))
    state = core.apply(state, log.event("PodGroupCreated", job.meta.key, {"object": group}))
    assert decoded == []
    assert state.jobs.core.jobs[job.meta.key].podgroup == "Pending"  # the Jobs' fold took it
    meta = ObjectMeta("pod-a", NS, annotations={OWNER: owned_by_pod("pod-a")})
    plain = encode_object(PodGroup(meta=meta, min_member=1))
    state = core.apply(state, log.event("PodGroupCreated", f"{NS}/pod-a", {"object": plain}))
    assert decoded == ["pod-a"]  # its own, decoded


def test_a_pod_created_whose_metadata_has_the_wrong_types_is_refused_naming_the_fields() -> None:
    """The fold reads a PodCreated's uid, creation time and annotations without the codec (see
    fold._created_pod_meta): what it would have refused it still refuses, naming every wrong field."""
    core, log = ControllerCore(), EventLog(time_from_seq=True)
    state = core.initial()
    job = wide_job(1)
    state = core.apply(state, log.event("JobSubmitted", job.meta.key, {"object": encode_object(job)}))
    pod = encode_object(pod_for(job, job.tasks[0], 0, created_at=2.0))
    meta = pod["object"]["meta"]
    bad = {**pod, "object": {**pod["object"], "meta": {**meta, "uid": 7, "creation_timestamp": "noon"}}}
    with pytest.raises(codec.DecodeError, match=r"object\.meta\.uid, object\.meta\.creation_timestamp"):
        core.apply(state, log.event("PodCreated", f"{NS}/wide-worker-0", {"object": bad}))
    annotations = {**meta["annotations"], "volcano.sh/task-index": 0}
    bad = {**pod, "object": {**pod["object"], "meta": {**meta, "annotations": annotations}}}
    with pytest.raises(codec.DecodeError, match=r"object\.meta\.annotations"):
        core.apply(state, log.event("PodCreated", f"{NS}/wide-worker-0", {"object": bad}))
    state = core.apply(state, log.event("PodCreated", f"{NS}/wide-worker-0", {"object": pod}))
    record = state.jobs.core.jobs[job.meta.key].pods["wide-worker-0"]
    assert (record.uid, record.created_at, record.task, record.index) == (meta["uid"], 2.0, "worker", 0)
