"""Volcano's own kinds from manifests: Job (batch), Queue and PodGroup (scheduling), HyperNode (topology)
and Command (bus). Field names follow Volcano's CRDs; enums are checked here, admission-time defaulting
and cross-field validation are not (they belong to admission).
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.objects import (
    Command,
    DependsOn,
    HyperNode,
    HyperNodeMember,
    Job,
    JobCondition,
    JobState,
    JobStatus,
    LifecyclePolicy,
    NetworkTopologySpec,
    NodeGroupAffinity,
    ObjectMeta,
    OwnerReference,
    PartitionPolicy,
    PodGroup,
    PodGroupCondition,
    PodGroupStatus,
    Queue,
    QueueAffinity,
    QueueStatus,
    SubGroupPolicy,
    TaskSpec,
    VolumeSpec,
    frozen_map,
)
from contracts.parse_core import (
    parse_label_selector,
    parse_pod_template,
)
from contracts.parse_fields import (
    CONDITION_STATUSES,
    Fields,
    as_string_list,
    describe,
)

NETWORK_TOPOLOGY_MODES = ("hard", "soft")
DEPENDS_ON_ITERATIONS = ("any", "all")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
# the events and actions a user may put in a lifecycle policy; the bus also has internal ones
POLICY_EVENTS = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
POLICY_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
COMMAND_ACTIONS = (*POLICY_ACTIONS, "SyncJob", "EnqueueJob", "SyncQueue", "OpenQueue", "CloseQueue")
PODGROUP_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")
QUEUE_STATES = ("Open", "Closing", "Closed", "Unknown")
DEQUEUE_STRATEGIES = ("fifo", "traverse")
MEMBER_TYPES = ("Node", "HyperNode")
MEMBER_SELECTORS = ("exactMatch", "regexMatch", "labelMatch")


def parse_network_topology(topology: Fields) -> NetworkTopologySpec:
    return NetworkTopologySpec(
        mode=topology.string("mode", "hard", choices=NETWORK_TOPOLOGY_MODES),
        highest_tier_allowed=topology.optional_integer("highestTierAllowed", minimum=0),
        highest_tier_name=topology.string("highestTierName"),
    )


# --- batch.volcano.sh Job ------------------------------------------------------------------------


def _policy(policy: Fields) -> LifecyclePolicy:
    return LifecyclePolicy(
        action=policy.string("action", required=True, choices=POLICY_ACTIONS),
        event=policy.string("event", choices=POLICY_EVENTS),
        events=policy.strings("events", choices=POLICY_EVENTS),
        exit_code=policy.optional_integer("exitCode"),
        timeout_seconds=policy.duration("timeout"),
    )


def _depends_on(depends_on: Fields) -> DependsOn:
    return DependsOn(
        name=depends_on.strings("name"),
        iteration=depends_on.string("iteration", "all", choices=DEPENDS_ON_ITERATIONS),
    )


def _partition_policy(partition: Fields) -> PartitionPolicy:
    return PartitionPolicy(
        total_partitions=partition.integer("totalPartitions", required=True, minimum=1),
        partition_size=partition.integer("partitionSize", required=True, minimum=1),
        min_partitions=partition.integer("minPartitions", minimum=0),
        network_topology=partition.optional("networkTopology", parse_network_topology),
    )


def _task(task: Fields) -> TaskSpec:
    return TaskSpec(
        name=task.string("name"),
        replicas=task.integer("replicas", 1, minimum=0),
        min_available=task.optional_integer("minAvailable", minimum=0),
        template=parse_pod_template(task.section("template")),
        policies=task.each("policies", _policy),
        topology_policy=task.string("topologyPolicy", choices=TOPOLOGY_POLICIES),
        # -1 means unlimited restarts before TaskFailed
        max_retry=task.integer("maxRetry", minimum=-1),
        depends_on=task.optional("dependsOn", _depends_on),
        partition_policy=task.optional("partitionPolicy", _partition_policy),
    )


def _volume(volume: Fields) -> VolumeSpec:
    return VolumeSpec(
        mount_path=volume.string("mountPath", required=True),
        volume_claim_name=volume.string("volumeClaimName"),
        volume_claim=volume.optional("volumeClaim", Fields.frozen),
    )


def _job_condition(condition: Fields) -> JobCondition:
    return JobCondition(
        status=condition.string("status", required=True),
        last_transition_time=condition.timestamp("lastTransitionTime"),
    )


def _task_state(value: object) -> Mapping[str, int]:
    """Volcano's TaskState: {"phase": {"Running": 2, ...}}."""
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping, got {describe(value)}")
    phases = value.get("phase")
    if phases is None:
        return frozen_map({})
    if not isinstance(phases, Mapping):
        raise ValueError(f"phase: expected a mapping, got {describe(phases)}")
    counts = {}
    for phase, count in phases.items():
        if not isinstance(phase, str) or isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"phase: expected pod phase -> count (an integer >= 0), got {describe(phases)}")
        counts[phase] = count
    return frozen_map(counts)


def _job_status(status: Fields) -> JobStatus:
    """What the job-controller writes (`lahar get job -o yaml` prints it): read back so that an object
    written out and read again is the same value. Admission ignores it (a job's status is its
    controller's)."""
    state = status.section("state")
    return JobStatus(
        state=JobState(
            phase=state.string("phase", "Pending"),
            reason=state.string("reason"),
            message=state.string("message"),
            last_transition_time=state.timestamp("lastTransitionTime"),
        ),
        min_available=status.integer("minAvailable", minimum=0),
        task_status_count=status.map_of("taskStatusCount", _task_state),
        pending=status.integer("pending", minimum=0),
        running=status.integer("running", minimum=0),
        succeeded=status.integer("succeeded", minimum=0),
        failed=status.integer("failed", minimum=0),
        terminating=status.integer("terminating", minimum=0),
        unknown=status.integer("unknown", minimum=0),
        version=status.integer("version", minimum=0),
        retry_count=status.integer("retryCount", minimum=0),
        running_duration=status.duration("runningDuration"),
        controlled_resources=status.string_map("controlledResources"),
        conditions=status.each("conditions", _job_condition),
    )


def parse_job(doc: Fields, meta: ObjectMeta) -> Job:
    spec = doc.section("spec")
    return Job(
        meta=meta,
        tasks=spec.each("tasks", _task),
        scheduler_name=spec.string("schedulerName", "volcano"),
        min_available=spec.optional_integer("minAvailable", minimum=0),
        volumes=spec.each("volumes", _volume),
        policies=spec.each("policies", _policy),
        plugins=spec.map_of("plugins", as_string_list),
        running_estimate=spec.duration("runningEstimate"),
        queue=spec.string("queue", "default"),
        max_retry=spec.integer("maxRetry", 3, minimum=0),
        ttl_seconds_after_finished=spec.optional_integer("ttlSecondsAfterFinished", minimum=0),
        priority_class_name=spec.string("priorityClassName"),
        min_success=spec.optional_integer("minSuccess", minimum=1),
        network_topology=spec.optional("networkTopology", parse_network_topology),
        status=_job_status(doc.section("status")),
    )


# --- scheduling.volcano.sh Queue and PodGroup ----------------------------------------------------


def _node_group_affinity(affinity: Fields) -> NodeGroupAffinity:
    return NodeGroupAffinity(
        required=affinity.strings("requiredDuringSchedulingIgnoredDuringExecution"),
        preferred=affinity.strings("preferredDuringSchedulingIgnoredDuringExecution"),
    )


def _queue_affinity(affinity: Fields) -> QueueAffinity:
    return QueueAffinity(
        node_group_affinity=affinity.optional("nodeGroupAffinity", _node_group_affinity),
        node_group_anti_affinity=affinity.optional("nodeGroupAntiAffinity", _node_group_affinity),
    )


def _queue_status(status: Fields) -> QueueStatus:
    return QueueStatus(
        state=status.string("state", "Open", choices=QUEUE_STATES),
        pending=status.integer("pending", minimum=0),
        running=status.integer("running", minimum=0),
        inqueue=status.integer("inqueue", minimum=0),
        completed=status.integer("completed", minimum=0),
        unknown=status.integer("unknown", minimum=0),
        allocated=status.resources("allocated"),
    )


def parse_queue(doc: Fields, meta: ObjectMeta) -> Queue:
    spec = doc.section("spec")
    return Queue(
        meta=meta,
        weight=spec.integer("weight", 1, minimum=1, maximum=65535),
        capability=spec.optional_resources("capability"),
        reclaimable=spec.optional_boolean("reclaimable"),
        deserved=spec.optional_resources("deserved"),
        guarantee=spec.section("guarantee").optional_resources("resource"),
        parent=spec.string("parent"),
        priority=spec.integer("priority", minimum=0),
        affinity=spec.optional("affinity", _queue_affinity),
        type=spec.string("type"),
        extend_clusters=spec.each("extendClusters", Fields.frozen),
        dequeue_strategy=spec.string("dequeueStrategy", "traverse", choices=DEQUEUE_STRATEGIES),
        status=_queue_status(doc.section("status")),
    )


def _sub_group_policy(policy: Fields) -> SubGroupPolicy:
    return SubGroupPolicy(
        name=policy.string("name", required=True),
        network_topology=policy.optional("networkTopology", parse_network_topology),
        sub_group_size=policy.optional_integer("subGroupSize", minimum=1),
        min_sub_groups=policy.optional_integer("minSubGroups", minimum=0),
        label_selector=policy.optional("labelSelector", parse_label_selector),
        match_label_keys=policy.strings("matchLabelKeys"),
    )


def _podgroup_condition(condition: Fields) -> PodGroupCondition:
    return PodGroupCondition(
        type=condition.string("type", required=True),
        status=condition.string("status", "True", choices=CONDITION_STATUSES),
        transition_id=condition.string("transitionID"),
        last_transition_time=condition.timestamp("lastTransitionTime"),
        reason=condition.string("reason"),
        message=condition.string("message"),
    )


def _podgroup_status(status: Fields) -> PodGroupStatus:
    return PodGroupStatus(
        phase=status.string("phase", "Pending", choices=PODGROUP_PHASES),
        conditions=status.each("conditions", _podgroup_condition),
        running=status.integer("running", minimum=0),
        succeeded=status.integer("succeeded", minimum=0),
        failed=status.integer("failed", minimum=0),
    )


def parse_podgroup(doc: Fields, meta: ObjectMeta) -> PodGroup:
    spec = doc.section("spec")
    return PodGroup(
        meta=meta,
        min_member=spec.integer("minMember", minimum=0),
        min_task_member=spec.int_map("minTaskMember", minimum=0),
        queue=spec.string("queue", "default"),
        priority_class_name=spec.string("priorityClassName"),
        min_resources=spec.optional_resources("minResources"),
        network_topology=spec.optional("networkTopology", parse_network_topology),
        sub_group_policy=spec.each("subGroupPolicy", _sub_group_policy),
        status=_podgroup_status(doc.section("status")),
    )


# --- topology.volcano.sh HyperNode ---------------------------------------------------------------


def _exact_name(match: Fields) -> str:
    return match.string("name", required=True)


def _regex_pattern(match: Fields) -> str:
    return match.regex("pattern", required=True)


def _member(member: Fields) -> HyperNodeMember:
    selector = member.section("selector", required=True)
    given = [name for name in MEMBER_SELECTORS if selector.present(name)]
    if member.present("selector") and len(given) != 1:
        found = ", ".join(given) if given else "none"
        selector.error(f"expected exactly one of {', '.join(MEMBER_SELECTORS)}, got {found}")
    return HyperNodeMember(
        type=member.string("type", required=True, choices=MEMBER_TYPES),
        exact_name=selector.optional("exactMatch", _exact_name) or "",
        regex_pattern=selector.optional("regexMatch", _regex_pattern) or "",
        label_selector=selector.optional("labelMatch", parse_label_selector),
    )


def parse_hypernode(doc: Fields, meta: ObjectMeta) -> HyperNode:
    spec = doc.section("spec")
    return HyperNode(
        meta=meta,
        tier=spec.integer("tier", required=True, minimum=0),
        tier_name=spec.string("tierName"),
        members=spec.each("members", _member),
    )


# --- bus.volcano.sh Command ----------------------------------------------------------------------


def _owner_reference(target: Fields) -> OwnerReference:
    return OwnerReference(
        kind=target.string("kind", required=True),
        name=target.string("name", required=True),
        api_version=target.string("apiVersion"),
        uid=target.string("uid"),
    )


def parse_command(doc: Fields, meta: ObjectMeta) -> Command:
    return Command(
        meta=meta,
        action=doc.string("action", required=True, choices=COMMAND_ACTIONS),
        target=doc.optional("target", _owner_reference),
        reason=doc.string("reason"),
        message=doc.string("message"),
    )
