"""Manifest builders for the admission tests: a valid base object per kind, patched per case."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from contracts.objects import ApiObject
from contracts.parse import parse_object
from services.admission.core.admit import admit, context_from_objects
from services.admission.core.context import ClusterContext

DOC = "test.yaml#1"


def container(name: str = "main", cpu: str = "1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu}}, **extra}


def task(name: str = "main", replicas: int = 1, **fields: Any) -> dict[str, Any]:
    spec = fields.pop("pod_spec", {"containers": [container()]})
    return {"name": name, "replicas": replicas, "template": {"spec": spec}, **fields}


def merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`patch` deep-merged into a copy of `base`; a None value removes the key."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def job_doc(name: str = "train", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    base = {"queue": "default", "tasks": [task("ps"), task("worker", 2)]}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": merge(base, spec),
    }


def queue_doc(name: str, annotations: dict[str, str] | None = None, status: dict | None = None, **spec: Any):
    doc: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": spec,
    }
    if status:
        doc["status"] = status
    return doc


def podgroup_doc(name: str = "pg", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": merge({"minMember": 1, "queue": "default"}, spec),
    }


def pod_doc(name: str = "p", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": merge({"schedulerName": "volcano", "containers": [container()]}, spec),
    }


def hypernode_doc(name: str = "rack", members: list | None = None, tier: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"tier": tier}
    if members is not None:
        spec["members"] = members
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def priority_class_doc(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


def command_doc(action: str, kind: str, target: str, name: str = "cmd") -> dict[str, Any]:
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": name},
        "action": action,
        "target": {"kind": kind, "name": target},
    }


def parse(doc: dict[str, Any]) -> ApiObject:
    return parse_object(doc, DOC)


def context(*docs: dict[str, Any], **fields: Any) -> ClusterContext:
    """A cluster holding these objects (plus the implicit root and default queues)."""
    return replace(context_from_objects(parse(d) for d in docs), **fields)


def problems(
    obj: ApiObject | dict[str, Any], ctx: ClusterContext | None = None, old: ApiObject | None = None
):
    """[(path, message)] admission finds in `obj` (a manifest or an object)."""
    if isinstance(obj, dict):
        obj = parse(obj)
    admitted = admit(obj, ctx or context(), DOC, old)
    assert all(e.document == DOC for e in admitted.errors)
    return [(e.path, e.message) for e in admitted.errors]


def assert_problems(found: list[tuple[str, str]], expected: list[tuple[str, str]]) -> None:
    """Exactly the expected paths, each message containing the expected fragment."""
    assert sorted(p for p, _ in found) == sorted(p for p, _ in expected), found
    for path, fragment in expected:
        assert any(p == path and fragment in m for p, m in found), (path, fragment, found)
