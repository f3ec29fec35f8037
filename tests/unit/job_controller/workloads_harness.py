"""A hand-made log for the workloads core's tests: objects applied and deleted as admission would write
them, the core's requests answered as admission answers them (a create writes JobSubmitted with the id
the request asked for, a delete JobDeleted), and jobs moved through their phases as the job-controller
would report them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from support.events import EventLog, job_status

from contracts import payloads
from contracts.codec import decode_object, encode_object
from contracts.objects import Job
from contracts.parse import parse_object
from services.job_controller.core.workloads.core import WorkloadsCore
from services.job_controller.core.workloads.state import WorkloadsState
from shared.runner_types import Event, Output

APPLIED = {"CronJob": "CronJobApplied", "JobTemplate": "JobTemplateApplied", "JobFlow": "JobFlowApplied"}
DELETED = {"CronJob": "CronJobDeleted", "JobTemplate": "JobTemplateDeleted", "JobFlow": "JobFlowDeleted"}


def job_spec(sleep: str = "10") -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", f"sleep {sleep}"]}
    return {
        "queue": "default",
        "tasks": [{"name": "worker", "replicas": 1, "template": {"spec": {"containers": [container]}}}],
    }


def cronjob(name: str = "tick", schedule: str = "*/5 * * * *", **spec: Any) -> Any:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": job_spec()}, **spec},
    }
    return parse_object(doc, "test")


def template(name: str) -> Any:
    doc = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": job_spec(),
    }
    return parse_object(doc, "test")


def jobflow(name: str, flows: list[dict[str, Any]], retain: str = "retain") -> Any:
    doc = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"flows": flows, "jobRetainPolicy": retain},
    }
    return parse_object(doc, "test")


class Cluster:
    def __init__(self) -> None:
        self.core = WorkloadsCore()
        self.state: WorkloadsState = self.core.initial()
        self.log = EventLog()
        self.events: list[Event] = []
        self.requests: list[Output] = []  # every request the core made that admission answered

    def fold(self, event: Event) -> Event:
        self.core.apply(self.state, event)
        self.events.append(event)
        return event

    def apply(self, obj: Any, at: float = 0.0, uid: str = "") -> Any:
        """Admission's event for an applied object, stamped as admission stamps a new one."""
        existing = self._stored(obj.kind, obj.meta.key)
        meta = replace(
            obj.meta,
            uid=existing.meta.uid if existing else uid or f"uid-{obj.meta.name}",
            creation_timestamp=existing.meta.creation_timestamp if existing else at,
        )
        obj = replace(obj, meta=meta)
        self.fold(self.log.event(APPLIED[obj.kind], obj.meta.key, {"object": encode_object(obj)}, at=at))
        return obj

    def _stored(self, kind: str, key: str) -> Any:
        for event in reversed(self.events):
            if event.type == DELETED.get(kind) and f"{event.namespace}/{event.name}" == key:
                return None
            if event.type == APPLIED.get(kind) and f"{event.namespace}/{event.name}" == key:
                return decode_object(event.payload["object"])
        return None

    def delete(self, kind: str, key: str, at: float = 0.0) -> None:
        self.fold(self.log.event(DELETED[kind], key, at=at))

    def reconcile(self, now: float, keys: Any = None) -> list[Output]:
        return self.core.reconcile(self.state, now, keys)

    def settle(self, now: float) -> list[Output]:
        """Reconcile and answer every request as admission would, until the core asks nothing new."""
        answered: list[Output] = []
        for _ in range(20):
            fresh = [o for o in self.reconcile(now) if o.id not in {e.id for e in self.events}]
            if not fresh:
                return answered
            for output in fresh:
                self.answer(output, now)
                answered.append(output)
        raise AssertionError("the workloads core does not settle")

    def answer(self, output: Output, now: float) -> None:
        key = f"{output.namespace}/{output.name}"
        if output.type == "JobSubmitted":
            assert isinstance(output.payload, payloads.JobSubmitted)
            job = output.payload.decoded()
            job = replace(job, meta=replace(job.meta, uid=f"uid-{output.id[:8]}", creation_timestamp=now))
            self.fold(
                self.log.event("JobSubmitted", key, {"object": encode_object(job)}, at=now, id=output.id)
            )
        else:
            self.fold(self.log.event(output.type, key, at=now, id=output.id))
        self.requests.append(output)

    def submit_foreign(self, job: Job, at: float = 0.0) -> None:
        self.fold(self.log.event("JobSubmitted", job.meta.key, {"object": encode_object(job)}, at=at))

    def job_phase(self, name: str, phase: str, at: float, **status: Any) -> None:
        self.fold(
            self.log.event(
                "JobStatusChanged",
                f"default/{name}",
                job_status(phase, last_transition_time=at, **status),
                at=at,
            )
        )

    def jobs(self) -> list[str]:
        """The names of the jobs that exist, in the order they were created."""
        alive: dict[str, None] = {}
        for event in self.events:
            if event.type == "JobSubmitted":
                alive[event.name] = None
            elif event.type in ("JobDeleted", "JobCleanedUp"):
                alive.pop(event.name, None)
        return list(alive)

    def created(self) -> list[str]:
        return [o.name for o in self.requests if o.type == "JobSubmitted"]

    def deleted(self) -> list[str]:
        return [o.name for o in self.requests if o.type == "JobDeleted"]

    def rendered(self, kind: str, name: str) -> Any:
        value = self.core.render(self.state, (kind, "default", name))
        return None if value is None else decode_object(value)
