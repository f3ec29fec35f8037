"""Admission of CronJob, JobTemplate and JobFlow: Volcano's rules, table-driven with every bad field named
by its path; the events an accepted object writes; and the controllers' create and delete of Jobs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from admission_manifests import assert_problems, context, job_doc, merge, parse, problems, queue_doc, task

from contracts import payloads
from contracts.codec import encode_object
from contracts.errors import ManifestError
from contracts.objects import Job
from contracts.objects_flow import CronJob, CronJobStatus, JobFlow
from services.admission.api import create_requests
from services.admission.core.authorize import CONTROLLER, Caller, Forbidden, authorize, controllers_only
from services.admission.core.decide import APPLY, CREATE, DELETE, Request, decide


def cronjob_doc(name: str = "nightly", **spec: Any) -> dict[str, Any]:
    base = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": job_doc()["spec"]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": merge(base, spec),
    }


def template_doc(name: str = "prepare", **spec: Any) -> dict[str, Any]:
    doc = job_doc(name, **spec)
    return {**doc, "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate"}


def jobflow_doc(
    name: str = "pipeline", flows: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    default = [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}]
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": name},
        "spec": {"flows": default if flows is None else flows, **spec},
    }


def every_problem(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The parser's problems if it refuses the manifest, else admission's."""
    try:
        obj = parse(doc)
    except ManifestError as exc:
        return [(e.path, e.message) for e in exc.errors]
    return problems(obj)


def flow(name: str, *targets: str, **probe: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"name": name}
    if targets or probe:
        item["dependsOn"] = {"targets": list(targets), **({"probe": probe} if probe else {})}
    return item


# --- CronJob ------------------------------------------------------------------------------------------


def test_volcano_defaults_are_applied_when_read() -> None:
    cron = parse(cronjob_doc())
    assert isinstance(cron, CronJob)
    assert (cron.concurrency_policy, cron.suspend, cron.time_zone, cron.starting_deadline_seconds) == (
        "Allow",
        False,
        "",
        None,
    )
    assert (cron.successful_jobs_history_limit, cron.failed_jobs_history_limit) == (3, 1)
    assert cron.job_template.meta.namespace == "default" and cron.job_template.tasks


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({}, []),
        ({"schedule": "@every 30s", "timeZone": "Asia/Tokyo", "concurrencyPolicy": "Replace"}, []),
        ({"schedule": ""}, [("spec.schedule", "expected a non-empty string")]),
        ({"schedule": "61 * * * *"}, [("spec.schedule", "minute field: expected 0-59, got 61")]),
        ({"schedule": "* * * *"}, [("spec.schedule", "expected 5 fields")]),
        ({"schedule": "CRON_TZ=UTC * * * * *"}, [("spec.schedule", "set spec.timeZone instead")]),
        ({"timeZone": "Local"}, [("spec.timeZone", "cannot be Local")]),
        ({"timeZone": "Mars/Olympus"}, [("spec.timeZone", "unknown time zone 'Mars/Olympus'")]),
        ({"timeZone": "../etc/passwd"}, [("spec.timeZone", "unknown time zone")]),
        ({"concurrencyPolicy": "Sometimes"}, [("spec.concurrencyPolicy", "expected one of Allow")]),
        ({"startingDeadlineSeconds": -1}, [("spec.startingDeadlineSeconds", ">= 0")]),
        ({"successfulJobsHistoryLimit": -1}, [("spec.successfulJobsHistoryLimit", ">= 0")]),
        ({"failedJobsHistoryLimit": -2}, [("spec.failedJobsHistoryLimit", ">= 0")]),
        ({"suspend": "maybe"}, [("spec.suspend", "expected true or false")]),
        # the template is checked as the Job each run submits
        (
            {"jobTemplate": {"spec": {"queue": "nowhere"}}},
            [("spec.jobTemplate.spec.queue", "unable to find job queue 'nowhere'")],
        ),
        (
            {"jobTemplate": {"spec": {"minAvailable": 9}}},
            [("spec.jobTemplate.spec.minAvailable", "should not be greater than total replicas")],
        ),
        (
            {"jobTemplate": {"spec": {"tasks": [task("w"), task("w")]}}},
            [("spec.jobTemplate.spec.tasks[1].name", "duplicated task name")],
        ),
        (
            {"jobTemplate": {"metadata": {"labels": {"bad key!": "x"}}}},
            [("spec.jobTemplate.metadata.labels[bad key!]", "")],
        ),
        # several problems at once, each at its path
        (
            {"schedule": "* * * * * *", "timeZone": "Local", "jobTemplate": {"spec": {"queue": "nowhere"}}},
            [
                ("spec.schedule", "expected 5 fields"),
                ("spec.timeZone", "cannot be Local"),
                ("spec.jobTemplate.spec.queue", "unable to find job queue"),
            ],
        ),
    ],
)
def test_cronjob_rules(patch: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    doc = cronjob_doc(**patch)
    if "jobTemplate" in patch:  # patch the template's spec, keep the rest of it
        doc["spec"]["jobTemplate"] = merge(cronjob_doc()["spec"]["jobTemplate"], patch["jobTemplate"])
    assert_problems(every_problem(doc), expected)


@pytest.mark.parametrize(
    ("name", "ok"),
    [("a" * 52, True), ("a" * 53, False), ("nightly.backup", True), ("Nightly", False)],
)
def test_a_cronjob_name_leaves_room_for_its_jobs_suffix(name: str, ok: bool) -> None:
    found = problems(cronjob_doc(name))
    assert (found == []) == ok, found
    assert all(path == "metadata.name" for path, _ in found)


# --- JobTemplate --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({}, []),
        ({"queue": "nowhere"}, [("spec.queue", "unable to find job queue 'nowhere'")]),
        ({"tasks": []}, [("spec.tasks", "no task specified")]),
        ({"maxRetry": -1}, [("spec.maxRetry", "")]),
    ],
)
def test_jobtemplate_is_checked_as_a_job(patch: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert_problems(every_problem(template_doc(**patch)), expected)


# --- JobFlow ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flows", "expected"),
    [
        ([flow("a"), flow("b", "a"), flow("c", "a", "b")], []),
        ([flow("a", "ghost")], [("spec.flows[0].dependsOn.targets[0]", "vertex is not defined: 'ghost'")]),
        ([flow("a", "a")], [("spec.flows[0].dependsOn.targets[0]", "depends on itself")]),
        (
            [flow("a", "c"), flow("b", "a"), flow("c", "b")],
            [("spec.flows", "not DAG: a -> c -> b -> a")],
        ),
        ([flow("a"), flow("a")], [("spec.flows[1].name", "listed twice (also spec.flows[0])")]),
        ([flow("x" * 60)], [("spec.flows[0].name", "would be named 'pipeline-xxx")]),
        (
            [flow("a"), flow("b", "a", httpGetList=[{"taskName": "ps", "port": 80}])],
            [("spec.flows[1].dependsOn.probe.httpGetList", "not supported")],
        ),
        (
            [flow("a"), flow("b", "a", tcpSocketList=[{"taskName": "ps", "port": 80}])],
            [("spec.flows[1].dependsOn.probe.tcpSocketList", "not supported")],
        ),
        ([flow("a"), flow("b", "a", taskStatusList=[{"taskName": "worker", "phase": "Succeeded"}])], []),
        (
            [flow("a"), flow("b", "a", taskStatusList=[{"phase": "Done"}])],
            [
                ("spec.flows[1].dependsOn.probe.taskStatusList[0].taskName", "required"),
                ("spec.flows[1].dependsOn.probe.taskStatusList[0].phase", "expected one of Pending"),
            ],
        ),
    ],
)
def test_jobflow_rules(flows: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    assert_problems(problems(jobflow_doc(flows=flows)), expected)


def test_a_jobflow_may_name_templates_that_do_not_exist_yet_and_keeps_volcano_defaults() -> None:
    jobflow = parse(jobflow_doc())
    assert isinstance(jobflow, JobFlow) and jobflow.job_retain_policy == "retain"
    assert problems(jobflow) == []
    assert_problems(
        every_problem(jobflow_doc(jobRetainPolicy="sometimes")),
        [("spec.jobRetainPolicy", "expected one of retain, delete")],
    )


# --- decisions: the events, the controllers' create and delete ----------------------------------------


@pytest.mark.parametrize(
    ("doc", "created", "deleted"),
    [
        (cronjob_doc(), "CronJobApplied", "CronJobDeleted"),
        (template_doc(), "JobTemplateApplied", "JobTemplateDeleted"),
        (jobflow_doc(), "JobFlowApplied", "JobFlowDeleted"),
    ],
)
def test_applied_and_deleted_events(doc: dict[str, Any], created: str, deleted: str) -> None:
    ctx = context()
    decision = decide(Request(APPLY, parse(doc)), ctx)
    assert decision.accepted and [e.type for e in decision.events] == [created]
    stored = decision.objects[0]
    payload = decision.events[0].payload
    assert isinstance(payload, payloads.ObjectPayload) and payload.decoded() == stored
    # applying it again records nothing; deleting it records the deletion
    ctx = context(doc)
    assert decide(Request(APPLY, parse(doc)), ctx).events == ()
    kind = doc["kind"]
    deletion = decide(Request(DELETE, kind=kind, namespace="default", name=doc["metadata"]["name"]), ctx)
    assert [e.type for e in deletion.events] == [deleted]


def test_an_update_keeps_no_status_of_its_own() -> None:
    stored = parse(cronjob_doc())
    assert isinstance(stored, CronJob)
    ctx = replace(context(), cronjobs={stored.meta.key: replace(stored, status=CronJobStatus(active=("x",)))})
    decision = decide(Request(APPLY, parse(cronjob_doc(suspend=True))), ctx)
    assert decision.accepted
    (updated,) = decision.objects
    assert isinstance(updated, CronJob) and updated.suspend and updated.status == CronJobStatus()


def test_a_controller_creates_jobs_from_their_encoding_and_nothing_else() -> None:
    job = parse(job_doc("nightly-28512345"))
    assert isinstance(job, Job)
    build = create_requests({"object": encode_object(job)})
    (request,) = build(context())
    assert (request.operation, request.object) == (CREATE, job)
    controller = Caller(CONTROLLER, who="a controller")
    assert authorize(controller, [request], context()) == []
    assert authorize(controller, [Request(DELETE, kind="Job", namespace="x", name="j")], context()) == []
    refused = authorize(controller, [Request(APPLY, parse(queue_doc("q")))], context())
    assert [e.message for e in refused] == ["a controller may only create and delete Jobs, not apply a Queue"]
    # creating what exists is refused (the controller reads that as done)
    exists = decide(request, context(job_doc("nightly-28512345")))
    assert not exists.accepted and "already exists" in exists.errors[0].message


def test_only_controllers_and_the_operator_create_from_an_encoding() -> None:
    class Tenant:
        def resolve(self, _context: Any) -> Caller:
            return Caller("tenant", who="tenant 'a'")

    build = controllers_only(lambda _ctx: [], Tenant())  # type: ignore[arg-type]
    with pytest.raises(Forbidden, match="may not create objects this way"):
        build(context())
