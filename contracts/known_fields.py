"""Unknown fields in manifests: every kind lahar reads, with every field its API knows, and the check that
names each other one (`lahar validate`, the admission API and the intake all run it through
contracts/parse.py's parse_documents).

Kubernetes' API server refuses a field it does not know (kubectl --validate=strict, its default since
1.25), so a typo such as `minAvaliable` is an error rather than a setting silently lost. The shapes list
the fields of Volcano's and Kubernetes' APIs, not only those lahar reads: a manifest written for Volcano
passes unchanged, and so does what `lahar get -o yaml` prints (metadata's server-set fields, status).
Kinds without a shape here are not checked; whether lahar knows a kind at all is the parser's to say.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.errors import FieldError
from contracts.field_shapes import FREE, MapOf, Shape, obj, unknown_fields
from contracts.known_fields_pod import (
    LABEL_SELECTOR,
    NODE_SPEC,
    NODE_STATUS,
    OBJECT_META,
    OWNER_REFERENCE,
    PERSISTENT_VOLUME_CLAIM_SPEC,
    POD_SPEC,
    POD_STATUS,
    POD_TEMPLATE_SPEC,
)

# how a manifest's unknown fields are treated (kubectl's --validate values)
STRICT = "strict"  # errors: the document is refused
WARN = "warn"  # warnings: the document is accepted and the caller told
IGNORE = "ignore"  # not looked for
VALIDATION_MODES = (STRICT, WARN, IGNORE)
# kubectl's older boolean spellings of the same flag
_ALIASES = {"true": STRICT, "false": IGNORE}


def validation_mode(text: str) -> str:
    """The mode a --validate flag or a Lahar-Validate header names (any case; true is strict, false
    ignore); ValueError saying what is accepted otherwise."""
    mode = text.strip().lower()
    mode = _ALIASES.get(mode, mode)
    if mode not in VALIDATION_MODES:
        raise ValueError(f"expected strict, warn or ignore (or true, false), got {text!r}")
    return mode


def kind_object(leaves: str = "", /, **fields: Shape) -> dict[str, Shape]:
    """An API object's shape: apiVersion, kind and metadata, then its own fields (as `obj` takes them)."""
    return obj(f"apiVersion kind {leaves}", metadata=OBJECT_META, **fields)


# --- Volcano's shared pieces -----------------------------------------------------------------------

NETWORK_TOPOLOGY = obj("mode highestTierAllowed highestTierName")
LIFECYCLE_POLICY = obj("action event events exitCode timeout")
RESOURCE_LIST = FREE  # resource name -> quantity, any resource name

# --- batch.volcano.sh/v1alpha1 Job -----------------------------------------------------------------

TASK_SPEC = obj(
    "name replicas minAvailable topologyPolicy maxRetry",
    template=POD_TEMPLATE_SPEC,
    policies=LIFECYCLE_POLICY,
    dependsOn=obj("name iteration"),
    partitionPolicy=obj("totalPartitions partitionSize minPartitions", networkTopology=NETWORK_TOPOLOGY),
)
JOB_SPEC = obj(
    "schedulerName minAvailable queue maxRetry ttlSecondsAfterFinished priorityClassName minSuccess"
    " runningEstimate",
    volumes=obj("mountPath volumeClaimName", volumeClaim=PERSISTENT_VOLUME_CLAIM_SPEC),
    tasks=TASK_SPEC,
    policies=LIFECYCLE_POLICY,
    # plugin name -> its arguments (ssh, env, svc, pytorch, ...), each plugin's own
    plugins=FREE,
    networkTopology=NETWORK_TOPOLOGY,
)
JOB_STATUS = obj(
    "minAvailable pending running succeeded failed terminating unknown version retryCount runningDuration",
    state=obj("phase reason message lastTransitionTime"),
    # task name -> {"phase": {pod phase: count}}
    taskStatusCount=MapOf(obj(phase=FREE)),
    controlledResources=FREE,
    conditions=obj("status lastTransitionTime"),
)
JOB = kind_object(spec=JOB_SPEC, status=JOB_STATUS)

# --- scheduling.volcano.sh/v1beta1 Queue and PodGroup -----------------------------------------------

NODE_GROUP_AFFINITY = obj(
    "requiredDuringSchedulingIgnoredDuringExecution preferredDuringSchedulingIgnoredDuringExecution"
)
QUEUE = kind_object(
    spec=obj(
        "weight reclaimable parent priority type dequeueStrategy",
        capability=RESOURCE_LIST,
        deserved=RESOURCE_LIST,
        guarantee=obj(resource=RESOURCE_LIST),
        affinity=obj(nodeGroupAffinity=NODE_GROUP_AFFINITY, nodeGroupAntiAffinity=NODE_GROUP_AFFINITY),
        extendClusters=obj("name weight", capacity=RESOURCE_LIST),
    ),
    status=obj(
        "state unknown pending running inqueue completed",
        reservation=obj("nodes", resource=RESOURCE_LIST),
        allocated=RESOURCE_LIST,
    ),
)
PODGROUP = kind_object(
    spec=obj(
        "minMember queue priorityClassName",
        minTaskMember=FREE,  # task name -> count
        minResources=RESOURCE_LIST,
        networkTopology=NETWORK_TOPOLOGY,
        subGroupPolicy=obj(
            "name subGroupSize minSubGroups matchLabelKeys",
            networkTopology=NETWORK_TOPOLOGY,
            labelSelector=LABEL_SELECTOR,
        ),
    ),
    status=obj(
        "phase running succeeded failed",
        conditions=obj("type status transitionID lastTransitionTime reason message"),
    ),
)

# --- topology.volcano.sh/v1alpha1 HyperNode, bus.volcano.sh/v1alpha1 Command -------------------------

HYPERNODE = kind_object(
    spec=obj(
        "tier tierName",
        members=obj(
            "type",
            selector=obj(exactMatch=obj("name"), regexMatch=obj("pattern"), labelMatch=LABEL_SELECTOR),
        ),
    ),
    status=obj(
        "nodeCount",
        conditions=obj("type status lastTransitionTime reason message observedGeneration"),
    ),
)
COMMAND = kind_object("action reason message", target=OWNER_REFERENCE)

# --- batch.volcano.sh/v1alpha1 CronJob, flow.volcano.sh/v1alpha1 JobTemplate and JobFlow ------------

CRONJOB = kind_object(
    spec=obj(
        "schedule timeZone startingDeadlineSeconds concurrencyPolicy suspend successfulJobsHistoryLimit"
        " failedJobsHistoryLimit",
        jobTemplate=obj(metadata=OBJECT_META, spec=JOB_SPEC),
    ),
    # active: core/v1 ObjectReferences to the running jobs
    status=obj(
        "lastScheduleTime lastSuccessfulTime",
        active=obj("kind namespace name uid apiVersion resourceVersion fieldPath"),
    ),
)
# a JobTemplate's spec is a Job's spec
JOB_TEMPLATE = kind_object(spec=JOB_SPEC, status=obj("jobDependsOnList"))
FLOW_PROBE = obj(
    httpGetList=obj("taskName path port", httpHeader=obj("name value")),
    tcpSocketList=obj("taskName port"),
    taskStatusList=obj("taskName phase"),
)
JOB_FLOW = kind_object(
    spec=obj(
        "jobRetainPolicy",
        flows=obj("name", dependsOn=obj("targets", probe=FLOW_PROBE), patch=obj(spec=JOB_SPEC)),
    ),
    status=obj(
        "pendingJobs runningJobs failedJobs completedJobs terminatedJobs unKnowJobs",
        jobStatusList=obj(
            "name state startTimestamp endTimestamp restartCount",
            runningHistories=obj("startTimestamp endTimestamp state"),
        ),
        # job name -> its condition
        conditions=MapOf(obj("phase createTime runningDuration", taskStatusCount=MapOf(obj(phase=FREE)))),
        state=obj("phase"),
    ),
)

# --- Kubernetes: Pod, Node (core/v1), PriorityClass (scheduling.k8s.io/v1) ---------------------------

POD = kind_object(spec=POD_SPEC, status=POD_STATUS)
NODE = kind_object(spec=NODE_SPEC, status=NODE_STATUS)
PRIORITY_CLASS = kind_object("value globalDefault description preemptionPolicy")

KINDS: Mapping[str, Shape] = {
    "Job": JOB,
    "Queue": QUEUE,
    "PodGroup": PODGROUP,
    "HyperNode": HYPERNODE,
    "Command": COMMAND,
    "Pod": POD,
    "Node": NODE,
    "PriorityClass": PRIORITY_CLASS,
    "CronJob": CRONJOB,
    "JobTemplate": JOB_TEMPLATE,
    "JobFlow": JOB_FLOW,
}


def unknown_manifest_fields(doc: object, document: str) -> list[FieldError]:
    """Every field of a parsed manifest its kind's API does not know, each at its full path with the
    nearest known field when one is close; nothing for a kind without a shape here (or no kind)."""
    if type(doc) is not dict:
        return []
    kind = doc.get("kind")
    shape = KINDS.get(kind) if type(kind) is str else None
    if shape is None:
        return []
    return unknown_fields(doc, shape, document)
