"""How many pods one Job, and one request, may make: a Job of a billion replicas is a valid int32, but the
job-controller would create pods until it ran out of memory, and again after every restart. Checked over
a whole request (an API apply, an intake message, a file given to `lahar validate`), before any of it
is decided."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contracts.errors import FieldError
from contracts.limits import INT32_MAX, MAX_PODS_PER_JOB, MAX_PODS_PER_REQUEST
from contracts.objects import ApiObject, Job, Pod


@dataclass(frozen=True, slots=True)
class PodCaps:
    """Admission's `max_pods_per_job` and `max_pods_per_request`; `lahar validate` takes the same flags."""

    per_job: int = MAX_PODS_PER_JOB
    per_request: int = MAX_PODS_PER_REQUEST

    def problems(self) -> list[str]:
        return [
            f"{name}: expected an integer from 1 to {INT32_MAX}, got {value}"
            for name, value in (
                ("max_pods_per_job", self.per_job),
                ("max_pods_per_request", self.per_request),
            )
            if not 1 <= value <= INT32_MAX
        ]


def pods_of(obj: ApiObject) -> int:
    """The pods an object makes once admitted: a Job its replicas, a plain Pod itself."""
    if isinstance(obj, Job):
        return sum(max(task.replicas, 0) for task in obj.tasks)
    return 1 if isinstance(obj, Pod) else 0


def pod_cap_errors(
    documents: Sequence[tuple[str, ApiObject]], caps: PodCaps, source: str
) -> list[FieldError]:
    """Every Job that makes more pods than caps.per_job (at the task that alone exceeds it, else at
    spec.tasks); otherwise the request as a whole when its documents make more than caps.per_request."""
    errors = []
    for document, obj in documents:
        pods = pods_of(obj)
        if not isinstance(obj, Job) or pods <= caps.per_job:
            continue
        alone = [index for index, task in enumerate(obj.tasks) if task.replicas > caps.per_job]
        path = f"spec.tasks[{alone[0]}].replicas" if alone else "spec.tasks"
        message = f"the job makes {pods} pods, more than the {caps.per_job} a job may make (max_pods_per_job)"
        errors.append(FieldError(document, path, message))
    total = sum(pods_of(obj) for _, obj in documents)
    if total > caps.per_request and not errors:
        errors.append(
            FieldError(
                source,
                "",
                f"the documents make {total} pods together, more than the {caps.per_request} one request "
                "may make (max_pods_per_request); send them in several requests",
            )
        )
    return errors
