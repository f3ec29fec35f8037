"""lahar's simulation knobs (contracts/sim_annotations.py): each value's rule, unknown names with the nearest
known one, the paths an object's annotations are reported at, and the readers' fallbacks."""

from __future__ import annotations

import pytest

from contracts.objects import Job, ObjectMeta, PodTemplate, TaskSpec, frozen_map
from contracts.objects_flow import CronJob, JobTemplate
from contracts.sim_annotations import (
    SIM_ARRIVAL,
    SIM_BARRIER,
    SIM_DURATION,
    SIM_EXIT_CODE,
    SIM_USAGE,
    arrival_seconds,
    exit_codes,
    is_barrier,
    object_errors,
    problems,
    run_problem,
)

# (id, annotations, [(annotation, fragment of its message)]): [] when valid
CASES: list[tuple[str, dict[str, str], list[tuple[str, str]]]] = [
    ("none", {}, []),
    ("other-annotations-pass", {"lahar.dev/pod-generation": "x", "volcano.sh/preemptable": "maybe"}, []),
    ("empty-values-are-not-given", dict.fromkeys((SIM_DURATION, SIM_EXIT_CODE, SIM_USAGE), ""), []),
    ("duration", {SIM_DURATION: "1m30s"}, []),
    ("duration-zero", {SIM_DURATION: "0"}, []),
    ("duration-word", {SIM_DURATION: "banana"}, [(SIM_DURATION, "expected a duration such as 30s")]),
    ("duration-no-unit", {SIM_DURATION: "30"}, [(SIM_DURATION, "expected a duration such as 30s")]),
    ("duration-negative", {SIM_DURATION: "-5s"}, [(SIM_DURATION, "a duration of 0 or more")]),
    ("arrival", {SIM_ARRIVAL: "2m"}, []),
    ("arrival-negative", {SIM_ARRIVAL: "-1m"}, [(SIM_ARRIVAL, "a duration of 0 or more")]),
    ("arrival-word", {SIM_ARRIVAL: "later"}, [(SIM_ARRIVAL, "expected a duration")]),
    ("exit-code", {SIM_EXIT_CODE: "137"}, []),
    ("exit-code-list", {SIM_EXIT_CODE: "1, 0"}, []),
    ("exit-code-word", {SIM_EXIT_CODE: "three"}, [(SIM_EXIT_CODE, "an exit code from 0 to 255")]),
    ("exit-code-negative", {SIM_EXIT_CODE: "-1"}, [(SIM_EXIT_CODE, "an exit code from 0 to 255")]),
    ("exit-code-too-big", {SIM_EXIT_CODE: "256"}, [(SIM_EXIT_CODE, "got '256'")]),
    ("exit-code-empty-entry", {SIM_EXIT_CODE: "1,,0"}, [(SIM_EXIT_CODE, "comma-separated list")]),
    ("barrier", {SIM_BARRIER: "True"}, []),
    ("barrier-off", {SIM_BARRIER: "false"}, []),
    ("barrier-yes", {SIM_BARRIER: "yes"}, [(SIM_BARRIER, 'expected "true" or "false"')]),
    ("usage", {SIM_USAGE: "cpu=1500m,memory=1Gi"}, []),
    ("usage-bad", {SIM_USAGE: "gpu=1"}, [(SIM_USAGE, "expected cpu=<quantity> or memory=<quantity>")]),
    (
        "typo",
        {"lahar.dev/sim-durtion": "1s"},
        [("lahar.dev/sim-durtion", 'did you mean "lahar.dev/sim-duration"')],
    ),
    ("case", {"lahar.dev/sim-Barrier": "true"}, [("lahar.dev/sim-Barrier", 'mean "lahar.dev/sim-barrier"')]),
    ("prefix", {"lahar.dev/sim-exit-c": "1"}, [("lahar.dev/sim-exit-c", 'mean "lahar.dev/sim-exit-code"')]),
    ("unknown", {"lahar.dev/sim-gpu": "1"}, [("lahar.dev/sim-gpu", "known: lahar.dev/sim-duration, ")]),
    (
        "every-problem",
        {SIM_DURATION: "x", SIM_EXIT_CODE: "y", SIM_BARRIER: "z"},
        [(SIM_DURATION, "duration"), (SIM_EXIT_CODE, "exit code"), (SIM_BARRIER, "true")],
    ),
]


@pytest.mark.parametrize(("annotations", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problems(annotations: dict[str, str], expected: list[tuple[str, str]]) -> None:
    found = problems(annotations)
    assert sorted(k for k, _ in found) == sorted(k for k, _ in expected), found
    for key, fragment in expected:
        assert any(k == key and fragment in m for k, m in found), (key, fragment, found)


def template(annotations: dict[str, str]) -> TaskSpec:
    return TaskSpec("w", template=PodTemplate(annotations=frozen_map(annotations)))


def meta(annotations: dict[str, str] | None = None) -> ObjectMeta:
    return ObjectMeta("j", annotations=frozen_map(annotations or {}))


BAD = {SIM_DURATION: "banana"}
KEY = f"[{SIM_DURATION}]"


@pytest.mark.parametrize(
    ("obj", "paths"),
    [
        (Job(meta(BAD)), [f"metadata.annotations{KEY}"]),
        (
            Job(meta(), tasks=(template({}), template(BAD))),
            [f"spec.tasks[1].template.metadata.annotations{KEY}"],
        ),
        (
            JobTemplate(meta(), spec=Job(meta(), tasks=(template(BAD),))),
            [f"spec.tasks[0].template.metadata.annotations{KEY}"],
        ),
        (
            CronJob(meta(), schedule="* * * * *", job_template=Job(meta(BAD), tasks=(template(BAD),))),
            [
                f"spec.jobTemplate.metadata.annotations{KEY}",
                f"spec.jobTemplate.spec.tasks[0].template.metadata.annotations{KEY}",
            ],
        ),
        (object(), []),
    ],
    ids=["job", "job-template", "jobtemplate", "cronjob", "no-metadata"],
)
def test_object_errors_name_the_full_path(obj: object, paths: list[str]) -> None:
    found = object_errors(obj, "Job default/j")
    assert [e.path for e in found] == paths
    assert all(e.document == "Job default/j" for e in found)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, None),
        (
            {SIM_BARRIER: "sometimes", SIM_ARRIVAL: "soon", "lahar.dev/sim-typo": "1"},
            None,
        ),  # not read at start
        ({SIM_DURATION: "banana"}, f"{SIM_DURATION}: expected a duration"),
        ({SIM_EXIT_CODE: "1", SIM_USAGE: "cpu=fast"}, f"{SIM_USAGE}: cpu: expected a quantity"),
    ],
)
def test_run_problem_names_the_knobs_a_node_reads_at_start(
    annotations: dict[str, str], expected: str | None
) -> None:
    found = run_problem(annotations)
    assert found == expected if expected is None else found is not None and found.startswith(expected)


@pytest.mark.parametrize(
    ("annotations", "seconds"),
    [({}, 0.0), ({SIM_ARRIVAL: "90s"}, 90.0), ({SIM_ARRIVAL: "banana"}, 0.0), ({SIM_ARRIVAL: "-1m"}, 0.0)],
)
def test_arrival_falls_back_to_the_start(annotations: dict[str, str], seconds: float) -> None:
    assert arrival_seconds(annotations) == seconds


@pytest.mark.parametrize(
    ("value", "barrier"), [("true", True), ("TRUE", True), ("false", False), ("yes", False), ("", False)]
)
def test_only_true_makes_a_barrier(value: str, barrier: bool) -> None:
    assert is_barrier({SIM_BARRIER: value}) is barrier


def test_exit_codes_keep_their_order() -> None:
    assert exit_codes("137, 2,0") == [137, 2, 0]
