"""The queue a created pod counts against, read from its encoded form.

Admission's view keeps one fact of each pod the job-controller creates: its queue (to count the pods a
queue has allocated, which queue deletion and re-parenting check). A PodCreated arrives for every pod, so
the queue is read from the plain mapping the payload carries (contracts/codec.py: `{kind, object: {meta:
{annotations, labels, ...}, ...}}`) instead of decoding the whole Pod for one string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.admission.core.context import DEFAULT_QUEUE
from services.job_controller.core.expand import QUEUE_NAME

_TABLES = ("annotations", "labels")  # where the queue is looked for, in this order


def pod_queue(encoded: Mapping[str, Any]) -> str:
    """The pod's queue annotation, else its queue label, else "default" (as the job-controller sets them).
    Raises TypeError (KeyError without a meta) when what it reads is not of the Pod's types, a writer's
    bug: the view's fold then skips the pod, as it skips any object it cannot read."""
    meta = encoded["object"]["meta"]
    if not isinstance(meta, dict):
        raise TypeError(f"Pod.meta: expected a mapping, got {type(meta).__name__}")
    for table in _TABLES:
        values = meta.get(table)
        if not values:
            continue
        if not isinstance(values, dict):
            raise TypeError(f"Pod.meta.{table}: expected a mapping, got {type(values).__name__}")
        queue = values.get(QUEUE_NAME)
        if queue:
            if not isinstance(queue, str):
                found = type(queue).__name__
                raise TypeError(f"Pod.meta.{table}.{QUEUE_NAME}: expected a string, got {found}")
            return queue
    return DEFAULT_QUEUE
