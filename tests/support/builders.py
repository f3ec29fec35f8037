"""Builders for scheduler test cases (in the spirit of Volcano's BuildPod/BuildNode/BuildPodGroup/BuildQueue).

Every object gets a creation timestamp in build order, so order-dependent behaviour is deterministic.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from contracts.objects import (
    Container,
    HyperNode,
    HyperNodeMember,
    NetworkTopologySpec,
    Node,
    NodeAffinity,
    ObjectMeta,
    Pod,
    PodGroup,
    PodGroupStatus,
    PodSpec,
    PodStatus,
    PriorityClass,
    Queue,
    QueueStatus,
    Taint,
    Toleration,
    frozen_map,
)
from contracts.resources import Resources
from services.scheduler.core.conf import SchedulerConf, parse_conf
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.session import Session
from services.scheduler.core.snapshot import ClusterSnapshot

_clock = itertools.count(1)


def _meta(name: str, namespace: str, labels=None, annotations=None, uid: str | None = None) -> ObjectMeta:
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=uid or (f"{namespace}-{name}" if namespace else name),
        labels=frozen_map(labels),
        annotations=frozen_map(annotations),
        creation_timestamp=float(next(_clock)),
    )


def res(**dims: Any) -> Resources:
    """res(cpu="2", memory="4Gi", gpu=1) — `gpu` is shorthand for nvidia.com/gpu."""
    spec = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in dims.items()}
    return Resources.parse(spec)


def node(
    name: str,
    cpu: str | int = 4,
    memory: str = "8Gi",
    *,
    pods: int = 110,
    gpu: int = 0,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str | int] | None = None,
) -> Node:
    spec: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu:
        spec["nvidia.com/gpu"] = gpu
    spec.update(extra or {})
    allocatable = Resources.parse(spec)
    return Node(
        meta=_meta(name, "", labels),
        allocatable=allocatable,
        capacity=allocatable,
        taints=tuple(taints),
        unschedulable=unschedulable,
    )


def pod(
    name: str,
    group: str | None = None,
    *,
    cpu: str | int | None = 1,
    memory: str | None = "1Gi",
    gpu: int = 0,
    namespace: str = "default",
    node_name: str = "",
    phase: str | None = None,
    role: str = "",
    priority: int | None = None,
    priority_class: str = "",
    preemptable: bool | None = None,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    node_affinity: NodeAffinity | None = None,
    tolerations: Sequence[Toleration] = (),
    preemption_policy: str = "",
    deleting: bool = False,
    started: float | None = None,
    nominated: str = "",
) -> Pod:
    """`started`: when it started running (its status' startTime); `nominated`: the node a preemption
    reserved room on for it (its status' nominatedNodeName)."""
    requests: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpu:
        requests["nvidia.com/gpu"] = gpu
    notes = dict(annotations or {})
    if group:
        notes["scheduling.k8s.io/group-name"] = group
    if role:
        notes["volcano.sh/task-spec"] = role
    if preemptable is not None:
        notes["volcano.sh/preemptable"] = "true" if preemptable else "false"
    meta = _meta(name, namespace, labels, notes)
    if deleting:
        meta = ObjectMeta(
            **{**{f: getattr(meta, f) for f in meta.__dataclass_fields__}, "deletion_timestamp": 1.0}
        )
    return Pod(
        meta=meta,
        spec=PodSpec(
            containers=(Container(name="main", requests=Resources.parse(requests)),),
            scheduler_name="volcano",
            node_name=node_name,
            node_selector=frozen_map(node_selector),
            node_affinity=node_affinity,
            tolerations=tuple(tolerations),
            priority=priority,
            priority_class_name=priority_class,
            preemption_policy=preemption_policy,
        ),
        status=PodStatus(
            phase=phase or ("Running" if node_name else "Pending"),
            start_time=started,
            nominated_node_name=nominated,
        ),
    )


def podgroup(
    name: str,
    *,
    namespace: str = "default",
    queue: str = "default",
    min_member: int = 1,
    min_task_member: Mapping[str, int] | None = None,
    phase: str = "Inqueue",
    min_resources: Resources | None = None,
    priority_class: str = "",
    network_topology: NetworkTopologySpec | None = None,
    annotations: Mapping[str, str] | None = None,
) -> PodGroup:
    return PodGroup(
        meta=_meta(name, namespace, annotations=annotations),
        min_member=min_member,
        min_task_member=frozen_map(min_task_member),
        queue=queue,
        priority_class_name=priority_class,
        min_resources=min_resources,
        network_topology=network_topology,
        status=PodGroupStatus(phase=phase),
    )


def queue(
    name: str,
    weight: int = 1,
    *,
    capability: Resources | None = None,
    reclaimable: bool | None = None,
    deserved: Resources | None = None,
    guarantee: Resources | None = None,
    parent: str = "",
    priority: int = 0,
    state: str = "Open",
    annotations: Mapping[str, str] | None = None,
) -> Queue:
    return Queue(
        meta=_meta(name, "", annotations=annotations),
        weight=weight,
        capability=capability,
        reclaimable=reclaimable,
        deserved=deserved,
        guarantee=guarantee,
        parent=parent,
        priority=priority,
        status=QueueStatus(state=state),
    )


def priority_class(name: str, value: int, *, global_default: bool = False) -> PriorityClass:
    return PriorityClass(meta=_meta(name, ""), value=value, global_default=global_default)


def hypernode(name: str, tier: int, nodes: Iterable[str] = (), hypernodes: Iterable[str] = ()) -> HyperNode:
    members = tuple(HyperNodeMember(type="Node", exact_name=n) for n in nodes) + tuple(
        HyperNodeMember(type="HyperNode", exact_name=h) for h in hypernodes
    )
    return HyperNode(meta=_meta(name, ""), tier=tier, members=members)


def gang(
    name: str,
    replicas: int,
    *,
    min_member: int | None = None,
    queue_name: str = "default",
    phase: str = "Inqueue",
    role: str = "worker",
    **pod_kwargs: Any,
) -> list[PodGroup | Pod]:
    """A PodGroup with `replicas` pods named `<name>-<role>-<i>`."""
    pg = podgroup(
        name, queue=queue_name, min_member=replicas if min_member is None else min_member, phase=phase
    )
    return [pg] + [pod(f"{name}-{role}-{i}", name, role=role, **pod_kwargs) for i in range(replicas)]


def conf(
    actions: str, *tiers: Sequence[str | Mapping[str, Any]], configurations: Any = None
) -> SchedulerConf:
    """conf("allocate", ["gang"], ["predicates", {"name": "binpack", "arguments": {...}}])."""
    doc: dict[str, Any] = {
        "actions": actions,
        "tiers": [
            {"plugins": [p if isinstance(p, Mapping) else {"name": p} for p in tier]} for tier in tiers
        ],
    }
    if configurations:
        doc["configurations"] = configurations
    return parse_conf(yaml.safe_dump(doc))


def session(
    objects: Iterable[Any], scheduler_conf: SchedulerConf, *, seed: int = 0, now: float = 0.0
) -> Session:
    return Session(ClusterSnapshot.from_objects(objects), scheduler_conf, seed=seed, now=now)


def run(
    objects: Iterable[Any], scheduler_conf: SchedulerConf, *, seed: int = 0, now: float = 0.0
) -> SessionResult:
    return session(objects, scheduler_conf, seed=seed, now=now).run()
