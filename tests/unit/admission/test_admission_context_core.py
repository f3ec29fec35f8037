"""Admission's view folded from the log (context_core): what each event changes in the ClusterContext, the
per-subject sequences that guard writes, checkpoints, and the planning of a multi-object request."""

from __future__ import annotations

from typing import Any

import pytest
from admission_manifests import job_doc, parse, queue_doc, task
from support.events import job_status

from contracts.codec import encode_object
from contracts.objects import ApiObject, Command, ObjectMeta, OwnerReference
from services.admission.context_core import AdmissionViewCore, View, plan
from services.admission.core.decide import APPLY, COMMAND, DELETE, Request
from services.admission.core.tenants import Tenant
from shared.runner_types import Event

CORE = AdmissionViewCore()


def event(
    seq: int,
    type: str,
    kind: str,
    subject: str,
    namespace: str | None = None,
    by: str = "",
    *,
    correlation: str = "corr",
    **payload: Any,
) -> Event:
    return Event(seq, type, kind, namespace, subject, payload, f"id-{seq}", 1.0, correlation, producer=by)


def applied(seq: int, obj: ApiObject, type: str) -> Event:
    kind = obj.kind.lower()
    namespace = obj.meta.namespace or None
    return event(seq, type, kind, obj.meta.name, namespace, "admission", object=encode_object(obj))


def pod(name: str, queue: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "object": {
            "meta": {"name": name, "namespace": "default", "annotations": {"volcano.sh/queue-name": queue}}
        },
    }


def folded(*events: Event) -> View:
    view = CORE.initial()
    for e in events:
        view = CORE.apply(view, e)
    return view


RESEARCH = parse(queue_doc("research", weight=2))
TRAIN = parse(job_doc())
RESEARCH_TRAIN = parse(job_doc(queue="research"))


@pytest.mark.parametrize(
    ("events", "check"),
    [
        ((), lambda c: set(c.queues) == {"root", "default"} and not c.jobs),
        ((applied(1, RESEARCH, "QueueApplied"),), lambda c: c.queues["research"].weight == 2),
        (
            (
                applied(1, RESEARCH, "QueueApplied"),
                event(2, "QueueStateChanged", "queue", "research", state="Closed"),
            ),
            lambda c: c.queues["research"].status.state == "Closed",
        ),
        (
            (applied(1, RESEARCH, "QueueApplied"), event(2, "QueueDeleted", "queue", "research")),
            lambda c: "research" not in c.queues,
        ),
        ((applied(1, TRAIN, "JobSubmitted"),), lambda c: c.jobs["default/train"].tasks[1].replicas == 2),
        (
            (applied(1, TRAIN, "JobSubmitted"), event(2, "JobDeleted", "job", "train", "default")),
            lambda c: not c.jobs,
        ),
        (
            (
                applied(1, RESEARCH_TRAIN, "JobSubmitted"),
                event(
                    2, "PodBound", "pod", "a", "default", correlation="default/train", node="n1", plan="p1"
                ),
                event(
                    3, "PodBound", "pod", "b", "default", correlation="default/train", node="n1", plan="p1"
                ),
                event(4, "PodSucceeded", "pod", "b", "default", correlation="default/train", node="n1"),
            ),
            lambda c: c.allocated_pods("research") == 1,
        ),
        # another writer's undecodable object is skipped, not fatal (a payload of the wrong shape never
        # reaches the core: Event refuses it)
        (
            (event(1, "JobSubmitted", "job", "x", "default", object={"kind": "Job", "object": {"meta": 5}}),),
            lambda c: not c.jobs,
        ),
    ],
)
def test_fold_builds_the_context(events: tuple[Event, ...], check: Any) -> None:
    view = folded(*events)
    assert check(view.context())
    assert view.seq == (events[-1].seq if events else 0)


SECRET = {"name": "train-ssh", "uid": "u", "data": {}}  # JobSecretCreated's payload


def test_subject_sequences_track_admissions_own_writes_per_object() -> None:
    view = folded(
        applied(1, TRAIN, "JobSubmitted"),
        event(2, "JobStatusChanged", "job", "train", "default", "job-controller", **job_status("Running")),
        event(
            3, "JobSecretCreated", "job", "train", "default", "admission", name="train-ssh", uid="u", data={}
        ),
        event(4, "JobStatusChanged", "job", "train", "default", "job-controller", **job_status("Running")),
        event(5, "PodCreated", "pod", "a", "default", "job-controller", object=pod("a", "default")),
    )
    # a compare-and-set covers admission's own events about the object (its guard subject), so the
    # job-controller's writes neither count nor make admission's next write about the job conflict
    assert view.subject_seq("job", "default", "train") == 3
    assert view.subject_seq("pod", "default", "a") == 0


def test_checkpoints_round_trip() -> None:
    view = folded(
        applied(1, RESEARCH, "QueueApplied"),
        applied(2, TRAIN, "JobSubmitted"),
        event(3, "PodBound", "pod", "a", "default", correlation="default/train", node="n1", plan="p1"),
    )
    assert view.context().allocated_pods("default") == 1
    loaded = CORE.load(CORE.dump(view))
    assert loaded.context() == view.context() and loaded.subjects == view.subjects and loaded.seq == 3
    assert CORE.reconcile(loaded, 10.0) == []


def test_plan_decides_each_object_against_the_ones_before_it() -> None:
    job = parse(job_doc(queue="research"))
    alone = plan([Request(APPLY, job)], folded(), "r1", 100.0)
    assert not alone.accepted and any(e.path == "spec.queue" for e in alone.errors)

    both = plan([Request(APPLY, RESEARCH), Request(APPLY, job)], folded(), "r1", 100.0)
    assert both.accepted and [(o.kind, o.action) for o in both.outcomes] == [
        ("Queue", "created"),
        ("Job", "created"),
    ]
    assert [(w.kind, w.expected_last_subject_seq, w.correlation_id) for w in both.writes] == [
        ("queue", 0, "research"),
        ("job", 0, "default/train"),
    ]
    stamped = both.writes[1].emit.object
    assert stamped.meta.creation_timestamp == 100.0 and stamped.meta.uid
    again = plan([Request(APPLY, RESEARCH), Request(APPLY, job)], folded(), "r1", 200.0)
    assert again.writes[1].emit.object.meta.uid == stamped.meta.uid  # a retried request: the same identity


def test_plan_guards_a_subject_once_per_request_and_reports_unchanged_objects() -> None:
    (submitted,) = plan([Request(APPLY, TRAIN)], folded(), "r0", 1.0).writes
    view = folded(applied(7, submitted.emit.object, "JobSubmitted"))
    bigger = parse(job_doc(tasks=[task("ps"), task("worker", 3)]))
    requests = [Request(APPLY, TRAIN), Request(APPLY, bigger), Request(DELETE, kind="Job", name="train")]
    result = plan(requests, view, "r", 1.0)
    assert result.accepted, result.errors
    assert [o.action for o in result.outcomes] == ["unchanged", "configured", "deleted"]
    assert [(w.emit.type, w.expected_last_subject_seq) for w in result.writes] == [
        ("JobUpdated", 7),
        ("JobDeleted", None),  # the JobUpdated before it in the same atomic batch guards the subject
    ]


def test_plan_refuses_everything_when_one_object_is_refused() -> None:
    result = plan(
        [Request(APPLY, RESEARCH), Request(DELETE, kind="Queue", name="default")], folded(), "r", 1.0
    )
    assert not result.accepted and not result.writes and not result.outcomes
    assert "can not be deleted" in result.errors[0].message


def test_plan_names_commands_and_correlates_them_to_their_job() -> None:
    view = folded(applied(1, TRAIN, "JobSubmitted"))
    suspend = Command(ObjectMeta("", "default"), "AbortJob", OwnerReference("Job", "train"))
    result = plan([Request(COMMAND, suspend)], view, "r", 1.0)
    assert result.accepted and result.outcomes[0].action == "issued"
    (write,) = result.writes
    assert (write.kind, write.name, write.correlation_id) == ("command", "train-abortjob", "default/train")


def test_pods_are_forgotten_once_they_can_no_longer_allocate() -> None:
    train = {"correlation": "default/train"}
    view = folded(
        applied(1, TRAIN, "JobSubmitted"),
        event(2, "PodBound", "pod", "a", "default", **train, node="n1", plan="p1"),
        event(3, "PodBound", "pod", "b", "default", **train, node="n1", plan="p1"),
        event(4, "PodLost", "pod", "a", "default", **train, node="n1", reason="node lost"),
    )
    assert list(view.pods) == ["default/b"] and view.context().allocated_pods("default") == 1
    view = CORE.apply(
        view, event(5, "PodTerminated", "pod", "b", "default", **train, node="n1", reason="deleted")
    )
    assert not view.pods and view.context().allocated_pods("default") == 0


def test_the_tenant_registry_is_folded_guarded_and_checkpointed() -> None:
    key = "U" + "A" * 55
    applied_a = event(
        1, "TenantApplied", "tenant", "a", None, "admission", name="a", public_keys=[key], namespaces=["a"]
    )
    view = folded(
        applied_a,
        event(
            2,
            "TenantApplied",
            "tenant",
            "b",
            None,
            "admission",
            name="b",
            public_keys=["U" + "B" * 55],
            namespaces=["b"],
            queues=["qb"],
        ),
    )
    assert view.context().tenants["a"] == Tenant("a", (key,), ("a",), None)
    assert view.subject_seq("tenant", None, "b") == 2  # two replicas cannot both change a tenant
    loaded = CORE.load(CORE.dump(view))
    assert loaded.context().tenants == view.context().tenants
    view = folded(applied_a, event(3, "TenantDeleted", "tenant", "a", None, "admission"))
    assert "a" not in view.context().tenants
