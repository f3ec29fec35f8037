"""The job-controller's read-model values encoded directly (core/render.py): equal to the encoding of the
objects objects.py builds, at every step of a job's life, and built from spec parts encoded once per job
rather than once per render."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from contracts import codec
from contracts.job_shape import default_job
from contracts.objects import (
    Container,
    Job,
    ObjectMeta,
    PartitionPolicy,
    PodSpec,
    PodTemplate,
    PriorityClass,
    TaskSpec,
)
from contracts.resources import Resources
from services.job_controller.core import render
from services.job_controller.core.expand import pod_for
from services.job_controller.core.objects import job_object, pod_object, podgroup_object
from services.job_controller.core.projection import ObjectKey, Projected, ProjectedCore
from services.job_controller.core.state import pod_key
from shared.runner_types import Event

NS = "team-r"


def gang(name: str = "gang", workers: int = 3) -> Job:
    spec = PodSpec(
        containers=(Container("c", requests=Resources.parse({"cpu": "1"})),), priority_class_name="high"
    )
    # template labels and annotations overlapping the ones pod_for sets: pod_for's win, in place
    template = PodTemplate(
        spec=spec,
        labels={"team": "r", "volcano.sh/task-index": "template"},
        annotations={"lahar.dev/run-seconds": "2", "volcano.sh/job-version": "template"},
    )
    tasks = (
        TaskSpec("ps", 1, template=PodTemplate(spec=spec)),
        TaskSpec("worker", workers, template=template),
    )
    meta = ObjectMeta(name, NS, uid=f"uid-{name}", annotations={"lahar.dev/sim": "1", "other": "x"})
    return Job(meta, tasks, min_available=2)


class Log:
    def __init__(self) -> None:
        self.core = ProjectedCore()
        self.state: Projected = self.core.initial()
        self.seq = 0

    def add(self, type: str, kind: str, name: str, payload: Any = None, *, id: str = "") -> None:
        self.seq += 1
        event = Event(
            seq=self.seq,
            type=type,
            kind=kind,
            namespace=NS if kind != "priorityclass" else None,
            name=name,
            payload=payload or {},
            id=id or str(uuid.UUID(int=self.seq)),
            time=float(self.seq),
            correlation_id="test",
        )
        self.state = self.core.apply(self.state, event)

    def settle(self, now: float = 100.0) -> None:
        for _ in range(10):
            outputs = self.core.reconcile(self.state, now)
            if not outputs:
                return
            for o in outputs:
                self.add(o.type, o.kind, o.name, o.plain_payload, id=o.id)
        raise AssertionError("reconcile does not converge")

    def reference(self, key: ObjectKey) -> dict[str, Any] | None:
        """What objects.py builds for `key`, encoded."""
        kind, namespace, name = key
        full = pod_key(namespace or "", name)
        core = self.state.core
        if kind == "job":
            obj = job_object(core.jobs.get(full))
        elif kind == "podgroup":
            conditions = self.state.conditions.get(full, ())
            obj = podgroup_object(core.jobs.get(full), conditions, core.priority_classes)
        else:
            record = core.jobs.get(core.pod_owner.get(full, ""))
            details, deleted = self.state.pod_details.get(full), self.state.deletion_times.get(full)
            obj = pod_object(record, name, details, deleted)
        return None if obj is None else codec.encode_object(obj)

    def check(self) -> int:
        """Every object ever known renders as its reference; returns how many exist."""
        keys = {("job", NS, "gang"), ("podgroup", NS, "gang")}
        keys |= {("pod", NS, f"gang-{t}-{i}") for t, n in (("ps", 1), ("worker", 4)) for i in range(n)}
        existing = 0
        for key in sorted(keys, key=str):
            value = self.core.render(self.state, key)
            assert value == self.reference(key), key
            existing += value is not None
        return existing


def test_every_value_equals_the_objects_encoding_through_a_jobs_life() -> None:
    log = Log()
    assert log.check() == 0
    log.add("JobSubmitted", "job", "gang", {"object": codec.encode_object(gang())})
    assert log.check() == 1
    log.settle()
    log.add("PodGroupStatusChanged", "podgroup", "gang", {"phase": "Inqueue", "conditions": []})
    log.settle()
    assert log.check() == 6
    for pod in ("gang-ps-0", "gang-worker-0", "gang-worker-1"):
        log.add("PodBound", "pod", pod, {"node": "n1", "plan": "p1"})
        log.add("PodRunning", "pod", pod, {"node": "n1"})
    log.settle()
    log.check()
    condition = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "0/1"}
    log.add("PodGroupStatusChanged", "podgroup", "gang", {"phase": "Running", "conditions": [condition]})
    log.add("PodFailed", "pod", "gang-worker-0", {"node": "n1", "exit_code": 3, "reason": "Error"})
    log.add("PodEvicting", "pod", "gang-worker-1", {"node": "n1", "reason": "preempt", "plan": "p2"})
    log.check()
    log.settle()  # the failure restarts the job (Volcano's default policy): pods deleted and created again
    log.check()
    log.add("PriorityClassApplied", "priorityclass", "high", {"object": codec.encode_object(high(1000))})
    log.check()  # the PodGroup's minResources take the class into account
    scaled = default_job(gang(workers=4))
    log.add("JobUpdated", "job", "gang", {"object": codec.encode_object(scaled)})
    log.settle()
    log.check()  # a new spec renders the new spec, not the memo of the old one
    log.add("JobDeleted", "job", "gang")
    log.settle()
    log.check()


def high(value: int) -> PriorityClass:
    return PriorityClass(ObjectMeta("high", ""), value=value)


@pytest.mark.parametrize(
    ("index", "generation", "retry_count", "version"), [(0, 0, 0, 0), (2, 1, 0, 0), (7, 3, 2, 5)]
)
def test_a_created_pod_equals_pod_for(index: int, generation: int, retry_count: int, version: int) -> None:
    job = default_job(gang(workers=8))
    task = job.tasks[1]
    at = 1_700_000_000.25
    expected = codec.encode(
        pod_for(
            job, task, index, created_at=at, generation=generation, retry_count=retry_count, version=version
        )
    )
    made = render.pod_doc(
        "team-r/gang",
        job,
        task,
        index,
        created_at=at,
        generation=generation,
        retry_count=retry_count,
        version=version,
    )
    assert made == expected
    assert list(made["meta"]["annotations"]) == list(expected["meta"]["annotations"])  # the order too


def test_spec_parts_are_encoded_once_per_job_not_per_render(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real = render.pod_for

    def counted(job: Job, task: TaskSpec, index: int, **kwargs: Any) -> Any:
        built.append(task.name)
        return real(job, task, index, **kwargs)

    monkeypatch.setattr(render, "pod_for", counted)
    log = Log()
    log.add("JobSubmitted", "job", "gang", {"object": codec.encode_object(gang(workers=40))})
    log.settle()
    log.add("PodGroupStatusChanged", "podgroup", "gang", {"phase": "Inqueue", "conditions": []})
    log.settle()  # 41 PodCreated payloads
    for i in range(40):
        log.add("PodBound", "pod", f"gang-worker-{i}", {"node": "n1", "plan": "p1"})
    for _ in range(3):
        for i in range(40):
            log.core.render(log.state, ("pod", NS, f"gang-worker-{i}"))
    assert sorted(built) == ["ps", "worker"]  # one template per task for 41 pods and 161 values


def test_the_memo_keeps_at_most_its_limit_of_jobs() -> None:
    memo = render._Memo(3)
    jobs = [default_job(gang(f"g{i}")) for i in range(5)]
    for job in jobs:
        memo.of(f"{NS}/{job.meta.name}", job)
    assert list(memo.jobs) == [f"{NS}/g2", f"{NS}/g3", f"{NS}/g4"]  # the oldest dropped
    renewed = default_job(gang("g3", workers=5))
    assert memo.of(f"{NS}/g3", renewed).job is renewed  # a new spec replaces its job's parts
    assert len(memo.jobs) == 3


def test_the_memo_drops_the_job_rendered_least_recently() -> None:
    """A burst of more running jobs than the limit: the jobs still being rendered keep their parts."""
    memo = render._Memo(3)
    jobs = {name: default_job(gang(name)) for name in ("busy", "a", "b", "c", "d")}
    busy = memo.of(f"{NS}/busy", jobs["busy"])
    for name in ("a", "b", "c", "d"):
        assert memo.of(f"{NS}/busy", jobs["busy"]) is busy  # still rendered between the others
        memo.of(f"{NS}/{name}", jobs[name])
    assert memo.of(f"{NS}/busy", jobs["busy"]) is busy
    assert list(memo.jobs) == [f"{NS}/c", f"{NS}/d", f"{NS}/busy"]


@pytest.mark.parametrize("index", [0, 1, 2, 5, 7])
def test_a_partitioned_pod_equals_pod_for(index: int) -> None:
    """The memo's pod template is pod 0's: every other pod gets its own partition label."""
    job = gang(workers=8)
    worker = replace(job.tasks[1], partition_policy=PartitionPolicy(total_partitions=4, partition_size=2))
    job = default_job(replace(job, tasks=(job.tasks[0], worker)))
    task = job.tasks[1]
    made = render.pod_doc("team-r/gang", job, task, index, created_at=1.0)
    assert made == codec.encode(pod_for(job, task, index, created_at=1.0))
    assert made["meta"]["labels"]["volcano.sh/partition-id"] == str(index // 2)
