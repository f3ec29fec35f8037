"""Kubernetes core/v1 objects as the API writes them: Node, Pod, PriorityClass, object metadata and the
pod spec pieces Volcano's Job reuses. The inverse of contracts/parse_core.py, field for field."""

from __future__ import annotations

from typing import Any

from contracts.kube_values import put, quantities, rfc3339
from contracts.objects import (
    Container,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    PodTemplate,
    PriorityClass,
    SelectorRequirement,
    Taint,
    Toleration,
)

Doc = dict[str, Any]


def kube_meta(meta: ObjectMeta, *, namespaced: bool) -> Doc:
    out: Doc = {"name": meta.name}
    if namespaced:
        out["namespace"] = meta.namespace
    put(out, "uid", meta.uid)
    put(out, "generation", meta.generation, 0)
    # 0.0 is what the parser gives a manifest without one: "not set", as Kubernetes' null
    put(out, "creationTimestamp", rfc3339(meta.creation_timestamp) if meta.creation_timestamp else None)
    if meta.deletion_timestamp is not None:
        out["deletionTimestamp"] = rfc3339(meta.deletion_timestamp)
    put(out, "labels", dict(meta.labels))
    put(out, "annotations", dict(meta.annotations))
    return out


def kube_taint(taint: Taint) -> Doc:
    out: Doc = {"key": taint.key}
    put(out, "value", taint.value)
    out["effect"] = taint.effect
    return out


def kube_toleration(toleration: Toleration) -> Doc:
    out: Doc = {}
    put(out, "key", toleration.key)
    out["operator"] = toleration.operator
    put(out, "value", toleration.value)
    put(out, "effect", toleration.effect)
    put(out, "tolerationSeconds", toleration.toleration_seconds)
    return out


def kube_requirement(requirement: SelectorRequirement) -> Doc:
    out: Doc = {"key": requirement.key, "operator": requirement.operator}
    put(out, "values", list(requirement.values))
    return out


def kube_label_selector(selector: LabelSelector) -> Doc:
    out: Doc = {}
    put(out, "matchLabels", dict(selector.match_labels))
    put(out, "matchExpressions", [kube_requirement(r) for r in selector.match_expressions])
    return out


def _node_selector_term(term: NodeSelectorTerm) -> Doc:
    out: Doc = {}
    put(out, "matchExpressions", [kube_requirement(r) for r in term.match_expressions])
    put(out, "matchFields", [kube_requirement(r) for r in term.match_fields])
    return out


def _node_affinity(affinity: NodeAffinity) -> Doc:
    out: Doc = {}
    if affinity.required is not None:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_node_selector_term(t) for t in affinity.required]
        }
    put(
        out,
        "preferredDuringSchedulingIgnoredDuringExecution",
        [{"weight": p.weight, "preference": _node_selector_term(p.preference)} for p in affinity.preferred],
    )
    return out


def _container(container: Container) -> Doc:
    out: Doc = {"name": container.name}
    put(out, "image", container.image)
    put(out, "command", list(container.command))
    put(out, "args", list(container.args))
    put(out, "workingDir", container.working_dir)
    env = []
    for var in container.env:
        entry: Doc = {"name": var.name}
        put(entry, "value", var.value)
        env.append(entry)
    put(out, "env", env)
    resources: Doc = {}
    put(resources, "limits", quantities(container.limits))
    put(resources, "requests", quantities(container.requests))
    put(out, "resources", resources)
    put(out, "restartPolicy", container.restart_policy)
    return out


def kube_pod_spec(spec: PodSpec) -> Doc:
    out: Doc = {}
    put(out, "initContainers", [_container(c) for c in spec.init_containers])
    out["containers"] = [_container(c) for c in spec.containers]
    out["restartPolicy"] = spec.restart_policy
    out["schedulerName"] = spec.scheduler_name
    put(out, "nodeName", spec.node_name)
    put(out, "nodeSelector", dict(spec.node_selector))
    if spec.node_affinity is not None:
        out["affinity"] = {"nodeAffinity": _node_affinity(spec.node_affinity)}
    put(out, "tolerations", [kube_toleration(t) for t in spec.tolerations])
    put(out, "priority", spec.priority)
    put(out, "priorityClassName", spec.priority_class_name)
    put(out, "preemptionPolicy", spec.preemption_policy)
    put(out, "hostname", spec.hostname)
    put(out, "subdomain", spec.subdomain)
    put(out, "hostNetwork", spec.host_network, False)
    put(out, "dnsPolicy", spec.dns_policy)
    put(out, "overhead", quantities(spec.overhead))
    put(out, "activeDeadlineSeconds", spec.active_deadline_seconds)
    put(out, "terminationGracePeriodSeconds", spec.termination_grace_period_seconds)
    return out


def kube_pod_template(template: PodTemplate) -> Doc:
    meta: Doc = {}
    put(meta, "labels", dict(template.labels))
    put(meta, "annotations", dict(template.annotations))
    out: Doc = {}
    put(out, "metadata", meta)
    out["spec"] = kube_pod_spec(template.spec)
    return out


def _pod_status(status: PodStatus, spec: PodSpec) -> Doc:
    out: Doc = {"phase": status.phase}
    put(out, "reason", status.reason)
    put(out, "message", status.message)
    put(out, "nominatedNodeName", status.nominated_node_name)
    put(out, "startTime", None if status.start_time is None else rfc3339(status.start_time))
    if status.exit_code is not None:
        # lahar keeps the pod's one exit code (the first failed container's): it reads back from there
        container: Doc = {}
        if spec.containers:
            container["name"] = spec.containers[0].name
        container["state"] = {"terminated": {"exitCode": status.exit_code}}
        out["containerStatuses"] = [container]
    return out


def kube_pod(pod: Pod) -> Doc:
    return {
        "metadata": kube_meta(pod.meta, namespaced=True),
        "spec": kube_pod_spec(pod.spec),
        "status": _pod_status(pod.status, pod.spec),
    }


def kube_node(node: Node) -> Doc:
    spec: Doc = {}
    put(spec, "unschedulable", node.unschedulable, False)
    put(spec, "taints", [kube_taint(t) for t in node.taints])
    status: Doc = {}
    put(status, "capacity", quantities(node.capacity))
    put(status, "allocatable", quantities(node.allocatable))
    status["conditions"] = [{"type": "Ready", "status": "True" if node.ready else "False"}]
    return {"metadata": kube_meta(node.meta, namespaced=False), "spec": spec, "status": status}


def kube_priority_class(pc: PriorityClass) -> Doc:
    # PriorityClass has no spec: its fields sit beside metadata
    out: Doc = {"metadata": kube_meta(pc.meta, namespaced=False), "value": pc.value}
    put(out, "globalDefault", pc.global_default, False)
    out["preemptionPolicy"] = pc.preemption_policy
    put(out, "description", pc.description)
    return out
