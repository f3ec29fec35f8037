"""The simulated node agents: what a node reports about its pods, as the node agent would write it.

A bound pod starts at once (PodRunning), unless a simulation annotation it runs by is malformed (an old log
may hold one admission would refuse): then it fails to start (PodFailed, reason StartError, exit code 128),
as on the node agent's sim runtime; a pod being evicted, or whose deletion the job-controller asked on
its node, stops at once (PodTerminated, reason Evicted / Deleted: no grace period is simulated); a running
pod whose run is over exits with its simulated exit code (PodSucceeded / PodFailed). A pod deleted before
any node took it, or after it finished, has nothing left to stop and is reported by nobody.
"""

from __future__ import annotations

from contracts import payloads
from contracts.events import NODE_AGENT
from contracts.job_shape import JOB_NAME
from contracts.payloads import named_node
from services.simulator.world import FINISHED_POD_PHASES, World, pod_exit_code, start_problem
from shared.runner_types import Event, Output, deterministic_id

START_ERROR_CODE = 128  # what Kubernetes (and the node agent) report for a container that could not start
STOP_REASONS = {"PodEvicting": "Evicted", "PodDeletionRequested": "Deleted"}


def reactions(world: World, event: Event) -> list[tuple[str, Output]]:
    """What the pod's node writes in answer to `event` (already applied to the world)."""
    key = f"{event.namespace}/{event.name}"
    pod = world.pods.get(key)
    node = named_node(event.data)
    if pod is None or event.kind != "pod" or not node or pod.spec.node_name != node:
        return []
    if event.type == "PodBound" and pod.status.phase == "Pending":
        problem = start_problem(pod)
        if problem is not None:  # as the node agent's sim runtime: the pod fails to start
            failed = payloads.PodFailed(
                node=node, exit_code=START_ERROR_CODE, reason="StartError", message=problem
            )
            return [_report(world, key, failed, event.id)]
        running = payloads.PodRunning(node=node, started_at=event.time)
        return [_report(world, key, running, event.id)]
    if event.type in STOP_REASONS and pod.status.phase not in FINISHED_POD_PHASES:
        terminated = payloads.PodTerminated(node=node, reason=STOP_REASONS[event.type])
        return [_report(world, key, terminated, event.id)]
    return []


def completions(world: World, now: float) -> list[tuple[str, Output]]:
    """The exits of the runs that are over by `now`."""
    outputs = []
    for key in world.due(now):
        pod = world.pods[key]
        node, code = pod.spec.node_name, pod_exit_code(pod)
        report: Report
        if code == 0:
            report = payloads.PodSucceeded(node=node, exit_code=0)
        else:
            report = payloads.PodFailed(node=node, exit_code=code, message=f"exited with code {code}")
        outputs.append(_report(world, key, report, None))
    return outputs


# what a simulated node reports about its pods
Report = payloads.PodRunning | payloads.PodSucceeded | payloads.PodFailed | payloads.PodTerminated


def _report(world: World, key: str, report: Report, cause: str | None) -> tuple[str, Output]:
    pod = world.pods[key]
    namespace, name = pod.meta.namespace, pod.meta.name
    job = pod.meta.annotations.get(JOB_NAME)
    event_type = type(report).__name__
    output = Output(
        type=event_type,
        kind="pod",
        namespace=namespace,
        name=name,
        payload=report,
        # one report per event answered, or per run (a pod of no Job runs again under the same uid)
        id=deterministic_id(NODE_AGENT, event_type, key, pod.meta.uid, cause or pod.status.start_time),
        causation_id=cause,
        correlation_id=f"{namespace}/{job}" if job else key,
    )
    return NODE_AGENT, output
