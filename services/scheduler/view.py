"""The scheduler's view of the cluster: events folded into current objects, plus the placements this
replica has planned and not yet seen committed (pure).

Applying an event is O(1) and builds only the objects it touches; `snapshot()` returns tuples that are
cached per kind until that kind changes, so a snapshot of a large cluster costs a few tuple copies. The
node table's static columns are kept too (`NodeRows`: a node event rewrites one row) and every snapshot
carries them, so no session converts Node objects. Finished work (pods and PodGroups of finished gangs,
see `core/live.py`) stays readable here but leaves the snapshot.

Assumptions: after publishing a plan the replica calls `assume(plan)`, and its pods show as bound (or,
for evictions, as releasing) and its PodGroups with the planned status until the log answers: `PodBound`,
`PodEvicting` or `PodGroupStatusChanged` settle them one by one, `PlanRejected` forgets the whole plan.
Without this the next session would place the same pods again and over-commit nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from contracts import payloads
from contracts.objects import (
    HyperNode,
    Node,
    ObjectMeta,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
)
from contracts.payloads import ObjectPayload, podgroup_condition
from services.scheduler.core.framework.plan import PodGroupUpdate
from services.scheduler.core.live import FINISHED_POD_PHASES, LiveObjects
from services.scheduler.core.model.node_base import NodeRows
from services.scheduler.core.snapshot import DEFAULT_QUEUE, ClusterSnapshot, podgroup_key
from services.scheduler.plans import PlanMessage

if TYPE_CHECKING:
    from shared.runner_types import Event

# Volcano always has a `default` queue; the log has one only once someone applies it.
_DEFAULT_QUEUE = Queue(
    meta=ObjectMeta(name=DEFAULT_QUEUE, namespace="", uid=DEFAULT_QUEUE, creation_timestamp=-1.0)
)
_POD = "pod"
_GROUP = "podgroup"


def event_key(event: Event) -> str:
    """`namespace/name` for namespaced objects, `name` for cluster-scoped ones (namespace None or "")."""
    return f"{event.namespace}/{event.name}" if event.namespace else event.name


def event_object(event: Event, cls: type) -> Any:
    """The API object an object-carrying event holds (its kind was checked with its payload)."""
    obj = event.payload_as(ObjectPayload).decoded()
    if not isinstance(obj, cls):
        raise ValueError(f"{event.type} {event_key(event)}: payload holds a {obj.kind}, not a {cls.__name__}")
    return obj


class SchedulerView:
    __slots__ = (
        "_cache",
        "_group_assumed",
        "_node_rows",
        "_plans",
        "_pod_assumed",
        "_podgroups",
        "_pods",
        "_shown",
        "capacity",
        "hypernodes",
        "new_work",
        "nodes",
        "priority_classes",
        "queues",
        "seq",
        "time",
    )

    def __init__(self) -> None:
        self.seq = 0
        self.time = 0.0  # time of the last applied event: the deletion time given to assumed evictions
        self.nodes: dict[str, Node] = {}
        self._node_rows = NodeRows()  # the nodes' table columns, in the order of `nodes`
        self.queues: dict[str, Queue] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.hypernodes: dict[str, HyperNode] = {}
        # pods and PodGroups as the log says, and as sessions see them (with assumptions applied)
        self._pods: dict[str, Pod] = {}
        self._podgroups: dict[str, PodGroup] = {}
        self._shown = LiveObjects()
        # pod key -> (plan id, node to bind to, or None for an eviction)
        self._pod_assumed: dict[str, tuple[str, str | None]] = {}
        self._group_assumed: dict[str, tuple[str, PodGroupUpdate]] = {}
        # plan id -> the (kind, key) pairs still waiting for the log
        self._plans: dict[str, set[tuple[str, str]]] = {}
        self._cache: dict[str, tuple[Any, ...]] = {}
        # what may let a session place something it could not before: PodGroups with new pending work
        # (NEW_WORK; a replica acts on its own promptly) and changes of capacity or rules for everyone
        # (CAPACITY events, counted)
        self.new_work: set[str] = set()
        self.capacity = 0

    # --- reading -------------------------------------------------------------------------------------
    def snapshot(self, seq: int | None = None) -> ClusterSnapshot:
        """The session input at `seq` (default: the last applied event's)."""
        queues = self._cached("queues", self.queues)
        if DEFAULT_QUEUE not in self.queues:
            queues = (_DEFAULT_QUEUE, *queues)
        return ClusterSnapshot(
            nodes=self._cached("nodes", self.nodes),
            pods=self._shown.live_pods(),
            podgroups=self._shown.live_podgroups(),
            queues=queues,
            priority_classes=self._cached("priority_classes", self.priority_classes),
            hypernodes=self._cached("hypernodes", self.hypernodes),
            sequence=self.seq if seq is None else seq,
            node_base=self._node_rows.base(),
            task_facts=self._shown.live_facts(),
        )

    def _cached(self, kind: str, objects: Mapping[str, Any]) -> tuple[Any, ...]:
        cached = self._cache.get(kind)
        if cached is None:
            cached = self._cache[kind] = tuple(objects.values())
        return cached

    def pod(self, key: str) -> Pod | None:
        """A pod as sessions see it (finished ones included)."""
        return self._shown.pods.get(key)

    def podgroup(self, key: str) -> PodGroup | None:
        return self._shown.podgroups.get(key)

    def counts(self) -> dict[str, int]:
        """What the view holds: nodes (Ready ones apart), pods and PodGroups (live ones apart)."""
        return {
            "nodes": len(self.nodes),
            "nodes_ready": self._node_rows.ready_count,
            **self._shown.counts(),
        }

    def waiting_groups(self) -> set[str]:
        """Live PodGroups a session may act for even if nothing changes: pods waiting for a node, or the
        group waiting to be enqueued."""
        return self._shown.waiting_groups()

    def take_touched(self) -> set[str]:
        """PodGroups whose pods changed (as sessions see them) since the last call."""
        touched, self._shown.touched = self._shown.touched, set()
        return touched

    def final_jobs(self) -> frozenset[str]:
        return self._shown.final_jobs()

    def restore_final_jobs(self, keys: Iterable[str]) -> None:
        """After loading a checkpoint: the Jobs it recorded as final (no event says so again)."""
        self._shown.restore_final_jobs(keys)

    def assumed_plans(self) -> tuple[str, ...]:
        return tuple(self._plans)

    # --- folding -------------------------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        self.seq = max(self.seq, event.seq)
        self.time = event.time
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event)
            if event.type in CAPACITY:
                self.capacity += 1
            elif event.type == "PodGroupCreated":
                self.new_work.add(event_key(event))
            elif event.type == "PodCreated":
                pod = self._pods.get(event_key(event))
                if pod is not None:
                    self.new_work.add(podgroup_key(pod))

    def _set(self, kind: str, objects: dict[str, Any], key: str, obj: Any | None) -> None:
        _put(objects, key, obj)
        self._cache.pop(kind, None)

    def _set_node(self, node: Node) -> None:
        self._set("nodes", self.nodes, node.meta.name, node)
        self._node_rows.put(node)

    def _set_pod(self, key: str, pod: Pod | None, *, settles: bool) -> None:
        """Record the log's pod; `settles`: this event answers an assumption about it."""
        _put(self._pods, key, pod)
        if settles:
            self._settle(_POD, key)
        self._show_pod(key)

    def _set_podgroup(self, key: str, pg: PodGroup | None, *, settles: bool) -> None:
        _put(self._podgroups, key, pg)
        if settles:
            self._settle(_GROUP, key)
        self._show_podgroup(key)

    def _show_pod(self, key: str) -> None:
        pod = self._pods.get(key)
        assumed = self._pod_assumed.get(key)
        if pod is not None and assumed is not None:
            node = assumed[1]
            if node is None:
                pod = replace(pod, meta=replace(pod.meta, deletion_timestamp=self.time))
            else:
                pod = replace(pod, spec=replace(pod.spec, node_name=node))
        self._shown.put_pod(key, pod)

    def _show_podgroup(self, key: str) -> None:
        pg = self._podgroups.get(key)
        assumed = self._group_assumed.get(key)
        if pg is not None and assumed is not None:
            pg = _with_status(pg, assumed[1])
        self._shown.put_podgroup(key, pg)

    def _settle(self, kind: str, key: str) -> None:
        assumed = (self._pod_assumed if kind == _POD else self._group_assumed).pop(key, None)
        if assumed is None:
            return
        waiting = self._plans.get(assumed[0])
        if waiting is not None:
            waiting.discard((kind, key))
            if not waiting:
                del self._plans[assumed[0]]

    # --- assumptions ---------------------------------------------------------------------------------
    def assume(self, plan: PlanMessage) -> None:
        """Show the plan's placements, evictions and statuses until the log answers for them."""
        waiting: set[tuple[str, str]] = set()
        changes: list[tuple[str, str, Any]] = [(_POD, b.task, b.node) for b in plan.binds]
        changes += [(_POD, e.task, None) for e in plan.evictions]
        changes += [(_GROUP, key, update) for key, update in plan.podgroups.items()]
        for kind, key, value in changes:
            known = self._pods if kind == _POD else self._podgroups
            if key not in known:
                continue
            self._settle(kind, key)  # a newer plan supersedes an older assumption about the same object
            if kind == _POD:
                self._pod_assumed[key] = (plan.plan_id, value)
                self._show_pod(key)
            else:
                self._group_assumed[key] = (plan.plan_id, value)
                self._show_podgroup(key)
            waiting.add((kind, key))
        if waiting:
            self._plans[plan.plan_id] = waiting

    def forget(self, plan_id: str) -> None:
        """Drop a plan's assumptions (it was rejected): its objects show as the log says again."""
        for kind, key in self._plans.pop(plan_id, ()):
            self.new_work.add(podgroup_key(self._pods[key]) if kind == _POD and key in self._pods else key)
            if kind == _POD:
                del self._pod_assumed[key]
                self._show_pod(key)
            else:
                del self._group_assumed[key]
                self._show_podgroup(key)


def _put(objects: dict[str, Any], key: str, obj: Any | None) -> None:
    if obj is None:
        objects.pop(key, None)
    else:
        objects[key] = obj


def _with_status(pg: PodGroup, update: PodGroupUpdate) -> PodGroup:
    status = replace(
        pg.status,
        phase=update.phase,
        conditions=update.conditions,
        running=update.running,
        succeeded=update.succeeded,
        failed=update.failed,
    )
    return replace(pg, status=status)


# --- event handlers ------------------------------------------------------------------------------------


def _node_registered(view: SchedulerView, event: Event) -> None:
    view._set_node(event_object(event, Node))


def _node_readiness(ready: bool) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        node = view.nodes.get(event.name)
        if node is not None and node.ready != ready:
            view._set("nodes", view.nodes, event.name, replace(node, ready=ready))
            view._node_rows.set_ready(event.name, ready)

    return handle


def _queue_applied(view: SchedulerView, event: Event) -> None:
    queue = event_object(event, Queue)
    current = view.queues.get(event.name)
    if current is not None:  # the spec changed; the status belongs to the queue-controller
        queue = replace(queue, status=current.status)
    view._set("queues", view.queues, event.name, queue)


def _queue_state_changed(view: SchedulerView, event: Event) -> None:
    queue = view.queues.get(event.name)
    if queue is not None:
        status = replace(queue.status, state=event.payload_as(payloads.QueueStateChanged).state)
        view._set("queues", view.queues, event.name, replace(queue, status=status))


def _applied(kind: str, cls: type) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        view._set(kind, getattr(view, kind), event.name, event_object(event, cls))

    return handle


def _deleted(kind: str) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        view._set(kind, getattr(view, kind), event.name, None)

    return handle


def _podgroup_created(view: SchedulerView, event: Event) -> None:
    view._set_podgroup(event_key(event), event_object(event, PodGroup), settles=True)


def _podgroup_status_changed(view: SchedulerView, event: Event) -> None:
    key = event_key(event)
    pg = view._podgroups.get(key)
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
    view._set_podgroup(key, _with_status(pg, update), settles=True)


def _podgroup_deleted(view: SchedulerView, event: Event) -> None:
    view._set_podgroup(event_key(event), None, settles=True)


def _job_phase(view: SchedulerView, event: Event) -> None:
    """A Job's PodGroup has the Job's key: a final Job lets its finished PodGroup leave the snapshot."""
    view._shown.job_phase(event_key(event), event.payload_as(payloads.JobStatusChanged).phase)


def _job_gone(view: SchedulerView, event: Event) -> None:
    view._shown.job_phase(event_key(event), None)


def _plan_rejected(view: SchedulerView, event: Event) -> None:
    view.forget(event.payload_as(payloads.PlanRejected).plan)


def _pod_created(view: SchedulerView, event: Event) -> None:
    view._set_pod(event_key(event), event_object(event, Pod), settles=True)


def _pod_change(
    change: Callable[[Pod, Event], Pod], *, settles: bool = False
) -> Callable[[SchedulerView, Event], None]:
    def handle(view: SchedulerView, event: Event) -> None:
        key = event_key(event)
        pod = view._pods.get(key)
        if pod is not None:
            view._set_pod(key, change(pod, event), settles=settles)

    return handle


def _bound(pod: Pod, event: Event) -> Pod:
    node = event.payload_as(payloads.PodBound).node
    return pod if node == pod.spec.node_name else replace(pod, spec=replace(pod.spec, node_name=node))


def _report(change: Callable[[Pod, Event], Pod]) -> Callable[[SchedulerView, Event], None]:
    """A report about a pod's run (PodRunning, PodSucceeded, PodFailed, PodLost) changes the pod only
    when it is about the pod's current run: it names the node the pod is bound to and the run has not
    ended. A late report about a run PodLost gave up, or about an earlier generation of the same pod name
    (created again unbound), changes nothing, as in the job-controller and the binder's ledger
    (docs/reliability.md, "A late report after PodLost")."""

    def handle(view: SchedulerView, event: Event) -> None:
        key = event_key(event)
        pod = view._pods.get(key)
        if pod is not None and _about_current_run(pod, payloads.named_node(event.data)):
            view._set_pod(key, change(pod, event), settles=False)

    return handle


def _about_current_run(pod: Pod, node: str | None) -> bool:
    return bool(node) and node == pod.spec.node_name and pod.status.phase not in FINISHED_POD_PHASES


def _running(pod: Pod, event: Event) -> Pod:
    running = event.payload_as(payloads.PodRunning)
    started = running.started_at or event.time
    return replace(pod, status=replace(pod.status, phase="Running", start_time=started))


def _finished(phase: str) -> Callable[[Pod, Event], Pod]:
    def change(pod: Pod, event: Event) -> Pod:
        report = event.data
        assert isinstance(report, _FINISHED_REPORTS), f"{event.type} is not a pod's end"
        # a success carries no reason, a lost pod no exit code: the pod keeps the one it had
        exit_code = pod.status.exit_code if isinstance(report, payloads.PodLost) else report.exit_code
        reason = pod.status.reason if isinstance(report, payloads.PodSucceeded) else report.reason
        return replace(pod, status=replace(pod.status, phase=phase, exit_code=exit_code, reason=reason))

    return change


_FINISHED_REPORTS = (payloads.PodSucceeded, payloads.PodFailed, payloads.PodLost)


def _deleting(pod: Pod, event: Event) -> Pod:
    """Kubernetes' deletion timestamp: Volcano then sees the pod as Releasing."""
    if pod.meta.deletion_timestamp is not None:
        return pod
    return replace(pod, meta=replace(pod.meta, deletion_timestamp=event.time))


def _pod_terminated(view: SchedulerView, event: Event) -> None:
    """The pod's run stopped: gone, unless the report is about an earlier run on another node (the pod
    was created again since, and its new generation must stay)."""
    key = event_key(event)
    pod = view._pods.get(key)
    if pod is not None and pod.spec.node_name != event.payload_as(payloads.PodTerminated).node:
        return
    view._set_pod(key, None, settles=True)


_HANDLERS: Mapping[str, Callable[[SchedulerView, Event], None]] = {
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
    "PodDeletionRequested": _pod_change(_deleting),
    "PodTerminated": _pod_terminated,
}
# every event type the view folds: what a replica subscribes to
VIEW_EVENTS = frozenset(_HANDLERS)
# The events after which any replica's session may place what it could not before: capacity or quota
# freed (a pod finishing, leaving or being released), nodes, queues and classes changing. New pending
# work (PodGroupCreated, PodCreated, a rejected plan) matters to its PodGroup's owner only (`new_work`).
# Neither are the answers to a replica's own plans (PodBound, PodGroupStatusChanged) nor a pod starting:
# a busy cluster sends thousands of those, and a session for each would only re-plan a settled cluster.
CAPACITY = VIEW_EVENTS - {"PodBound", "PodRunning", "PodGroupStatusChanged", "PodGroupCreated", "PodCreated"}
