"""Admission's bounds on input: pods per job and per request, labels and annotations as Kubernetes takes
them, and rejections that fit their message whatever they list."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from contracts.errors import FieldError
from contracts.limits import ANNOTATIONS_MAX_BYTES, MESSAGE_MAX_CHARS
from contracts.objects import ApiObject
from contracts.parse import parse_documents
from services.admission.core.admit import validate_meta
from services.admission.core.pod_caps import PodCaps, pod_cap_errors, pods_of
from services.admission.core.rejection_size import MAX_LISTED_ERRORS, fit_errors


def objects(*docs: dict[str, object]) -> list[tuple[str, ApiObject]]:
    parsed, errors = parse_documents("\n---\n".join(json.dumps(doc) for doc in docs), "r")
    assert not errors, errors
    return [(d.name, d.object) for d in parsed]


def job(name: str, *replicas: int) -> dict[str, object]:
    tasks = [
        {"name": f"t{i}", "replicas": count, "template": {"spec": {"containers": [{"name": "c"}]}}}
        for i, count in enumerate(replicas)
    ]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": tasks},
    }


def pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c"}]},
    }


# --- pods per job and per request --------------------------------------------------------------------


def test_a_job_makes_its_replicas_and_a_plain_pod_itself() -> None:
    (train, single) = objects(job("train", 3, 4), pod("p"))
    assert (pods_of(train[1]), pods_of(single[1])) == (7, 1)


def test_a_job_within_the_caps_passes() -> None:
    assert pod_cap_errors(objects(job("a", 5, 5)), PodCaps(per_job=10, per_request=10), "r") == []


def test_a_task_over_the_cap_is_named_by_its_replicas() -> None:
    (error,) = pod_cap_errors(objects(job("a", 1, 11)), PodCaps(per_job=10, per_request=100), "r")
    assert (error.document, error.path) == ("r#1 (Job default/a)", "spec.tasks[1].replicas")
    assert "makes 12 pods, more than the 10 a job may make (max_pods_per_job)" in error.message


def test_tasks_that_together_exceed_the_cap_are_named_together() -> None:
    (error,) = pod_cap_errors(objects(job("a", 6, 6)), PodCaps(per_job=10, per_request=100), "r")
    assert error.path == "spec.tasks" and "makes 12 pods" in error.message


def test_a_request_over_its_cap_is_refused_as_a_whole() -> None:
    docs = objects(job("a", 6), job("b", 4), pod("p"))
    (error,) = pod_cap_errors(docs, PodCaps(per_job=10, per_request=10), "r")
    assert (error.document, error.path) == ("r", "")
    assert "make 11 pods together, more than the 10 one request may make" in error.message


def test_the_default_caps_refuse_a_job_of_int32_max_replicas() -> None:
    (error,) = pod_cap_errors(objects(job("a", 2**31 - 1)), PodCaps(), "r")
    assert error.path == "spec.tasks[0].replicas" and "more than the 10000" in error.message


@pytest.mark.parametrize(("per_job", "per_request"), [(0, 10), (10, -1), (2**31, 10)])
def test_caps_outside_int32_or_below_one_are_configuration_problems(per_job: int, per_request: int) -> None:
    assert len(PodCaps(per_job, per_request).problems()) == 1


# --- labels and annotations ----------------------------------------------------------------------------


def meta_problems(metadata: dict[str, object]) -> set[tuple[str, str]]:
    ((name, obj),) = objects({**pod("p"), "metadata": {"name": "p", **metadata}})
    return {(e.path, e.message.split(":")[0]) for e in validate_meta(obj, name)}


def test_labels_and_annotations_kubernetes_takes_pass() -> None:
    labels = {"app.kubernetes.io/name": "train", "tier": "", "v": "1.2_3-x"}
    assert (
        meta_problems({"labels": labels, "annotations": {"volcano.sh/x": "any text at all " * 10}}) == set()
    )


def test_label_keys_and_values_beyond_kubernetes_limits_are_refused() -> None:
    found = meta_problems(
        {"labels": {"k" * 64: "v", "ok": "v" * 64, "bad/": "v", "x": "-leading"}, "annotations": {"/x": "v"}}
    )
    assert found == {
        (f"metadata.labels.{'k' * 64}", "invalid label key"),
        ("metadata.labels.ok", "invalid label value"),
        ("metadata.labels[bad/]", "invalid label key"),
        ("metadata.labels.x", "invalid label value"),
        ("metadata.annotations[/x]", "invalid annotation key"),
    }


def test_annotations_are_bounded_in_total() -> None:
    half = "v" * (ANNOTATIONS_MAX_BYTES // 2)
    assert meta_problems({"annotations": {"a": half, "b": half}}) == {
        ("metadata.annotations", "the annotations are 262146 bytes together, at most 262144")
    }


# --- rejections that fit -------------------------------------------------------------------------------


def many(count: int, message_chars: int = 100) -> list[FieldError]:
    return [FieldError("r#1 (Job default/a)", f"spec.tasks[{i}]", "m" * message_chars) for i in range(count)]


def json_size(listed: Sequence[FieldError]) -> int:
    return len(json.dumps([[e.document, e.path, e.message] for e in listed]))


def test_errors_that_fit_are_all_listed() -> None:
    errors = many(3)
    assert fit_errors(errors, json_size, 10_000, "r") == errors


def test_at_most_the_listed_maximum_is_listed_with_how_many_more() -> None:
    listed = fit_errors(many(250, 10), json_size, 10**9, "r")
    assert listed[:-1] == many(250, 10)[:MAX_LISTED_ERRORS]
    assert listed[-1] == FieldError("r", "", "and 150 more errors")


@pytest.mark.parametrize("max_bytes", [100_000, 20_000, 3_000])
def test_fewer_errors_are_listed_until_the_rejection_fits(max_bytes: int) -> None:
    errors = many(100, MESSAGE_MAX_CHARS)
    listed = fit_errors(errors, json_size, max_bytes, "r")
    assert json_size(listed) <= max_bytes
    assert listed[:-1] == errors[: len(listed) - 1] and listed[-1].message.startswith("and ")
    assert len(listed) - 1 + int(listed[-1].message.split()[1]) == 100  # listed + how many more = all


def test_when_not_even_one_error_fits_only_their_number_is_given() -> None:
    (only,) = fit_errors(many(7, MESSAGE_MAX_CHARS), json_size, 500, "r")
    assert only == FieldError("r", "", "7 errors, too many to list in one message")
