"""Immutable typed values for the API objects lahar reads: Kubernetes-shaped Node, Pod and PriorityClass,
and Volcano's Job, Queue, PodGroup, HyperNode and Command (CronJob, JobTemplate and JobFlow are in
contracts/objects_flow.py).

Parsing from YAML/JSON lives in `contracts.parse`; these types hold already-validated values. Mappings are
read-only views and sequences are tuples, so a value can be shared between a snapshot and any number of
sessions without copying.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from contracts.resources import EMPTY, Resources


class FrozenMap(Mapping[str, Any]):
    """A read-only, hashable mapping, so that objects holding labels or annotations stay values."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._items = dict(items or {})
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    # the dict's own lookups: Mapping's generic ones cost a try/except around __getitem__, and the
    # scheduler reads labels and annotations several times per pod and session
    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(sorted((k, repr(v)) for k, v in self._items.items())))
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and self._items == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"


FROZEN_EMPTY: Mapping[str, Any] = FrozenMap()


def frozen_map(items: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of a mapping (or the shared empty one)."""
    return FrozenMap(items) if items else FROZEN_EMPTY


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    name: str
    namespace: str = "default"  # "" for cluster-scoped kinds
    uid: str = ""
    labels: Mapping[str, str] = FROZEN_EMPTY
    annotations: Mapping[str, str] = FROZEN_EMPTY
    # seconds since the epoch; loaders assign document order when a manifest gives none, so that
    # Volcano's "creationTimestamp, then UID" ordering is deterministic.
    creation_timestamp: float = 0.0
    deletion_timestamp: float | None = None
    generation: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


# --- Kubernetes core/v1 pieces -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""  # empty key with operator Exists tolerates everything
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty matches every effect
    toleration_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed together; a node matches a term list when it matches any term."""

    match_expressions: tuple[SelectorRequirement, ...] = ()
    match_fields: tuple[SelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    required: tuple[NodeSelectorTerm, ...] | None = None  # requiredDuringSchedulingIgnoredDuringExecution
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: Mapping[str, str] = FROZEN_EMPTY
    match_expressions: tuple[SelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    value: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    working_dir: str = ""
    requests: Resources = EMPTY
    limits: Resources = EMPTY
    # an init container with restartPolicy Always is a sidecar: it runs alongside the main containers
    restart_policy: str = ""


@dataclass(frozen=True, slots=True)
class PodSpec:
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    node_selector: Mapping[str, str] = FROZEN_EMPTY
    node_affinity: NodeAffinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = ""  # PreemptLowerPriority | Never
    restart_policy: str = "Always"  # Always | OnFailure | Never
    hostname: str = ""
    subdomain: str = ""
    host_network: bool = False
    dns_policy: str = ""
    overhead: Resources = EMPTY
    active_deadline_seconds: int | None = None
    termination_grace_period_seconds: int | None = None

    def effective_requests(self) -> Resources:
        """Kubernetes' effective pod request: max(sum of app containers + sidecars, each init container
        + the sidecars started before it), plus overhead. Pods stamped from one template share the result."""
        return _effective_requests(
            tuple(c.requests for c in self.containers),
            tuple((c.requests, c.restart_policy == "Always") for c in self.init_containers),
            self.overhead,
        )

    def init_requests(self) -> Resources:
        """Volcano's InitResreq: the request the pod needs to start (same as effective here, since sidecars
        and init containers are already folded into it)."""
        return self.effective_requests()


@functools.lru_cache(maxsize=4096)
def _effective_requests(
    containers: tuple[Resources, ...],
    init_containers: tuple[tuple[Resources, bool], ...],
    overhead: Resources,
) -> Resources:
    total = EMPTY
    for requests in containers:
        total = total + requests
    sidecars = EMPTY
    init_peak = EMPTY
    for requests, is_sidecar in init_containers:
        if is_sidecar:
            sidecars = sidecars + requests
            init_peak = init_peak.max_with(sidecars)
        else:
            init_peak = init_peak.max_with(sidecars + requests)
    return (total + sidecars).max_with(init_peak) + overhead


@dataclass(frozen=True, slots=True)
class PodTemplate:
    labels: Mapping[str, str] = FROZEN_EMPTY
    annotations: Mapping[str, str] = FROZEN_EMPTY
    spec: PodSpec = field(default_factory=PodSpec)


@dataclass(frozen=True, slots=True)
class PodStatus:
    phase: str = "Pending"  # Pending | Running | Succeeded | Failed | Unknown
    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    nominated_node_name: str = ""
    start_time: float | None = None


@dataclass(frozen=True, slots=True)
class Pod:
    meta: ObjectMeta
    spec: PodSpec = field(default_factory=PodSpec)
    status: PodStatus = field(default_factory=PodStatus)
    kind = "Pod"


@dataclass(frozen=True, slots=True)
class Node:
    meta: ObjectMeta
    allocatable: Resources = EMPTY
    capacity: Resources = EMPTY
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    kind = "Node"


@dataclass(frozen=True, slots=True)
class PriorityClass:
    meta: ObjectMeta
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    description: str = ""
    kind = "PriorityClass"


# --- scheduling.volcano.sh/v1beta1 ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NetworkTopologySpec:
    mode: str = "hard"  # hard | soft
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    name: str
    network_topology: NetworkTopologySpec | None = None
    sub_group_size: int | None = None
    min_sub_groups: int | None = None
    label_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodGroupCondition:
    type: str  # Unschedulable | Scheduled
    status: str = "True"
    transition_id: str = ""
    last_transition_time: float | None = None
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class PodGroupStatus:
    phase: str = "Pending"  # Pending | Inqueue | Running | Unknown | Completed
    conditions: tuple[PodGroupCondition, ...] = ()
    running: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class PodGroup:
    meta: ObjectMeta
    min_member: int = 0
    min_task_member: Mapping[str, int] = FROZEN_EMPTY
    queue: str = "default"
    priority_class_name: str = ""
    min_resources: Resources | None = None  # None: enqueue always permitted
    network_topology: NetworkTopologySpec | None = None
    sub_group_policy: tuple[SubGroupPolicy, ...] = ()
    status: PodGroupStatus = field(default_factory=PodGroupStatus)
    kind = "PodGroup"


@dataclass(frozen=True, slots=True)
class NodeGroupAffinity:
    required: tuple[str, ...] = ()  # requiredDuringSchedulingIgnoredDuringExecution
    preferred: tuple[str, ...] = ()  # preferredDuringSchedulingIgnoredDuringExecution


@dataclass(frozen=True, slots=True)
class QueueAffinity:
    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAffinity | None = None


@dataclass(frozen=True, slots=True)
class QueueStatus:
    state: str = "Open"  # Open | Closing | Closed | Unknown
    pending: int = 0
    running: int = 0
    inqueue: int = 0
    completed: int = 0
    unknown: int = 0
    allocated: Resources = EMPTY


@dataclass(frozen=True, slots=True)
class Queue:
    meta: ObjectMeta
    weight: int = 1
    capability: Resources | None = None
    reclaimable: bool | None = None  # None defaults to true (webhook)
    deserved: Resources | None = None
    guarantee: Resources | None = None
    parent: str = ""
    priority: int = 0
    affinity: QueueAffinity | None = None
    type: str = ""
    extend_clusters: tuple[Mapping[str, object], ...] = ()
    dequeue_strategy: str = "traverse"  # fifo | traverse
    status: QueueStatus = field(default_factory=QueueStatus)
    kind = "Queue"

    @property
    def is_reclaimable(self) -> bool:
        return self.reclaimable is not False


# --- topology.volcano.sh/v1alpha1 ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HyperNodeMember:
    type: str  # Node | HyperNode
    exact_name: str = ""
    regex_pattern: str = ""
    label_selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class HyperNode:
    meta: ObjectMeta
    tier: int
    tier_name: str = ""
    members: tuple[HyperNodeMember, ...] = ()
    kind = "HyperNode"


# --- batch.volcano.sh/v1alpha1 -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    action: str
    event: str = ""
    events: tuple[str, ...] = ()
    exit_code: int | None = None
    timeout_seconds: float | None = None

    def all_events(self) -> tuple[str, ...]:
        return ((self.event,) if self.event else ()) + self.events


@dataclass(frozen=True, slots=True)
class DependsOn:
    name: tuple[str, ...] = ()
    iteration: str = "all"  # any | all


@dataclass(frozen=True, slots=True)
class PartitionPolicy:
    total_partitions: int
    partition_size: int
    min_partitions: int = 0
    network_topology: NetworkTopologySpec | None = None


@dataclass(frozen=True, slots=True)
class TaskSpec:
    name: str
    replicas: int = 1
    min_available: int | None = None  # None: defaulted to replicas by admission
    template: PodTemplate = field(default_factory=PodTemplate)
    policies: tuple[LifecyclePolicy, ...] = ()
    topology_policy: str = ""
    max_retry: int = 0
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicy | None = None


@dataclass(frozen=True, slots=True)
class VolumeSpec:
    mount_path: str
    volume_claim_name: str = ""
    volume_claim: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True)
class JobCondition:
    status: str
    last_transition_time: float | None = None


@dataclass(frozen=True, slots=True)
class JobState:
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None


@dataclass(frozen=True, slots=True)
class JobStatus:
    state: JobState = field(default_factory=JobState)
    min_available: int = 0
    task_status_count: Mapping[str, Mapping[str, int]] = FROZEN_EMPTY
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    running_duration: float | None = None
    controlled_resources: Mapping[str, str] = FROZEN_EMPTY
    conditions: tuple[JobCondition, ...] = ()


@dataclass(frozen=True, slots=True)
class Job:
    meta: ObjectMeta
    tasks: tuple[TaskSpec, ...] = ()
    scheduler_name: str = "volcano"
    min_available: int | None = None  # None: defaulted to the sum of task minAvailable
    volumes: tuple[VolumeSpec, ...] = ()
    policies: tuple[LifecyclePolicy, ...] = ()
    plugins: Mapping[str, tuple[str, ...]] = FROZEN_EMPTY
    running_estimate: float | None = None
    queue: str = "default"
    max_retry: int = 3
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str = ""
    min_success: int | None = None
    network_topology: NetworkTopologySpec | None = None
    status: JobStatus = field(default_factory=JobStatus)
    kind = "Job"


# --- bus.volcano.sh/v1alpha1 ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OwnerReference:
    kind: str
    name: str
    api_version: str = ""
    uid: str = ""


@dataclass(frozen=True, slots=True)
class Command:
    meta: ObjectMeta
    action: str
    target: OwnerReference | None = None
    reason: str = ""
    message: str = ""
    kind = "Command"


# the job-making kinds build on the classes above (contracts/objects_flow.py says why this import is last)
from contracts.objects_flow import CronJob, JobFlow, JobTemplate  # noqa: E402

ApiObject = (
    Node
    | Pod
    | PriorityClass
    | PodGroup
    | Queue
    | HyperNode
    | Job
    | Command
    | CronJob
    | JobTemplate
    | JobFlow
)

API_VERSIONS: Mapping[str, str] = MappingProxyType(
    {
        "Node": "v1",
        "Pod": "v1",
        "PriorityClass": "scheduling.k8s.io/v1",
        "PodGroup": "scheduling.volcano.sh/v1beta1",
        "Queue": "scheduling.volcano.sh/v1beta1",
        "HyperNode": "topology.volcano.sh/v1alpha1",
        "Job": "batch.volcano.sh/v1alpha1",
        "Command": "bus.volcano.sh/v1alpha1",
        "CronJob": "batch.volcano.sh/v1alpha1",
        "JobTemplate": "flow.volcano.sh/v1alpha1",
        "JobFlow": "flow.volcano.sh/v1alpha1",
    }
)
# earlier versions of a kind whose fields lahar reads are the same, accepted and read as the current one
# (Kubernetes served PriorityClass as v1beta1 and v1alpha1 before v1; manifests still say so)
OLDER_API_VERSIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"PriorityClass": ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha1")}
)
CLUSTER_SCOPED = frozenset({"Node", "PriorityClass", "Queue", "HyperNode"})
