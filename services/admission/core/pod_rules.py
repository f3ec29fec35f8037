"""A plain Pod: Volcano's pod webhook (job disruption budget annotations, for pods a Volcano scheduler
handles), Kubernetes' priority class admission, and the queue of the PodGroup the pod will get."""

from __future__ import annotations

import re

from contracts.errors import FieldError
from contracts.objects import Pod
from contracts.parse_fields import join_path
from services.admission.core.context import DEFAULT_QUEUE, ClusterContext
from services.admission.core.implicit_podgroup import (
    GROUP_NAME,
    JDB_MAX_UNAVAILABLE,
    JDB_MIN_AVAILABLE,
    QUEUE_NAME,
)
from services.admission.core.podgroup_rules import open_queue_errors
from services.admission.core.template_rules import validate_pod_spec

_COUNT = re.compile(r"^[0-9]+$")
_PERCENT = re.compile(r"^([0-9]+)%$")
_ANNOTATIONS = "metadata.annotations"


def jdb_problem(value: str) -> str | None:
    """A disruption budget is a positive pod count or a percentage from 1% to 99%."""
    if _COUNT.match(value):
        return None if int(value) > 0 else f"expected a positive integer, got {value!r}"
    percent = _PERCENT.match(value)
    if percent:
        return (
            None
            if 0 < int(percent.group(1)) < 100
            else f"expected a percentage from 1% to 99%, got {value!r}"
        )
    return f"expected a positive integer or a percentage from 1% to 99%, got {value!r}"


def validate_pod(pod: Pod, context: ClusterContext, document: str) -> list[FieldError]:
    errors = validate_pod_spec(pod.spec, "spec", document)
    name = pod.spec.priority_class_name
    if name and not context.has_priority_class(name):
        errors.append(
            FieldError(document, "spec.priorityClassName", f"no PriorityClass with name {name!r} was found")
        )
    if pod.spec.node_name:
        # no kubelet takes a pod by its nodeName here: every placement goes through a plan and the binder
        message = "lahar places every pod through its scheduler; select nodes with nodeSelector or affinity"
        errors.append(FieldError(document, "spec.nodeName", message))
    if pod.spec.scheduler_name not in context.scheduler_names:
        # Volcano leaves such a pod to another scheduler; here none would ever place it
        expected = ", ".join(context.scheduler_names)
        message = f"no scheduler named {pod.spec.scheduler_name!r} serves this cluster (expected {expected})"
        errors.append(FieldError(document, "spec.schedulerName", message))
        return errors
    annotations = pod.meta.annotations
    for key in (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE):
        if key in annotations:
            problem = jdb_problem(annotations[key])
            if problem:
                errors.append(FieldError(document, join_path(_ANNOTATIONS, key), problem))
    if JDB_MIN_AVAILABLE in annotations and JDB_MAX_UNAVAILABLE in annotations:
        errors.append(
            FieldError(
                document,
                join_path(_ANNOTATIONS, JDB_MAX_UNAVAILABLE),
                f"{JDB_MIN_AVAILABLE} and {JDB_MAX_UNAVAILABLE} must not be given together",
            )
        )
    if not annotations.get(GROUP_NAME):
        # the pod gets its own PodGroup, which must be admitted to its queue
        default = context.namespace_queues.get(pod.meta.namespace, DEFAULT_QUEUE)
        queue = annotations.get(QUEUE_NAME) or default
        errors.extend(open_queue_errors(queue, context, join_path(_ANNOTATIONS, QUEUE_NAME), document))
    return errors
