"""Which pods may be evicted (pure): the DefaultEvictor's filters (kubernetes-sigs descheduler v0.27),
lahar's own rules, the policy's limits, and nodeFit.

DefaultEvictor.Filter: a pod that is already stopping, has no owner that would create it again (lahar:
a pod not of a Volcano Job, i.e. a plain Pod, alone or in a user's PodGroup), has system-critical
priority (unless evictSystemCriticalPods), has a priority at or above priorityThreshold, mounts a volume
claim (with ignorePvcPods: its Job has volumes), or whose labels labelSelector does not select, is not
evicted; the annotation `descheduler.alpha.kubernetes.io/evict` lifts those checks. lahar pods have no
local storage, mirror, static or DaemonSet kind, so those filters never refuse one.

lahar's own rules, whatever the policy: a pod the descheduler had evicted less than the cool-down ago (a
Job's pod is created again under its name, so its replacement counts too) is not evicted again, and no
eviction takes a gang below its minMember running pods (Volcano's descheduler knows no gangs; it
relies on PodDisruptionBudgets, which lahar does not have).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from contracts.node_fit import placement_problems, request_problems
from contracts.objects import LabelSelector, Node, Pod
from contracts.resources import CPU, MEMORY, Resources
from services.descheduler.core.policy import DeschedulerPolicy, EvictorArgs, NodeSelector
from services.descheduler.core.view import ClusterView, PodRecord

EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
GROUP_NAME = "scheduling.k8s.io/group-name"  # a pod's PodGroup (Volcano's annotation)
JOB_NAME = "volcano.sh/job-name"  # set on the pods of a Volcano Job
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000  # Kubernetes' scheduling.SystemCriticalPriority


def podgroup_key(pod: Pod) -> str:
    return f"{pod.meta.namespace}/{pod.meta.annotations.get(GROUP_NAME, '')}"


def job_key(pod: Pod) -> str | None:
    name = pod.meta.annotations.get(JOB_NAME)
    return f"{pod.meta.namespace}/{name}" if name else None


def priority_of(pod: Pod, view: ClusterView) -> int:
    """The pod's priority as Kubernetes' admission resolves it: its own, else its class's, else the
    global default class's, else 0."""
    if pod.spec.priority is not None:
        return pod.spec.priority
    pc = view.priority_classes.get(pod.spec.priority_class_name) if pod.spec.priority_class_name else None
    if pc is not None:
        return pc.value
    defaults = [c.value for c in view.priority_classes.values() if c.global_default]
    return max(defaults) if defaults else 0


def qos_rank(pod: Pod) -> int:
    """Kubernetes' QoS class as a rank, lowest evicted first: BestEffort 0, Burstable 1, Guaranteed 2."""
    containers = pod.spec.containers
    if all(c.requests.is_empty() and c.limits.is_empty() for c in containers):
        return 0
    guaranteed = all(
        c.limits.get(name, 0) > 0 and c.requests.get(name, c.limits.get(name, 0)) == c.limits.get(name, 0)
        for c in containers
        for name in (CPU, MEMORY)
    )
    return 2 if guaranteed else 1


def label_selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    if any(labels.get(key) != value for key, value in selector.match_labels.items()):
        return False
    for req in selector.match_expressions:
        value = labels.get(req.key)
        hit = {
            "In": value is not None and value in req.values,
            "NotIn": value is None or value not in req.values,
            "Exists": value is not None,
            "DoesNotExist": value is None,
        }.get(req.operator, False)
        if not hit:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Settings:
    """lahar's own knobs, beside the policy: how long a descheduled pod is left alone, and how old a
    usage sample may be before its node counts as unknown."""

    cooldown_s: float = 1800.0
    usage_stale_after_s: float = 300.0


@dataclass(slots=True)
class Evictor:
    """One run's eviction bookkeeping: the policy's limits, gangs' running counts, what was evicted."""

    view: ClusterView
    policy: DeschedulerPolicy
    settings: Settings
    now: float
    evicted: dict[str, str] = field(default_factory=dict)  # pod key -> node
    per_node: dict[str, int] = field(default_factory=dict)
    per_namespace: dict[str, int] = field(default_factory=dict)
    running: dict[str, int] = field(default_factory=dict)  # PodGroup key -> pods on nodes, not stopping
    requested: dict[str, Resources] = field(default_factory=dict)  # node -> its pods' requests
    pod_counts: dict[str, int] = field(default_factory=dict)  # node -> its pods

    def __post_init__(self) -> None:
        for record in self.view.records():
            if not record.on_node:
                continue
            node = record.node
            self.requested[node] = (
                self.requested.get(node, Resources()) + record.pod.spec.effective_requests()
            )
            self.pod_counts[node] = self.pod_counts.get(node, 0) + 1
            if not record.stopping:
                group = podgroup_key(record.pod)
                self.running[group] = self.running.get(group, 0) + 1

    # --- DefaultEvictor.Filter, and lahar's rules ------------------------------------------------------

    def refusal(self, record: PodRecord, args: EvictorArgs) -> str | None:
        """Why the pod may not be evicted (None: it may)."""
        pod = record.pod
        key = pod.meta.key
        if record.stopping or key in self.evicted:
            return "pod is terminating"
        since = self.view.descheduled_at.get(key)
        if since is not None and self.now - since < self.settings.cooldown_s:
            return f"descheduled {self.now - since:.0f}s ago (cool-down {self.settings.cooldown_s:.0f}s)"
        if EVICT_ANNOTATION in pod.meta.annotations:
            return None
        if job_key(pod) is None:
            return "pod does not have any ownerRefs (a plain pod is not created again)"
        priority = priority_of(pod, self.view)
        if not args.evict_system_critical_pods:
            if priority >= SYSTEM_CRITICAL_PRIORITY:
                return "pod has system critical priority"
            threshold = self.priority_threshold(args)
            if threshold is not None and priority >= threshold:
                return f"pod has priority {priority}, not below the priorityThreshold {threshold}"
        if args.ignore_pvc_pods and job_key(pod) in self.view.claim_jobs:
            return "pod has a PVC and descheduler is configured to ignore PVC pods"
        if args.label_selector is not None and not label_selector_matches(
            args.label_selector, pod.meta.labels
        ):
            return "pod labels do not match the labelSelector filter in the policy parameter"
        return None

    def priority_threshold(self, args: EvictorArgs) -> int | None:
        """The threshold's value; a class that does not exist (yet) refuses every pod, as the descheduler
        refuses to start with it."""
        threshold = args.priority_threshold
        if threshold is None:
            return None
        if threshold.value is not None:
            return threshold.value
        pc = self.view.priority_classes.get(threshold.name)
        return pc.value if pc is not None else -(2**63)

    # --- at the moment of evicting ----------------------------------------------------------------------

    def limit_refusal(self, record: PodRecord) -> str | None:
        """The policy's limits and the gang's minMember: why this eviction may not happen now."""
        pod, policy = record.pod, self.policy
        if policy.max_pods_total is not None and len(self.evicted) >= policy.max_pods_total:
            return f"maxNoOfPodsToEvictTotal ({policy.max_pods_total}) reached"
        namespace = pod.meta.namespace
        if (
            policy.max_pods_per_namespace is not None
            and self.per_namespace.get(namespace, 0) >= policy.max_pods_per_namespace
        ):
            return f"maxNoOfPodsToEvictPerNamespace ({policy.max_pods_per_namespace}) reached in {namespace}"
        group = podgroup_key(pod)
        pg = self.view.podgroups.get(group)
        if pg is not None and self.running.get(group, 0) - 1 < pg.min_member:
            return (
                f"gang {group} has {self.running.get(group, 0)} pods running and needs minMember "
                f"{pg.min_member}"
            )
        return None

    def node_limit_reached(self, node: str) -> bool:
        limit = self.policy.max_pods_per_node
        return limit is not None and self.per_node.get(node, 0) >= limit

    def record(self, record: PodRecord) -> None:
        pod = record.pod
        self.evicted[pod.meta.key] = record.node
        self.per_node[record.node] = self.per_node.get(record.node, 0) + 1
        namespace = pod.meta.namespace
        self.per_namespace[namespace] = self.per_namespace.get(namespace, 0) + 1
        group = podgroup_key(pod)
        self.running[group] = self.running.get(group, 0) - 1
        node = record.node
        self.requested[node] = self.requested.get(node, Resources()) - pod.spec.effective_requests()
        self.pod_counts[node] = self.pod_counts.get(node, 0) - 1

    # --- nodeFit -------------------------------------------------------------------------------------

    def fits_elsewhere(self, record: PodRecord, selector: NodeSelector, excluded: Collection[str]) -> bool:
        """Some other ready node the selector picks and not in `excluded` (the nodes above their targets)
        takes the pod: its nodeSelector, affinity and taints allow it, the node is not cordoned, and its
        requests fit beside what the node's pods request (pods evicted in this run no longer count)."""
        pod = record.pod
        requests = pod.spec.effective_requests()
        for name in sorted(self.view.nodes):
            node = self.view.nodes[name]
            if name == record.node or name in excluded or not node.ready:
                continue
            if not selector.matches(node.meta.labels) or placement_problems(pod.spec, node):
                continue
            requested, count = self.requested_on(node)
            if not request_problems(requests, node, requested, count):
                return True
        return False

    def requested_on(self, node: Node) -> tuple[Resources, int]:
        """What the node's pods request, and how many they are (pods evicted in this run left out)."""
        name = node.meta.name
        return self.requested.get(name, Resources()), self.pod_counts.get(name, 0)
