"""A PodGroup's sub-groups (Volcano's sub-jobs): the partitions of a Job's partitioned tasks.

Each `subGroupPolicy` selects pods (its labelSelector) and splits them by the values of its
matchLabelKeys (the job-controller's `volcano.sh/partition-id`): one sub-group per distinct value list,
a gang of `subGroupSize` pods that must be placed together, within one HyperNode of its own
networkTopology. The job needs `minSubGroups` ready sub-groups of each policy on top of its minAvailable.
Pods no policy selects (or whose label is missing) form the rest: a sub-group of size 1 carrying the
job's own networkTopology, as Volcano's default sub-job.

Built once per session and only for a PodGroup with a policy (`sub_groups_of`), so jobs without
partitions cost nothing. Counts are read live from the tasks' statuses: a trial placement and its undo
need no bookkeeping here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from contracts.objects import NetworkTopologySpec, PodGroup, SubGroupPolicy
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.task import ALLOCATED_STATUSES, TaskInfo, TaskStatus
from services.scheduler.core.model.topology import label_selector_matches

REST = ""  # the policy name of the sub-group holding the pods no policy selects
_READY = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
_PLACED = _READY | {TaskStatus.PIPELINED}


@dataclass(slots=True, eq=False)
class SubGroup:
    key: str  # "<policy>-<values>", e.g. "worker-3"; the policy name alone for the rest
    policy: str
    size: int  # how many of its pods must be placed together (Volcano's sub-job minAvailable)
    network_topology: NetworkTopologySpec | None
    index: int  # its first match value as a number (the partition id), for a stable order
    tasks: list[TaskInfo] = field(default_factory=list)

    def ready(self) -> int:
        """Placed for good, plus pending best-effort pods (they never wait for room), as Volcano."""
        return sum(
            1 for t in self.tasks if t.status in _READY or (t.best_effort and t.status == TaskStatus.PENDING)
        )

    def placed(self) -> int:
        """Ready or pipelined (waiting for room being released)."""
        return sum(
            1 for t in self.tasks if t.status in _PLACED or (t.best_effort and t.status == TaskStatus.PENDING)
        )

    def is_ready(self) -> bool:
        return self.ready() >= self.size

    def is_pipelined(self) -> bool:
        return self.placed() >= self.size

    def waiting(self) -> list[TaskInfo]:
        """Its pending pods that need room (allocate leaves best-effort pods to backfill)."""
        return [t for t in self.tasks if t.status == TaskStatus.PENDING and not t.best_effort]

    def nodes(self) -> list[int]:
        """Where its placed pods sit (this session's placements included)."""
        return [t.node_index for t in self.tasks if t.node_index >= 0 and t.status in _PLACED]


@dataclass(slots=True)
class SubGroups:
    groups: list[SubGroup]  # every policy's sub-groups, then the rest (if any pod is left over)
    minimum: dict[str, int]  # policy -> minSubGroups

    def shortfall(self, *, pipelined: bool = False) -> tuple[str, int, int] | None:
        """The first policy with fewer ready (or, with `pipelined`, placed) sub-groups than its
        minSubGroups: (policy, how many, how many needed); None when every policy has enough."""
        for policy, need in self.minimum.items():
            if need <= 0:
                continue
            have = sum(
                1
                for g in self.groups
                if g.policy == policy and (g.is_pipelined() if pipelined else g.is_ready())
            )
            if have < need:
                return policy, have, need
        return None

    def count(self, policy: str) -> int:
        return sum(1 for g in self.groups if g.policy == policy)


def _match_values(policy: SubGroupPolicy, labels: Mapping[str, str]) -> list[str] | None:
    """Volcano's getSubJobMatchValues: the pod's values of the policy's matchLabelKeys, None when the
    selector does not select it or a key is missing or empty. A policy without matchLabelKeys selects
    nothing (Volcano puts such pods in the default sub-job)."""
    if policy.label_selector is not None and not label_selector_matches(policy.label_selector, labels):
        return None
    values = [labels.get(key, "") for key in policy.match_label_keys]
    if not values or not all(values):
        return None
    return values


def build_sub_groups(podgroup: PodGroup, tasks: list[TaskInfo]) -> SubGroups:
    by_key: dict[str, SubGroup] = {}
    rest: SubGroup | None = None
    for task in tasks:
        labels = task.pod.meta.labels
        for policy in podgroup.sub_group_policy:
            values = _match_values(policy, labels)
            if values is None:
                continue
            key = f"{policy.name}-{'-'.join(values)}"
            group = by_key.get(key)
            if group is None:
                index = int(values[0]) if values[0].isdigit() else 0
                size = policy.sub_group_size if policy.sub_group_size is not None else 1
                group = by_key[key] = SubGroup(key, policy.name, size, policy.network_topology, index)
            group.tasks.append(task)
            break
        else:
            if rest is None:
                rest = SubGroup(REST, REST, 1, podgroup.network_topology, 0)
            rest.tasks.append(task)
    order = {policy.name: i for i, policy in enumerate(podgroup.sub_group_policy)}
    groups = sorted(by_key.values(), key=lambda g: (order[g.policy], g.index, g.key))
    if rest is not None:
        groups.append(rest)
    minimum = {p.name: p.min_sub_groups or 0 for p in podgroup.sub_group_policy}
    return SubGroups(groups, minimum)


def sub_groups_of(job: JobInfo) -> SubGroups | None:
    """The job's sub-groups, None for a PodGroup without a subGroupPolicy. A job's task set is fixed for
    its session, so they are built once (cached on the job)."""
    if not job.podgroup.sub_group_policy:
        return None
    cached = job.sub_groups
    if cached is None:
        cached = job.sub_groups = build_sub_groups(job.podgroup, list(job.tasks.values()))
    return cached
