"""The simulated node agents: what a node reports about its pods, as the node agent would write it.

A bound pod starts at once (PodRunning); a pod being evicted, or whose deletion the job-controller asked on
its node, stops at once (PodTerminated, reason Evicted / Deleted: no grace period is simulated); a running
pod whose run is over exits with its simulated exit code (PodSucceeded / PodFailed). A pod deleted before
any node took it, or after it finished, has nothing left to stop and is reported by nobody.
"""

from __future__ import annotations

from typing import Any

from contracts.events import NODE_AGENT
from services.job_controller.core.expand import JOB_NAME
from services.simulator.world import FINISHED_POD_PHASES, World, pod_exit_code
from shared.runner_types import Event, Output, deterministic_id

STOP_REASONS = {"PodEvicting": "Evicted", "PodDeletionRequested": "Deleted"}


def reactions(world: World, event: Event) -> list[tuple[str, Output]]:
    """What the pod's node writes in answer to `event` (already applied to the world)."""
    key = f"{event.namespace}/{event.name}"
    pod = world.pods.get(key)
    node = event.payload.get("node", "")
    if pod is None or event.kind != "pod" or not node or pod.spec.node_name != node:
        return []
    if event.type == "PodBound" and pod.status.phase == "Pending":
        return [_report(world, key, "PodRunning", {"started_at": event.time}, event.id)]
    if event.type in STOP_REASONS and pod.status.phase not in FINISHED_POD_PHASES:
        return [_report(world, key, "PodTerminated", {"reason": STOP_REASONS[event.type]}, event.id)]
    return []


def completions(world: World, now: float) -> list[tuple[str, Output]]:
    """The exits of the runs that are over by `now`."""
    outputs = []
    for key in world.due(now):
        code = pod_exit_code(world.pods[key])
        if code == 0:
            outputs.append(_report(world, key, "PodSucceeded", {"exit_code": 0}, None))
        else:
            fields = {"exit_code": code, "reason": "Error", "message": f"exited with code {code}"}
            outputs.append(_report(world, key, "PodFailed", fields, None))
    return outputs


def _report(
    world: World, key: str, event_type: str, fields: dict[str, Any], cause: str | None
) -> tuple[str, Output]:
    pod = world.pods[key]
    namespace, name = pod.meta.namespace, pod.meta.name
    job = pod.meta.annotations.get(JOB_NAME)
    output = Output(
        type=event_type,
        kind="pod",
        namespace=namespace,
        name=name,
        payload={"node": pod.spec.node_name, **fields},
        # one report per event answered, or per run (a pod of no Job runs again under the same uid)
        id=deterministic_id(NODE_AGENT, event_type, key, pod.meta.uid, cause or pod.status.start_time),
        causation_id=cause,
        correlation_id=f"{namespace}/{job}" if job else key,
    )
    return NODE_AGENT, output
