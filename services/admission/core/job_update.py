"""Updating a Job (Volcano's validateJobUpdate): tasks cannot be added or removed, and only the job's
minAvailable and priorityClassName and each task's replicas and minAvailable may change. Both jobs are
already defaulted, so a re-applied manifest that omits defaulted fields compares equal."""

from __future__ import annotations

import dataclasses

from contracts.errors import FieldError
from contracts.objects import Job, TaskSpec

MUTABLE_JOB_FIELDS = frozenset({"min_available", "priority_class_name"})
MUTABLE_TASK_FIELDS = frozenset({"replicas", "min_available"})
# identity and status are not spec: metadata may change freely, status belongs to the job-controller
NOT_SPEC = frozenset({"meta", "status", "tasks"})
IMMUTABLE = (
    "may not be changed by an update: only minAvailable, tasks[*].replicas, tasks[*].minAvailable and "
    "priorityClassName may change"
)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def validate_job_update(old: Job, new: Job, document: str) -> list[FieldError]:
    errors = [
        FieldError(document, f"spec.{camel(f.name)}", IMMUTABLE)
        for f in dataclasses.fields(Job)
        if f.name not in NOT_SPEC | MUTABLE_JOB_FIELDS and getattr(old, f.name) != getattr(new, f.name)
    ]
    if len(old.tasks) != len(new.tasks):
        errors.append(
            FieldError(
                document,
                "spec.tasks",
                f"job updates may not add or remove tasks: the job has {len(old.tasks)}, "
                f"the update gives {len(new.tasks)}",
            )
        )
        return errors
    for index, (before, after) in enumerate(zip(old.tasks, new.tasks, strict=True)):
        errors.extend(
            FieldError(document, f"spec.tasks[{index}].{camel(f.name)}", IMMUTABLE)
            for f in dataclasses.fields(TaskSpec)
            if f.name not in MUTABLE_TASK_FIELDS and getattr(before, f.name) != getattr(after, f.name)
        )
    return errors
