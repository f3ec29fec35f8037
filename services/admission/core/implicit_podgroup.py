"""The PodGroup a plain pod gets when a Volcano scheduler schedules it (Volcano's podgroup controller,
buildPodGroupFromPod): a group of `minMember` copies of the pod.

Volcano reads the group size from the pod's owning workload (annotation
scheduling.volcano.sh/group-min-member on its ReplicaSet, StatefulSet, ...); lahar pods have no owning
workload, so the pod's own annotation is read instead.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.objects import NetworkTopologySpec, ObjectMeta, Pod, PodGroup, frozen_map
from contracts.podgroup_owner import OWNER, owned_by_pod
from services.admission.core.context import DEFAULT_QUEUE, DEFAULT_SCHEDULER

GROUP_NAME = "scheduling.k8s.io/group-name"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
PREEMPTABLE = "volcano.sh/preemptable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
TOPOLOGY_HIGHEST_TIER = "volcano.sh/network-topology-highest-tier"


def podgroup_name(pod: Pod) -> str:
    """Volcano's `podgroup-<owner uid>`; a lahar pod owns its own group."""
    return f"podgroup-{pod.meta.uid or pod.meta.name}"


def podgroup_for_pod(pod: Pod, scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)) -> PodGroup | None:
    """The pod's own PodGroup, or None when another scheduler handles the pod or it already names its
    group (a Job's pods, or pods of an explicit PodGroup)."""
    annotations = pod.meta.annotations
    if pod.spec.scheduler_name not in scheduler_names or annotations.get(GROUP_NAME):
        return None
    min_member = _min_member(annotations.get(GROUP_MIN_MEMBER, ""))
    copied = {
        key: annotations[key] for key in (PREEMPTABLE, COOLDOWN_TIME, REVOCABLE_ZONE) if key in annotations
    }
    # a disruption budget is one of the two forms; the minimum wins when both are given
    for key in (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE):
        if key in annotations:
            copied[key] = annotations[key]
            break
    copied[OWNER] = owned_by_pod(pod.meta.name)  # Volcano's owner reference to the pod
    labels = {key: pod.meta.labels[key] for key in (PREEMPTABLE, COOLDOWN_TIME) if key in pod.meta.labels}
    name = podgroup_name(pod)
    return PodGroup(
        meta=ObjectMeta(
            name=name,
            namespace=pod.meta.namespace,
            uid=name,
            labels=frozen_map(labels),
            annotations=frozen_map(copied),
            creation_timestamp=pod.meta.creation_timestamp,
        ),
        min_member=min_member,
        queue=annotations.get(QUEUE_NAME) or DEFAULT_QUEUE,
        priority_class_name=pod.spec.priority_class_name,
        min_resources=pod.spec.effective_requests().times(min_member),
        network_topology=_network_topology(annotations),
    )


def _min_member(text: str) -> int:
    # Volcano keeps 1 when the annotation is not a non-negative integer
    return int(text) if text.isdigit() else 1


def _network_topology(annotations: Mapping[str, str]) -> NetworkTopologySpec | None:
    mode = annotations.get(TOPOLOGY_MODE)
    tier = annotations.get(TOPOLOGY_HIGHEST_TIER)
    if mode is None and tier is None:
        return None
    mode = (mode or "").lower()
    return NetworkTopologySpec(
        mode=mode if mode in ("hard", "soft") else "hard",
        highest_tier_allowed=int(tier) if tier is not None and tier.lstrip("-").isdigit() else None,
    )
