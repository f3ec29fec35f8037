"""Why a PodGroup waits: the reasons of the Unschedulable condition the scheduler writes, and the
annotations that say how long a pod is expected to run.

The scheduler writes one of these reasons on a waiting PodGroup's Unschedulable condition (its message
keeps the per-reason node counts and adds the details: the queue and resources, what the cluster lacks);
the CLI shows it as the reason of the PodGroup's event rows; autoscalers and dashboards read it. Only
INSUFFICIENT_CLUSTER_CAPACITY is worth adding nodes for (SCALE_UP_REASONS).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from contracts.parse_fields import duration_seconds
from contracts.sim_annotations import SIM_DURATION

# the cluster has too little free room now (nodes lack resources or pod slots, or the cluster's load
# refuses the PodGroup at enqueue); the message says how much: "cluster lacks cpu 3, nvidia.com/gpu 2"
INSUFFICIENT_CLUSTER_CAPACITY = "InsufficientClusterCapacity"
# its queue's limit stops it (capability, a share capped by capability, a closed queue): more nodes
# would not help; the message names the queue and the resources
INSUFFICIENT_QUEUE_QUOTA = "InsufficientQueueQuota"
# it cannot run on this cluster even when empty: a pod larger than every node, or more in all than the
# whole cluster has
NEVER_FITS = "NeverFits"
# no node passes its placement constraints (selectors, affinity, taints, readiness), room aside
NO_MATCHING_NODES = "NoMatchingNodes"
# its queue dequeues strictly in order (`dequeueStrategy: fifo`) and a job ahead of it cannot be placed
BEHIND_QUEUE_HEAD = "BehindQueueHead"
# a node would take it now, but that room is held for a job that has waited past the starvation threshold
BEHIND_STARVING_JOB = "BehindStarvingJob"
# Volcano's reason, for what is none of the above (pipelined tasks waiting for room being released)
NOT_ENOUGH_RESOURCES = "NotEnoughResources"

PENDING_REASONS = frozenset(
    {
        INSUFFICIENT_CLUSTER_CAPACITY,
        INSUFFICIENT_QUEUE_QUOTA,
        NEVER_FITS,
        NO_MATCHING_NODES,
        BEHIND_QUEUE_HEAD,
        BEHIND_STARVING_JOB,
    }
)
SCALE_UP_REASONS = frozenset({INSUFFICIENT_CLUSTER_CAPACITY})

# How long a pod runs, when known. The job-controller copies a Job's spec.runningEstimate onto its
# PodGroup as RUNNING_ESTIMATE (a PodGroup manifest may carry it too); hollow pods declare SIM_DURATION.
RUNNING_ESTIMATE = "lahar.dev/running-estimate"


def expected_run_seconds(
    pod_annotations: Mapping[str, str], group_annotations: Mapping[str, str]
) -> float | None:
    """How long a pod is expected to run: its PodGroup's running estimate (what its user declared), else its
    simulated duration; None when neither is given or one is malformed (unknown: it may run forever)."""
    for value in (group_annotations.get(RUNNING_ESTIMATE), pod_annotations.get(SIM_DURATION)):
        if value:
            return _seconds(value)
    return None


@functools.lru_cache(maxsize=1024)
def _seconds(text: str) -> float | None:
    """A duration annotation's seconds, None if malformed or negative (pods of one template share the
    text, so a scheduler reading every pod's parses each text once)."""
    try:
        seconds = duration_seconds(text)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
