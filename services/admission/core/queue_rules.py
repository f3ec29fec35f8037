"""A scheduling.volcano.sh Queue on its own (Volcano's validateQueue): state, quantities, guarantee <=
deserved <= capability, the hdrf hierarchy annotations (which are compared with the other queues'), and
the queue-scoped overcommit factor (contracts/queue_overcommit.py)."""

from __future__ import annotations

import re

from contracts.errors import FieldError
from contracts.objects import Queue
from contracts.parse_fields import join_path
from contracts.queue_overcommit import OVERCOMMIT_FACTOR, deserves_something, overcommit_factor_problem
from contracts.resources import EMPTY, Resources, format_quantity
from services.admission.core.context import ClusterContext
from services.admission.core.mutate import HIERARCHY, HIERARCHY_WEIGHTS

QUEUE_STATES = ("Open", "Closed")
MAX_WEIGHT = 65535
_WEIGHT = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_ANNOTATIONS = "metadata.annotations"


def validate_queue_spec(queue: Queue, context: ClusterContext, document: str) -> list[FieldError]:
    errors: list[FieldError] = []

    def error(path: str, message: str) -> None:
        errors.append(FieldError(document, path, message))

    if queue.status.state not in QUEUE_STATES:
        error(
            "status.state",
            f"queue state must be one of {', '.join(QUEUE_STATES)}, got {queue.status.state!r}",
        )
    if not 1 <= queue.weight <= MAX_WEIGHT:
        error("spec.weight", f"expected an integer from 1 to {MAX_WEIGHT}, got {queue.weight}")
    if queue.priority < 0:
        error("spec.priority", f"expected an integer >= 0, got {queue.priority}")
    sections = (
        ("spec.capability", queue.capability),
        ("spec.deserved", queue.deserved),
        ("spec.guarantee.resource", queue.guarantee),
    )
    for path, resources in sections:
        for dim, value in (resources or {}).items():
            if value < 0:
                error(join_path(path, dim), f"expected a non-negative quantity, got {value}m")
    errors.extend(_guarantee_deserved_capability(queue, document))
    errors.extend(_hierarchy_annotations(queue, context, document))
    errors.extend(_overcommit_factor(queue, document))
    return errors


def _overcommit_factor(queue: Queue, document: str) -> list[FieldError]:
    """Volcano 1.16's queue webhook rules for the annotation: a finite decimal >= 1, on a queue that
    deserves a positive quantity of some resource (the factor multiplies what it deserves)."""
    value = queue.meta.annotations.get(OVERCOMMIT_FACTOR)
    if value is None:
        return []
    at = join_path(_ANNOTATIONS, OVERCOMMIT_FACTOR)
    problem = overcommit_factor_problem(value)
    errors = [FieldError(document, at, problem)] if problem else []
    if not deserves_something(queue.deserved):
        message = "needs spec.deserved with a positive quantity: the factor multiplies what it deserves"
        errors.append(FieldError(document, at, message))
    return errors


def _show(dim: str, value: int) -> str:
    return format_quantity(dim, value)


def _guarantee_deserved_capability(queue: Queue, document: str) -> list[FieldError]:
    errors = []
    deserved = queue.deserved or Resources()
    for dim, guaranteed in (queue.guarantee or {}).items():
        if dim not in deserved:
            errors.append(
                FieldError(
                    document,
                    join_path("spec.deserved", dim),
                    f"deserved[{dim}] must be given and >= guarantee[{dim}]={_show(dim, guaranteed)}",
                )
            )
        elif deserved[dim] < guaranteed:
            errors.append(
                FieldError(
                    document,
                    join_path("spec.deserved", dim),
                    f"deserved[{dim}]={_show(dim, deserved[dim])} must be >= "
                    f"guarantee[{dim}]={_show(dim, guaranteed)}",
                )
            )
    capability = queue.capability or EMPTY
    for dim, value in deserved.items():
        # a resource the capability does not name is not limited
        if dim in capability and value > capability[dim]:
            errors.append(
                FieldError(
                    document,
                    join_path("spec.deserved", dim),
                    f"deserved[{dim}]={_show(dim, value)} must be <= "
                    f"capability[{dim}]={_show(dim, capability[dim])}",
                )
            )
    return errors


def _hierarchy_annotations(queue: Queue, context: ClusterContext, document: str) -> list[FieldError]:
    hierarchy = queue.meta.annotations.get(HIERARCHY, "")
    weights = queue.meta.annotations.get(HIERARCHY_WEIGHTS, "")
    if not hierarchy and not weights:
        return []
    path_at = join_path(_ANNOTATIONS, HIERARCHY)
    weights_at = join_path(_ANNOTATIONS, HIERARCHY_WEIGHTS)
    if not hierarchy or not weights:
        missing_at = path_at if not hierarchy else weights_at
        return [
            FieldError(document, missing_at, f"{HIERARCHY} and {HIERARCHY_WEIGHTS} must be given together")
        ]
    errors = []
    paths, parts = hierarchy.split("/"), weights.split("/")
    if len(paths) != len(parts):
        errors.append(
            FieldError(
                document,
                weights_at,
                f"{HIERARCHY} {hierarchy!r} has {len(paths)} segments but {HIERARCHY_WEIGHTS} "
                f"{weights!r} has {len(parts)}: they must have the same length",
            )
        )
    for weight in parts:
        if not _WEIGHT.match(weight) or float(weight) <= 0:
            errors.append(
                FieldError(
                    document, weights_at, f"weight {weight!r} in {weights!r} must be a number larger than 0"
                )
            )
    for other in sorted(context.queues.values(), key=lambda q: q.meta.name):
        theirs = other.meta.annotations.get(HIERARCHY, "")
        if not theirs or other.meta.name == queue.meta.name:
            continue
        # compare whole segments: root/sci does not contain root/scidev
        if theirs.startswith(hierarchy + "/") or hierarchy.startswith(theirs + "/"):
            errors.append(
                FieldError(
                    document,
                    path_at,
                    f"{hierarchy!r} and {theirs!r} of queue {other.meta.name!r}: a queue's path must not "
                    "be a prefix of another queue's path",
                )
            )
    return errors
