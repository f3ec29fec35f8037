"""lahar's simulation knobs: the `lahar.dev/sim-*` annotations, one rule for their values.

Admission (and `lahar validate`) refuses a malformed or unknown one at its full path; `lahar simulate` and
`lahar advise` check their input with the same rule (same messages). The readers (the simulator and the
node agent's sim runtime) also meet values that got in another way (an old event log, a library caller):
they use `run_problem` to fail such a pod at start (reason StartError, exit code 128) instead of crashing,
and read sim-arrival and sim-barrier with a fallback (no delay, no barrier).

- sim-duration: how long the pod runs, a Go duration >= 0 ("90s", "1m30s"; default: a `sleep N` in its
  command, else 60 s).
- sim-exit-code: the code it exits with, an integer 0..255, or a comma-separated list of them indexed by
  the pod's generation, the last repeating ("1,0": the first pod fails, the one created after it succeeds).
- sim-arrival: when the object is submitted in a simulation, a Go duration >= 0 after the start.
- sim-barrier: "true" makes the pod progress only while every pod of its job runs (a rendezvous); "false".
- sim-usage: what it uses, `cpu=<quantity>,memory=<quantity>` (contracts/usage.py), default its requests.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.errors import FieldError
from contracts.field_shapes import suggestion
from contracts.limits import ECHO_MAX_CHARS, clip
from contracts.objects import Job
from contracts.objects_flow import CronJob, JobTemplate
from contracts.parse_fields import describe, duration_seconds, join_path
from contracts.usage import SIM_USAGE, parse_sim_usage

SIM_PREFIX = "lahar.dev/sim-"
SIM_DURATION = "lahar.dev/sim-duration"
SIM_EXIT_CODE = "lahar.dev/sim-exit-code"
SIM_ARRIVAL = "lahar.dev/sim-arrival"
SIM_BARRIER = "lahar.dev/sim-barrier"
KNOWN = (SIM_DURATION, SIM_EXIT_CODE, SIM_ARRIVAL, SIM_BARRIER, SIM_USAGE)
# the knobs a node reads when it starts a pod: a malformed one fails the pod there
RUN_KNOBS = (SIM_DURATION, SIM_EXIT_CODE, SIM_USAGE)
MAX_EXIT_CODE = 255  # a process's exit status is one byte
ANNOTATIONS = "metadata.annotations"


def _duration_problem(value: str) -> str | None:
    try:
        seconds = duration_seconds(value)
    except ValueError as exc:
        return str(exc)
    return f"expected a duration of 0 or more, got {describe(value)}" if seconds < 0 else None


def exit_codes(value: str) -> list[int]:
    """sim-exit-code's codes; ValueError unless each entry is an integer 0..255."""
    codes = []
    for entry in value.split(","):
        text = entry.strip()
        if not text.isdigit() or int(text) > MAX_EXIT_CODE:
            raise ValueError(
                f"expected an exit code from 0 to {MAX_EXIT_CODE}, or a comma-separated list of them "
                f"(one per pod generation), got {describe(value)}"
            )
        codes.append(int(text))
    return codes


def _exit_code_problem(value: str) -> str | None:
    try:
        exit_codes(value)
    except ValueError as exc:
        return str(exc)
    return None


def _barrier_problem(value: str) -> str | None:
    if value.lower() in ("true", "false"):
        return None
    return f'expected "true" or "false", got {describe(value)}'


def _usage_problem(value: str) -> str | None:
    try:
        parse_sim_usage(value)
    except ValueError as exc:
        return str(exc)
    return None


_CHECKS = {
    SIM_DURATION: _duration_problem,
    SIM_EXIT_CODE: _exit_code_problem,
    SIM_ARRIVAL: _duration_problem,
    SIM_BARRIER: _barrier_problem,
    SIM_USAGE: _usage_problem,
}


def problems(annotations: Mapping[str, str]) -> list[tuple[str, str]]:
    """(annotation, what is wrong) for each malformed lahar.dev/sim-* annotation, and each such name lahar
    does not know (naming the nearest known one). An empty value means "not given", as the readers take it."""
    found = []
    for key, value in annotations.items():
        if not key.startswith(SIM_PREFIX):
            continue
        check = _CHECKS.get(key)
        if check is None:
            found.append((key, _unknown(key)))
            continue
        problem = check(value) if value else None
        if problem is not None:
            found.append((key, problem))
    return found


def _unknown(key: str) -> str:
    message = f'unknown simulation annotation "{clip(key, ECHO_MAX_CHARS)}"'
    nearest = suggestion(key.removeprefix(SIM_PREFIX), [k.removeprefix(SIM_PREFIX) for k in KNOWN])
    if nearest:
        return f'{message}; did you mean "{SIM_PREFIX}{nearest}"?'
    return f"{message}; known: {', '.join(KNOWN)}"


def errors(annotations: Mapping[str, str], document: str, at: str = ANNOTATIONS) -> list[FieldError]:
    """`problems` as errors at each annotation's full path under `at` (a path to an annotations map)."""
    return [FieldError(document, join_path(at, key), message) for key, message in problems(annotations)]


def object_errors(obj: object, document: str) -> list[FieldError]:
    """The simulation annotations of an object as submitted: on its metadata (every kind: sim-arrival may
    delay any object) and on the pod templates of the Job it is or holds (a CronJob's jobTemplate, a
    JobTemplate's spec), whose pods inherit them."""
    meta = getattr(obj, "meta", None)
    found = errors(meta.annotations, document) if meta is not None else []
    if isinstance(obj, Job):
        found += _task_errors(obj, document, "spec")
    elif isinstance(obj, JobTemplate):
        found += _task_errors(obj.spec, document, "spec")
    elif isinstance(obj, CronJob):
        found += errors(obj.job_template.meta.annotations, document, f"spec.jobTemplate.{ANNOTATIONS}")
        found += _task_errors(obj.job_template, document, "spec.jobTemplate.spec")
    return found


def _task_errors(job: Job, document: str, spec: str) -> list[FieldError]:
    found = []
    for index, task in enumerate(job.tasks):
        found += errors(task.template.annotations, document, f"{spec}.tasks[{index}].template.{ANNOTATIONS}")
    return found


def run_problem(annotations: Mapping[str, str]) -> str | None:
    """Why a node cannot start a simulated pod with these annotations (its malformed run knobs, joined), or
    None: what a reader does with a value that got past admission (it fails the pod, reason StartError)."""
    found = [f"{key}: {message}" for key, message in problems(annotations) if key in RUN_KNOBS]
    return "; ".join(found) or None


def arrival_seconds(annotations: Mapping[str, str]) -> float:
    """sim-arrival in seconds; 0 (arrives at the start) when absent, malformed or negative."""
    value = annotations.get(SIM_ARRIVAL)
    if not value or _duration_problem(value) is not None:
        return 0.0
    return duration_seconds(value)


def is_barrier(annotations: Mapping[str, str]) -> bool:
    """sim-barrier is "true" (any case); anything else, malformed values included, is no barrier."""
    return annotations.get(SIM_BARRIER, "").lower() == "true"
