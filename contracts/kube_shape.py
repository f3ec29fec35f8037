"""lahar's API objects in the Kubernetes shape: `apiVersion, kind, metadata, spec, status` with the API's
own field names (camelCase, Kubernetes' and Volcano's nesting), quantities as strings ("500m", "1Gi") and
times as RFC 3339. What `lahar get -o yaml|json` prints, and what anyone may write out for a Kubernetes
tool or for `lahar apply`.

`kube_object` is the inverse of the manifest parser: `parse_object(kube_object(obj), ...) == obj` for every
object the parser or the controllers make (tests/unit/contracts/test_kube_shape.py holds it for the
repo's example manifests and for objects as the job-controller renders them). contracts.codec's encoding
(snake_case under "meta") stays what events and the read model carry; this is the form for people and
for Kubernetes tools.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from contracts.kube_shape_core import Doc, kube_node, kube_pod, kube_priority_class
from contracts.kube_shape_flow import kube_cronjob, kube_jobflow, kube_jobtemplate
from contracts.kube_shape_volcano import kube_command, kube_hypernode, kube_job, kube_podgroup, kube_queue
from contracts.objects import API_VERSIONS, ApiObject

__all__ = ["kube_list", "kube_object"]

_SHAPES: Mapping[str, Callable[[Any], Doc]] = {
    "Node": kube_node,
    "Pod": kube_pod,
    "PriorityClass": kube_priority_class,
    "PodGroup": kube_podgroup,
    "Queue": kube_queue,
    "HyperNode": kube_hypernode,
    "Job": kube_job,
    "Command": kube_command,
    "CronJob": kube_cronjob,
    "JobTemplate": kube_jobtemplate,
    "JobFlow": kube_jobflow,
}


def kube_object(obj: ApiObject) -> Doc:
    """One object as the Kubernetes API would return it."""
    return {"apiVersion": API_VERSIONS[obj.kind], "kind": obj.kind, **_SHAPES[obj.kind](obj)}


def kube_list(objects: Iterable[ApiObject]) -> Doc:
    """Several objects as kubectl prints a listing: a v1 List of them."""
    return {"apiVersion": "v1", "kind": "List", "items": [kube_object(obj) for obj in objects]}
