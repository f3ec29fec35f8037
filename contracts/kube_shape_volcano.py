"""Volcano's kinds as its API writes them: Job (batch), Queue and PodGroup (scheduling), HyperNode
(topology) and Command (bus), with Volcano's field names and nesting. The inverse of
contracts/parse_volcano.py, field for field."""

from __future__ import annotations

from typing import Any

from contracts.kube_shape_core import Doc, kube_label_selector, kube_meta, kube_pod_template
from contracts.kube_values import go_duration, optional_rfc3339, put, quantities, thaw
from contracts.objects import (
    Command,
    HyperNode,
    HyperNodeMember,
    Job,
    JobStatus,
    LifecyclePolicy,
    NetworkTopologySpec,
    NodeGroupAffinity,
    PodGroup,
    PodGroupCondition,
    Queue,
    QueueAffinity,
    SubGroupPolicy,
    TaskSpec,
)


def _network_topology(topology: NetworkTopologySpec) -> Doc:
    out: Doc = {"mode": topology.mode}
    put(out, "highestTierAllowed", topology.highest_tier_allowed)
    put(out, "highestTierName", topology.highest_tier_name)
    return out


def _optional_topology(topology: NetworkTopologySpec | None) -> Doc | None:
    return None if topology is None else _network_topology(topology)


# --- batch.volcano.sh Job ------------------------------------------------------------------------


def _policy(policy: LifecyclePolicy) -> Doc:
    out: Doc = {"action": policy.action}
    put(out, "event", policy.event)
    put(out, "events", list(policy.events))
    put(out, "exitCode", policy.exit_code)
    put(out, "timeout", None if policy.timeout_seconds is None else go_duration(policy.timeout_seconds))
    return out


def _task(task: TaskSpec) -> Doc:
    out: Doc = {}
    put(out, "name", task.name)
    out["replicas"] = task.replicas
    put(out, "minAvailable", task.min_available)
    out["template"] = kube_pod_template(task.template)
    put(out, "policies", [_policy(p) for p in task.policies])
    put(out, "topologyPolicy", task.topology_policy)
    put(out, "maxRetry", task.max_retry, 0)
    if task.depends_on is not None:
        depends: Doc = {}
        put(depends, "name", list(task.depends_on.name))
        depends["iteration"] = task.depends_on.iteration
        out["dependsOn"] = depends
    partition = task.partition_policy
    if partition is not None:
        policy: Doc = {
            "totalPartitions": partition.total_partitions,
            "partitionSize": partition.partition_size,
        }
        put(policy, "minPartitions", partition.min_partitions, 0)
        put(policy, "networkTopology", _optional_topology(partition.network_topology))
        out["partitionPolicy"] = policy
    return out


def _job_status(status: JobStatus) -> Doc:
    state: Doc = {"phase": status.state.phase}
    put(state, "reason", status.state.reason)
    put(state, "message", status.state.message)
    put(state, "lastTransitionTime", optional_rfc3339(status.state.last_transition_time))
    out: Doc = {"state": state}
    put(out, "minAvailable", status.min_available, 0)
    put(
        out,
        "taskStatusCount",
        {task: {"phase": dict(counts)} for task, counts in status.task_status_count.items()},
    )
    for key, count in (
        ("pending", status.pending),
        ("running", status.running),
        ("succeeded", status.succeeded),
        ("failed", status.failed),
        ("terminating", status.terminating),
        ("unknown", status.unknown),
        ("version", status.version),
        ("retryCount", status.retry_count),
    ):
        put(out, key, count, 0)
    put(
        out,
        "runningDuration",
        None if status.running_duration is None else go_duration(status.running_duration),
    )
    put(out, "controlledResources", dict(status.controlled_resources))
    conditions = []
    for condition in status.conditions:
        entry: Doc = {"status": condition.status}
        put(entry, "lastTransitionTime", optional_rfc3339(condition.last_transition_time))
        conditions.append(entry)
    put(out, "conditions", conditions)
    return out


def kube_job(job: Job) -> Doc:
    spec: Doc = {"schedulerName": job.scheduler_name}
    put(spec, "minAvailable", job.min_available)
    put(spec, "minSuccess", job.min_success)
    spec["queue"] = job.queue
    spec["maxRetry"] = job.max_retry
    put(spec, "ttlSecondsAfterFinished", job.ttl_seconds_after_finished)
    put(spec, "priorityClassName", job.priority_class_name)
    put(
        spec,
        "runningEstimate",
        None if job.running_estimate is None else go_duration(job.running_estimate),
    )
    put(spec, "networkTopology", _optional_topology(job.network_topology))
    put(spec, "plugins", {name: list(args) for name, args in job.plugins.items()})
    put(spec, "policies", [_policy(p) for p in job.policies])
    volumes = []
    for volume in job.volumes:
        entry: Doc = {"mountPath": volume.mount_path}
        put(entry, "volumeClaimName", volume.volume_claim_name)
        if volume.volume_claim is not None:
            entry["volumeClaim"] = thaw(volume.volume_claim)
        volumes.append(entry)
    put(spec, "volumes", volumes)
    spec["tasks"] = [_task(t) for t in job.tasks]
    return {"metadata": kube_meta(job.meta, namespaced=True), "spec": spec, "status": _job_status(job.status)}


# --- scheduling.volcano.sh Queue and PodGroup ----------------------------------------------------


def _node_group_affinity(affinity: NodeGroupAffinity | None) -> Doc | None:
    if affinity is None:
        return None
    out: Doc = {}
    put(out, "requiredDuringSchedulingIgnoredDuringExecution", list(affinity.required))
    put(out, "preferredDuringSchedulingIgnoredDuringExecution", list(affinity.preferred))
    return out


def _queue_affinity(affinity: QueueAffinity) -> Doc:
    out: Doc = {}
    # an empty affinity given is still given (the parser keeps the difference)
    if affinity.node_group_affinity is not None:
        out["nodeGroupAffinity"] = _node_group_affinity(affinity.node_group_affinity)
    if affinity.node_group_anti_affinity is not None:
        out["nodeGroupAntiAffinity"] = _node_group_affinity(affinity.node_group_anti_affinity)
    return out


def kube_queue(queue: Queue) -> Doc:
    spec: Doc = {"weight": queue.weight}
    if queue.capability is not None:
        spec["capability"] = quantities(queue.capability)
    if queue.deserved is not None:
        spec["deserved"] = quantities(queue.deserved)
    if queue.guarantee is not None:
        spec["guarantee"] = {"resource": quantities(queue.guarantee)}
    put(spec, "reclaimable", queue.reclaimable)
    put(spec, "parent", queue.parent)
    put(spec, "priority", queue.priority, 0)
    if queue.affinity is not None:
        spec["affinity"] = _queue_affinity(queue.affinity)
    put(spec, "type", queue.type)
    put(spec, "extendClusters", [thaw(c) for c in queue.extend_clusters])
    spec["dequeueStrategy"] = queue.dequeue_strategy
    s = queue.status
    status: Doc = {"state": s.state}
    for key, count in (
        ("pending", s.pending),
        ("running", s.running),
        ("inqueue", s.inqueue),
        ("completed", s.completed),
        ("unknown", s.unknown),
    ):
        put(status, key, count, 0)
    put(status, "allocated", quantities(s.allocated))
    return {"metadata": kube_meta(queue.meta, namespaced=False), "spec": spec, "status": status}


def _sub_group_policy(policy: SubGroupPolicy) -> Doc:
    out: Doc = {"name": policy.name}
    put(out, "networkTopology", _optional_topology(policy.network_topology))
    put(out, "subGroupSize", policy.sub_group_size)
    put(out, "minSubGroups", policy.min_sub_groups)
    if policy.label_selector is not None:
        out["labelSelector"] = kube_label_selector(policy.label_selector)
    put(out, "matchLabelKeys", list(policy.match_label_keys))
    return out


def _podgroup_condition(condition: PodGroupCondition) -> Doc:
    out: Doc = {"type": condition.type, "status": condition.status}
    put(out, "transitionID", condition.transition_id)
    put(out, "lastTransitionTime", optional_rfc3339(condition.last_transition_time))
    put(out, "reason", condition.reason)
    put(out, "message", condition.message)
    return out


def kube_podgroup(podgroup: PodGroup) -> Doc:
    spec: Doc = {"minMember": podgroup.min_member}
    put(spec, "minTaskMember", dict(podgroup.min_task_member))
    spec["queue"] = podgroup.queue
    put(spec, "priorityClassName", podgroup.priority_class_name)
    if podgroup.min_resources is not None:
        spec["minResources"] = quantities(podgroup.min_resources)
    put(spec, "networkTopology", _optional_topology(podgroup.network_topology))
    put(spec, "subGroupPolicy", [_sub_group_policy(p) for p in podgroup.sub_group_policy])
    s = podgroup.status
    status: Doc = {"phase": s.phase}
    put(status, "conditions", [_podgroup_condition(c) for c in s.conditions])
    for key, count in (("running", s.running), ("succeeded", s.succeeded), ("failed", s.failed)):
        put(status, key, count, 0)
    return {"metadata": kube_meta(podgroup.meta, namespaced=True), "spec": spec, "status": status}


# --- topology.volcano.sh HyperNode and bus.volcano.sh Command ------------------------------------


def _member(member: HyperNodeMember) -> Doc:
    selector: Doc = {}
    if member.exact_name:
        selector["exactMatch"] = {"name": member.exact_name}
    if member.regex_pattern:
        selector["regexMatch"] = {"pattern": member.regex_pattern}
    if member.label_selector is not None:
        selector["labelMatch"] = kube_label_selector(member.label_selector)
    return {"type": member.type, "selector": selector}


def kube_hypernode(hypernode: HyperNode) -> Doc:
    spec: Doc = {"tier": hypernode.tier}
    put(spec, "tierName", hypernode.tier_name)
    put(spec, "members", [_member(m) for m in hypernode.members])
    return {"metadata": kube_meta(hypernode.meta, namespaced=False), "spec": spec}


def kube_command(command: Command) -> Doc:
    # Command has no spec: its fields sit beside metadata, as in Volcano's API
    out: Doc = {"metadata": kube_meta(command.meta, namespaced=True), "action": command.action}
    target = command.target
    if target is not None:
        reference: Any = {"kind": target.kind, "name": target.name}
        put(reference, "apiVersion", target.api_version)
        put(reference, "uid", target.uid)
        out["target"] = reference
    put(out, "reason", command.reason)
    put(out, "message", command.message)
    return out
