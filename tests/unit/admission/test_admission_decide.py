"""decide(): create, update, apply, delete and command requests, the events each accepted request emits,
job update rules, and how rejections are reported."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from admission_manifests import (
    command_doc,
    context,
    hypernode_doc,
    job_doc,
    parse,
    priority_class_doc,
    queue_doc,
    task,
)

from contracts import payloads
from contracts.events import ADMISSION, EVENT_TYPES, writer_of
from contracts.objects import Job, JobState, JobStatus, ObjectMeta, Queue, QueueStatus
from services.admission.core.context import ClusterContext
from services.admission.core.decide import Decision, Request, decide
from services.admission.core.mutate import mutate_job


def _stored_job(**spec: Any) -> Job:
    """A job as admission stored it: defaulted, with identity and a status the job-controller wrote."""
    job = parse(job_doc(**spec))
    assert isinstance(job, Job)
    job = mutate_job(job)
    return replace(
        job,
        meta=replace(job.meta, uid="uid-1", creation_timestamp=5.0),
        status=JobStatus(state=JobState(phase="Running"), version=2),
    )


def _cluster(*docs: dict[str, Any], jobs: tuple[Job, ...] = ()) -> ClusterContext:
    ctx = context(*docs)
    return replace(ctx, jobs={**ctx.jobs, **{j.meta.key: j for j in jobs}})


def _decide(operation: str, doc: dict[str, Any], ctx: ClusterContext, **request: Any) -> Decision:
    decision = decide(Request(operation, parse(doc), **request), ctx)
    for event in decision.events:
        assert writer_of(event.type) == ADMISSION
        assert isinstance(event.payload, EVENT_TYPES[event.type].payload_class)
    return decision


def _paths(decision: Decision) -> list[str]:
    assert not decision.accepted and not decision.objects
    return [e.path for e in decision.errors]


def test_create_job_is_defaulted_and_submitted() -> None:
    doc = job_doc()
    doc["status"] = {"state": {"phase": "Completed"}}  # status is the job-controller's to write
    decision = _decide("create", doc, context())
    assert decision.accepted and decision.errors == ()
    (job,) = decision.objects
    assert isinstance(job, Job)
    assert job.min_available == 3 and [t.max_retry for t in job.tasks] == [3, 3]
    assert job.status == JobStatus()
    ((kind, obj, payload),) = decision.events
    assert (kind, obj) == ("JobSubmitted", job)
    assert payload.decoded() == job


def test_create_of_an_existing_job_is_rejected() -> None:
    decision = _decide("create", job_doc(), _cluster(jobs=(_stored_job(),)))
    assert _paths(decision) == ["metadata.name"]
    assert "already exists" in decision.errors[0].message


def test_update_of_a_missing_job_is_rejected() -> None:
    assert _paths(_decide("update", job_doc(), context())) == ["metadata.name"]


def test_apply_creates_then_updates() -> None:
    created = _decide("apply", job_doc(), context())
    assert [e.type for e in created.events] == ["JobSubmitted"]
    updated = _decide(
        "apply", job_doc(tasks=[task("ps"), task("worker", 4)]), _cluster(jobs=(_stored_job(),))
    )
    assert [e.type for e in updated.events] == ["JobUpdated"]


def test_job_update_keeps_identity_and_status() -> None:
    stored = _stored_job()
    decision = _decide("update", job_doc(tasks=[task("ps"), task("worker", 4)]), _cluster(jobs=(stored,)))
    (job,) = decision.objects
    assert isinstance(job, Job)
    assert (job.meta.uid, job.meta.creation_timestamp, job.status) == ("uid-1", 5.0, stored.status)
    assert [t.replicas for t in job.tasks] == [1, 4]
    # the job's minAvailable was defaulted from the replicas, so re-defaulting follows the new count
    assert job.min_available == 5


def test_reapplying_an_unchanged_job_records_nothing() -> None:
    decision = _decide("apply", job_doc(), _cluster(jobs=(_stored_job(),)))
    assert decision.accepted and decision.events == ()


# (id, update of the stored job, [paths], fragment of the first message)
UPDATE_CASES: list[tuple[str, dict[str, Any], list[str], str]] = [
    (
        "add-task",
        job_doc(tasks=[task("ps"), task("worker", 2), task("eval")]),
        ["spec.tasks"],
        "add or remove tasks",
    ),
    ("remove-task", job_doc(tasks=[task("ps")]), ["spec.tasks"], "add or remove tasks"),
    ("change-queue", job_doc(queue="other"), ["spec.queue"], "only minAvailable, tasks[*].replicas"),
    ("change-max-retry", job_doc(maxRetry=9), ["spec.maxRetry"], "may not be changed"),
    ("change-plugins", job_doc(plugins={"env": []}), ["spec.plugins"], "may not be changed"),
    (
        "rename-task",
        job_doc(tasks=[task("ps"), task("workers", 2)]),
        ["spec.tasks[1].name"],
        "may not be changed",
    ),
    (
        "change-task-template",
        job_doc(tasks=[task("ps"), task("worker", 2, pod_spec={"containers": [{"name": "other"}]})]),
        ["spec.tasks[1].template"],
        "may not be changed",
    ),
    (
        "task-min-available-above-new-replicas",
        job_doc(minAvailable=2, tasks=[task("ps"), task("worker", 1, minAvailable=2)]),
        ["spec.tasks[1].minAvailable"],
        "greater than 'replicas'",
    ),
    (
        "job-min-available-above-new-replicas",
        job_doc(minAvailable=3, tasks=[task("ps"), task("worker", 1)]),
        ["spec.minAvailable"],
        "greater than total replicas",
    ),
    (
        "priority-class-missing",
        job_doc(priorityClassName="urgent"),
        ["spec.priorityClassName"],
        "no PriorityClass",
    ),
]


@pytest.mark.parametrize(
    ("doc", "paths", "fragment"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES]
)
def test_job_update_rules(doc: dict[str, Any], paths: list[str], fragment: str) -> None:
    decision = _decide("update", doc, _cluster(queue_doc("other"), jobs=(_stored_job(),)))
    assert _paths(decision) == paths
    assert fragment in decision.errors[0].message


def test_allowed_job_updates() -> None:
    ctx = _cluster(priority_class_doc("high", 10), jobs=(_stored_job(),))
    doc = job_doc(
        minAvailable=2, priorityClassName="high", tasks=[task("ps", 2, minAvailable=1), task("worker", 5)]
    )
    doc["metadata"]["labels"] = {"team": "nlp"}
    decision = _decide("update", doc, ctx)
    assert decision.accepted, decision.errors
    assert [e.type for e in decision.events] == ["JobUpdated"]


def test_a_job_in_a_closed_queue_can_still_be_scaled() -> None:
    ctx = _cluster(queue_doc("closed", status={"state": "Closed"}), jobs=(_stored_job(queue="closed"),))
    assert _decide("update", job_doc(queue="closed", tasks=[task("ps"), task("worker", 3)]), ctx).accepted
    assert not _decide("create", job_doc(name="new", queue="closed"), ctx).accepted


def test_queue_create_and_update() -> None:
    created = _decide("create", queue_doc("ml", status={"state": "Closed", "running": 3}), context())
    (queue,) = created.objects
    assert isinstance(queue, Queue)
    assert (queue.reclaimable, queue.status) == (True, QueueStatus(state="Closed"))
    assert [e.type for e in created.events] == ["QueueApplied"]
    stored = replace(
        queue, meta=replace(queue.meta, uid="q-uid"), status=QueueStatus(state="Open", running=2)
    )
    ctx = replace(context(), queues={**context().queues, "ml": stored})
    updated = _decide("apply", queue_doc("ml", weight=4), ctx)
    (queue,) = updated.objects
    assert isinstance(queue, Queue)
    assert (queue.weight, queue.status, queue.meta.uid) == (4, stored.status, "q-uid")
    assert [e.type for e in updated.events] == ["QueueApplied"]


def test_priority_class_and_hypernode_events() -> None:
    pc = _decide("apply", priority_class_doc("high", 10), context())
    assert [e.type for e in pc.events] == ["PriorityClassApplied"]
    members = [{"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}]
    hn = _decide("create", hypernode_doc(members=members), context())
    assert [e.type for e in hn.events] == ["HyperNodeApplied"]
    assert _paths(_decide("create", hypernode_doc(members=[]), context())) == ["spec.members"]


def test_nodes_are_turned_away() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    decision = _decide("create", node, context())
    assert _paths(decision) == ["kind"]
    assert "register themselves through their node agent" in decision.errors[0].message


@pytest.mark.parametrize(
    ("kind", "name", "extra", "event"),
    [
        ("Job", "train", {"namespace": "default"}, "JobDeleted"),
        ("Queue", "ml", {}, "QueueDeleted"),
        ("PriorityClass", "high", {}, "PriorityClassDeleted"),
        ("HyperNode", "rack", {}, "HyperNodeDeleted"),
    ],
)
def test_delete(kind: str, name: str, extra: dict[str, str], event: str) -> None:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}]
    ctx = _cluster(
        queue_doc("ml"), priority_class_doc("high", 10), hypernode_doc(members=members), jobs=(_stored_job(),)
    )
    decision = decide(Request("delete", kind=kind, name=name, **extra), ctx)
    assert decision.accepted
    ((event_type, obj, payload),) = decision.events
    assert (event_type, obj.meta.name, payload) == (event, name, payloads.Empty())
    missing = decide(Request("delete", kind=kind, name="missing", **extra), ctx)
    assert [e.path for e in missing.errors] == ["metadata.name"] and not missing.accepted


def test_delete_applies_the_queue_rules_and_refuses_other_kinds() -> None:
    ctx = context(queue_doc("eng"), queue_doc("child", parent="eng"))
    for name, fragment in (("default", "can not be deleted"), ("eng", "child queues: child")):
        decision = decide(Request("delete", kind="Queue", name=name), ctx)
        assert not decision.accepted and fragment in decision.errors[0].message
    decision = decide(Request("delete", kind="Node", name="n1"), ctx)
    assert [e.path for e in decision.errors] == ["kind"]


@pytest.mark.parametrize(
    ("action", "kind", "target", "key"),
    [
        ("AbortJob", "Job", "train", "default/train"),  # vcctl job suspend
        ("ResumeJob", "Job", "train", "default/train"),  # vcctl job resume
        ("RestartJob", "Job", "train", "default/train"),
        ("TerminateJob", "Job", "train", "default/train"),
        ("OpenQueue", "Queue", "ml", "ml"),
        ("CloseQueue", "Queue", "ml", "ml"),
    ],
)
def test_command_issued(action: str, kind: str, target: str, key: str) -> None:
    ctx = _cluster(queue_doc("ml"), jobs=(_stored_job(),))
    decision = _decide("command", command_doc(action, kind, target), ctx)
    assert decision.accepted
    ((event_type, obj, payload),) = decision.events
    assert event_type == "CommandIssued" and obj == decision.objects[0]
    assert payload == payloads.CommandIssued(action=action, target_kind=kind, target=key)


@pytest.mark.parametrize(
    ("action", "kind", "target", "path"),
    [
        ("AbortJob", "Job", "missing", "target.name"),
        ("CloseQueue", "Queue", "missing", "target.name"),
        ("OpenQueue", "Job", "train", "action"),
        ("RestartTask", "Job", "train", "action"),
        ("AbortJob", "Queue", "ml", "action"),
    ],
)
def test_command_rejected(action: str, kind: str, target: str, path: str) -> None:
    ctx = _cluster(queue_doc("ml"), jobs=(_stored_job(),))
    assert _paths(_decide("command", command_doc(action, kind, target), ctx)) == [path]


def test_a_command_manifest_applied_is_issued_and_named_after_its_target() -> None:
    command = parse(command_doc("AbortJob", "Job", "train"))
    command = replace(command, meta=ObjectMeta(name="", namespace="default"))
    decision = decide(Request("apply", command), _cluster(jobs=(_stored_job(),)))
    assert decision.accepted
    assert decision.objects[0].meta.name == "train-abortjob"
    assert [e.type for e in decision.events] == ["CommandIssued"]


def test_rejected_intake_manifests_are_recorded() -> None:
    decision = _decide("create", job_doc(queue="nowhere"), context(), source="lahar.intake.job.default.train")
    ((event_type, obj, payload),) = decision.events
    assert event_type == "ManifestRejected" and obj.meta.name == "train"
    assert payload == payloads.ManifestRejected(
        errors=(
            payloads.RejectedField(
                document="Job default/train",
                path="spec.queue",
                message="unable to find job queue 'nowhere'",
            ),
        ),
        source="lahar.intake.job.default.train",
    )
    # an API caller gets the errors in the reply; nothing is recorded
    assert _decide("create", job_doc(queue="nowhere"), context()).events == ()


def test_documents_are_named_by_kind_and_key_unless_the_request_names_them() -> None:
    decision = _decide("create", job_doc(queue="nowhere"), context())
    assert decision.errors[0].document == "Job default/train"
    decision = _decide("create", job_doc(queue="nowhere"), context(), document="jobs.yaml#2")
    assert decision.errors[0].document == "jobs.yaml#2"


def test_malformed_requests() -> None:
    assert [e.path for e in decide(Request("patch", parse(job_doc())), context()).errors] == ["operation"]
    assert not decide(Request("create"), context()).accepted
