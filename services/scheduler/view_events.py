"""How each event type the scheduler's view reads changes it (pure): the fold, one handler per type.

The view (`view.py`) holds the objects and the assumptions; the handlers here read an event and set
the objects it changes through the view's setters, which keep the node table, the live objects and the
answers to assumptions in step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from contracts import payloads
from contracts.condition_payload import podgroup_condition
from contracts.objects import HyperNode, Node, Pod, PodGroup, PriorityClass, Queue
from contracts.payloads import ObjectPayload
from contracts.plans import PodGroupUpdate
from services.scheduler.core.live import FINISHED_POD_PHASES
from shared.evolve import evolve

if TYPE_CHECKING:
    from services.scheduler.view import SchedulerView
    from shared.runner_types import Event


def event_key(event: Event) -> str:
    """`namespace/name` for namespaced objects, `name` for cluster-scoped ones (namespace None or "")."""
    return f"{event.namespace}/{event.name}" if event.namespace else event.name


def event_object(event: Event, cls: type) -> Any:
    """The API object an object-carrying event holds (its kind was checked with its payload)."""
    obj = event.payload_as(ObjectPayload).decoded()
    if not isinstance(obj, cls):
        raise ValueError(f"{event.type} {event_key(event)}: payload holds a {obj.kind}, not a {cls.__name__}")
    return obj


def with_status(pg: PodGroup, update: PodGroupUpdate) -> PodGroup:
    status = evolve(
        pg.status,
        phase=update.phase,
        conditions=update.conditions,
        running=update.running,
        succeeded=update.succeeded,
        failed=update.failed,
    )
    return evolve(pg, status=status)


# --- event handlers ------------------------------------------------------------------------------------


def _node_registered(view: SchedulerView, event: Event) -> None:
    view.set_node(event_object(event, Node))


def _node_readiness(ready: bool) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        node = view.nodes.get(event.name)
        if node is not None and node.ready != ready:
            view.set_object("nodes", view.nodes, event.name, replace(node, ready=ready))
            view.node_rows.set_ready(event.name, ready)

    return handle


def _queue_applied(view: SchedulerView, event: Event) -> None:
    queue = event_object(event, Queue)
    current = view.queues.get(event.name)
    if current is not None:  # the spec changed; the status belongs to the queue-controller
        queue = replace(queue, status=current.status)
    view.set_object("queues", view.queues, event.name, queue)


def _queue_state_changed(view: SchedulerView, event: Event) -> None:
    queue = view.queues.get(event.name)
    if queue is not None:
        status = replace(queue.status, state=event.payload_as(payloads.QueueStateChanged).state)
        view.set_object("queues", view.queues, event.name, replace(queue, status=status))


def _applied(kind: str, cls: type) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        view.set_object(kind, getattr(view, kind), event.name, event_object(event, cls))

    return handle


def _deleted(kind: str) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        view.set_object(kind, getattr(view, kind), event.name, None)

    return handle


def _podgroup_created(view: SchedulerView, event: Event) -> None:
    view.set_podgroup(event_key(event), event_object(event, PodGroup), settles=True)


def _podgroup_status_changed(view: SchedulerView, event: Event) -> None:
    key = event_key(event)
    pg = view.logged_podgroups.get(key)
    if pg is None:
        return
    status = event.payload_as(payloads.PodGroupStatusChanged)
    update = PodGroupUpdate(
        phase=status.phase,
        conditions=tuple(podgroup_condition(c) for c in status.conditions),
        running=pg.status.running if status.running is None else status.running,
        succeeded=pg.status.succeeded if status.succeeded is None else status.succeeded,
        failed=pg.status.failed if status.failed is None else status.failed,
    )
    view.set_podgroup(key, with_status(pg, update), settles=True)


def _podgroup_deleted(view: SchedulerView, event: Event) -> None:
    view.set_podgroup(event_key(event), None, settles=True)


def _job_phase(view: SchedulerView, event: Event) -> None:
    """A Job's PodGroup has the Job's key: a final Job lets its finished PodGroup leave the snapshot."""
    view.shown.job_phase(event_key(event), event.payload_as(payloads.JobStatusChanged).phase)


def _job_gone(view: SchedulerView, event: Event) -> None:
    view.shown.job_phase(event_key(event), None)


def _plan_rejected(view: SchedulerView, event: Event) -> None:
    view.forget(event.payload_as(payloads.PlanRejected).plan)


def _pod_created(view: SchedulerView, event: Event) -> None:
    view.set_pod(event_key(event), view.pod_decoder.pod(event), settles=True)


def _pod_change(
    change: Callable[[Pod, Event], Pod], *, settles: bool = False
) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        key = event_key(event)
        pod = view.logged_pods.get(key)
        if pod is not None:
            view.set_pod(key, change(pod, event), settles=settles)

    return handle


def _bound(pod: Pod, event: Event) -> Pod:
    """Bound: its nomination (room reserved for it by a preemption) is used, or void elsewhere."""
    node = event.payload_as(payloads.PodBound).node
    if pod.status.nominated_node_name:
        pod = evolve(pod, status=evolve(pod.status, nominated_node_name=""))
    return pod if node == pod.spec.node_name else evolve(pod, spec=evolve(pod.spec, node_name=node))


def _nominated(pod: Pod, event: Event) -> Pod:
    """Room on a node is reserved for the pod (Kubernetes' nominatedNodeName); a bound pod keeps none."""
    node = event.payload_as(payloads.PodNominated).node
    if pod.spec.node_name or pod.status.nominated_node_name == node:
        return pod
    return evolve(pod, status=evolve(pod.status, nominated_node_name=node))


def _report(change: Callable[[Pod, Event], Pod]) -> Callable[[SchedulerView, Event], None]:
    """A report about a pod's run (PodRunning, PodSucceeded, PodFailed, PodLost) changes the pod only
    when it is about the pod's current run: it names the node the pod is bound to and the run has not
    ended. A late report about a run PodLost gave up, or about an earlier generation of the same pod name
    (created again unbound), changes nothing, as in the job-controller and the binder's ledger
    (docs/reliability.md, "A late report after PodLost")."""

    def handle(view: SchedulerView, event: Event) -> None:
        key = event_key(event)
        pod = view.logged_pods.get(key)
        if pod is not None and _about_current_run(pod, payloads.named_node(event.data)):
            view.set_pod(key, change(pod, event), settles=False)

    return handle


def _about_current_run(pod: Pod, node: str | None) -> bool:
    return bool(node) and node == pod.spec.node_name and pod.status.phase not in FINISHED_POD_PHASES


def _running(pod: Pod, event: Event) -> Pod:
    running = event.payload_as(payloads.PodRunning)
    started = running.started_at or event.time
    return evolve(pod, status=evolve(pod.status, phase="Running", start_time=started))


def _finished(phase: str) -> Callable[[Pod, Event], Pod]:
    def change(pod: Pod, event: Event) -> Pod:
        report = event.data
        assert isinstance(report, _FINISHED_REPORTS), f"{event.type} is not a pod's end"
        # a success carries no reason, a lost pod no exit code: the pod keeps the one it had
        exit_code = pod.status.exit_code if isinstance(report, payloads.PodLost) else report.exit_code
        reason = pod.status.reason if isinstance(report, payloads.PodSucceeded) else report.reason
        return evolve(pod, status=evolve(pod.status, phase=phase, exit_code=exit_code, reason=reason))

    return change


_FINISHED_REPORTS = (payloads.PodSucceeded, payloads.PodFailed, payloads.PodLost)


def _deleting(pod: Pod, event: Event) -> Pod:
    """Kubernetes' deletion timestamp: Volcano then sees the pod as Releasing."""
    if pod.meta.deletion_timestamp is not None:
        return pod
    return evolve(pod, meta=evolve(pod.meta, deletion_timestamp=event.time))


def _pod_terminated(view: SchedulerView, event: Event) -> None:
    """The pod's run stopped: gone, unless the report is about an earlier run on another node (the pod
    was created again since, and its new generation must stay)."""
    key = event_key(event)
    pod = view.logged_pods.get(key)
    if pod is not None and pod.spec.node_name != event.payload_as(payloads.PodTerminated).node:
        return
    view.set_pod(key, None, settles=True)


HANDLERS: Mapping[str, Callable[[SchedulerView, Event], None]] = {
    "NodeRegistered": _node_registered,
    "NodeReady": _node_readiness(True),
    "NodeNotReady": _node_readiness(False),
    "QueueApplied": _queue_applied,
    "QueueDeleted": _deleted("queues"),
    "QueueStateChanged": _queue_state_changed,
    "PriorityClassApplied": _applied("priority_classes", PriorityClass),
    "PriorityClassDeleted": _deleted("priority_classes"),
    "HyperNodeApplied": _applied("hypernodes", HyperNode),
    "HyperNodeDeleted": _deleted("hypernodes"),
    "PodGroupCreated": _podgroup_created,
    "PodGroupStatusChanged": _podgroup_status_changed,
    "PodGroupDeleted": _podgroup_deleted,
    "JobStatusChanged": _job_phase,
    # a new incarnation, or the job's PodGroup is about to go: it is not finished work any more
    "JobSubmitted": _job_gone,
    "JobDeleted": _job_gone,
    "JobCleanedUp": _job_gone,
    "PlanRejected": _plan_rejected,
    "PodCreated": _pod_created,
    "PodBound": _pod_change(_bound, settles=True),
    "PodRunning": _report(_running),
    "PodSucceeded": _report(_finished("Succeeded")),
    "PodFailed": _report(_finished("Failed")),
    # the node is gone, so are its pods' processes (Kubernetes' pod GC marks them Failed, NodeLost)
    "PodLost": _report(_finished("Failed")),
    "PodEvicting": _pod_change(_deleting, settles=True),
    "PodNominated": _pod_change(_nominated, settles=True),
    "PodDeletionRequested": _pod_change(_deleting),
    "PodTerminated": _pod_terminated,
}
# every event type the view folds: what a replica subscribes to
VIEW_EVENTS = frozenset(HANDLERS)
# The events after which any replica's session may place what it could not before: capacity or quota
# freed (a pod finishing, leaving or being released), nodes, queues and classes changing. New pending
# work (PodGroupCreated, PodCreated, a rejected plan) matters to its PodGroup's owner only (`new_work`).
# Neither are the answers to a replica's own plans (PodBound, PodGroupStatusChanged) nor a pod starting:
# a busy cluster sends thousands of those, and a session for each would only re-plan a settled cluster.
CAPACITY = VIEW_EVENTS - {
    "PodBound",
    "PodNominated",
    "PodRunning",
    "PodGroupStatusChanged",
    "PodGroupCreated",
    "PodCreated",
}
