"""Why a pod is evicted, as the reason its PodEvicting carries: the decision's name first, then what
the decider says (`deschedule: LoadAware: node te3 above targetThresholds: cpu 92.0% > 80%`).

Readers that act on who decided (the job-controller's retry budget, the descheduler's cool-down) read
the name before the first colon, so the free text after it can say anything."""

from __future__ import annotations

PREEMPT = "preempt"  # the scheduler's preempt action
RECLAIM = "reclaim"  # the scheduler's reclaim action
DESCHEDULE = "deschedule"  # the descheduler's balance plugins
# evictions the job's retry budget forgives through a `*` policy (Volcano issue #2560): the scheduler's
# own preempt and reclaim. A descheduled pod counts like any other eviction (the job-controller's rule)
SCHEDULING_DECISIONS = frozenset({PREEMPT, RECLAIM})


def eviction_cause(reason: str) -> str:
    """The decision an eviction reason names: the text before its first colon."""
    return reason.split(":", 1)[0].strip()


def descheduler_reason(plugin: str, detail: str) -> str:
    return f"{DESCHEDULE}: {plugin}: {detail}"
