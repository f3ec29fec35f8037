"""lahar's simulation annotations at admission: a malformed or unknown `lahar.dev/sim-*` annotation on any
object, or on the pod templates of a Job (also inside a CronJob or JobTemplate), is refused at its full
path, with contracts/sim_annotations.py's message."""

from __future__ import annotations

from typing import Any

import pytest
from admission_manifests import (
    assert_problems,
    job_doc,
    merge,
    pod_doc,
    podgroup_doc,
    problems,
    queue_doc,
    task,
)

DURATION = "lahar.dev/sim-duration"
TASK0 = "spec.tasks[0].template.metadata.annotations"


def annotated_task(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return merge(task(name), {"template": {"metadata": {"annotations": annotations}}})


def cronjob_doc(job_annotations: dict[str, str], task_annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {
            "schedule": "0 2 * * *",
            "jobTemplate": {
                "metadata": {"annotations": job_annotations},
                "spec": {"queue": "default", "tasks": [annotated_task("w", task_annotations)]},
            },
        },
    }


# (id, manifest, [(path, fragment)]): [] when admitted
CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "job-valid-knobs",
        job_doc(tasks=[annotated_task("w", {DURATION: "90s", "lahar.dev/sim-exit-code": "1,0"})]),
        [],
    ),
    (
        "job-task-template",
        job_doc(tasks=[annotated_task("w", {DURATION: "banana"})]),
        [(f"{TASK0}[{DURATION}]", "expected a duration such as 30s")],
    ),
    (
        "job-second-task",
        job_doc(tasks=[task("a"), annotated_task("b", {"lahar.dev/sim-barrier": "yes"})]),
        [
            (
                "spec.tasks[1].template.metadata.annotations[lahar.dev/sim-barrier]",
                'expected "true" or "false"',
            )
        ],
    ),
    (
        "job-metadata",
        merge(job_doc(), {"metadata": {"annotations": {"lahar.dev/sim-arrival": "-1m"}}}),
        [("metadata.annotations[lahar.dev/sim-arrival]", "a duration of 0 or more")],
    ),
    (
        "job-typo",
        job_doc(tasks=[annotated_task("w", {"lahar.dev/sim-durtion": "1s"})]),
        [(f"{TASK0}[lahar.dev/sim-durtion]", 'did you mean "lahar.dev/sim-duration"?')],
    ),
    (
        "pod",
        pod_doc(annotations={DURATION: "banana", "lahar.dev/sim-exit-code": "300"}),
        [
            (f"metadata.annotations[{DURATION}]", "expected a duration"),
            ("metadata.annotations[lahar.dev/sim-exit-code]", "an exit code from 0 to 255"),
        ],
    ),
    ("pod-valid", pod_doc(annotations={"lahar.dev/sim-usage": "cpu=2,memory=1Gi"}), []),
    (
        "pod-usage",
        pod_doc(annotations={"lahar.dev/sim-usage": "cpu=fast"}),
        [("metadata.annotations[lahar.dev/sim-usage]", "cpu: expected a quantity")],
    ),
    (
        "podgroup",
        merge(podgroup_doc(), {"metadata": {"annotations": {"lahar.dev/sim-arrival": "soon"}}}),
        [("metadata.annotations[lahar.dev/sim-arrival]", "expected a duration")],
    ),
    (
        "queue",
        queue_doc("q", annotations={"lahar.dev/sim-arival": "1m"}, weight=1),
        [("metadata.annotations[lahar.dev/sim-arival]", 'did you mean "lahar.dev/sim-arrival"?')],
    ),
    (
        "cronjob",
        cronjob_doc({"lahar.dev/sim-arrival": "x"}, {DURATION: "y"}),
        [
            ("spec.jobTemplate.metadata.annotations[lahar.dev/sim-arrival]", "expected a duration"),
            (f"spec.jobTemplate.{TASK0}[{DURATION}]", "expected a duration"),
        ],
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_sim_annotations_at_admission(doc: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert_problems(problems(doc), expected)
