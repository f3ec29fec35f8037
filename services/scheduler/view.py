"""The scheduler's view of the cluster: events folded into current objects, plus the placements this
replica has planned and not yet seen committed (pure).

Applying an event is O(1) and builds only the objects it touches; `snapshot()` returns tuples that are
cached per kind until that kind changes, so a snapshot of a large cluster costs a few tuple copies. The
node table's static columns are kept too (`NodeRows`: a node event rewrites one row) and every snapshot
carries them, so no session converts Node objects. Finished work (pods and PodGroups of finished gangs,
see `core/live.py`) stays readable here but leaves the snapshot.

Assumptions: after publishing a plan the replica calls `assume(plan)`, and its pods show as bound (or,
for evictions, as releasing; for reservations, as nominated to their node) and its PodGroups with the
planned status until the log answers: `PodBound`, `PodEvicting`, `PodNominated` or
`PodGroupStatusChanged` settle them one by one, `PlanRejected` forgets the whole plan.
Without this the next session would place the same pods again and over-commit nodes.

How each event type changes the view is in `view_events.py` (the fold); this module holds the objects,
their setters and the assumptions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from contracts.job_shape import DEFAULT_QUEUE
from contracts.objects import (
    HyperNode,
    Node,
    ObjectMeta,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
)
from contracts.plans import PlanMessage, PodGroupUpdate
from services.scheduler.core.live import LiveObjects
from services.scheduler.core.model.node_base import NodeRows
from services.scheduler.core.snapshot import ClusterSnapshot, podgroup_key
from services.scheduler.view_events import (
    CAPACITY,
    HANDLERS,
    event_key,
    with_status,
)
from shared.evolve import evolve
from shared.pod_decode import PodDecoder

if TYPE_CHECKING:
    from shared.runner_types import Event

# Volcano always has a `default` queue; the log has one only once someone applies it.
_DEFAULT_QUEUE = Queue(
    meta=ObjectMeta(name=DEFAULT_QUEUE, namespace="", uid=DEFAULT_QUEUE, creation_timestamp=-1.0)
)
_POD = "pod"
_GROUP = "podgroup"
# what a plan does to a pod
_BIND, _EVICT, _NOMINATE = "bind", "evict", "nominate"
WATCHED, BOUND = "Watched", "Bound"  # Volcano's names of the task scheduling stages


class SchedulerView:
    __slots__ = (
        "_cache",
        "_group_assumed",
        "_plans",
        "_pod_assumed",
        "capacity",
        "hypernodes",
        "logged_podgroups",
        "logged_pods",
        "new_work",
        "node_rows",
        "nodes",
        "pod_decoder",
        "priority_classes",
        "queues",
        "seen",
        "seq",
        "shown",
        "time",
        "watching",
    )

    def __init__(self) -> None:
        self.seq = 0
        self.time = 0.0  # time of the last applied event: the deletion time given to assumed evictions
        self.nodes: dict[str, Node] = {}
        self.node_rows = NodeRows()  # the nodes' table columns, in the order of `nodes`
        self.queues: dict[str, Queue] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.hypernodes: dict[str, HyperNode] = {}
        # pods and PodGroups as the log says, and as sessions see them (with assumptions applied)
        self.logged_pods: dict[str, Pod] = {}
        self.logged_podgroups: dict[str, PodGroup] = {}
        self.shown = LiveObjects()
        self.pod_decoder = PodDecoder()  # the pods PodCreated carries, specs shared (shared/pod_decode.py)
        # pod key -> (plan id, what the plan does to it: bind, evict or nominate, and the node)
        self._pod_assumed: dict[str, tuple[str, tuple[str, str]]] = {}
        self._group_assumed: dict[str, tuple[str, PodGroupUpdate]] = {}
        # plan id -> the (kind, key) pairs still waiting for the log
        self._plans: dict[str, set[tuple[str, str]]] = {}
        self._cache: dict[str, tuple[Any, ...]] = {}
        # what may let a session place something it could not before: PodGroups with new pending work
        # (NEW_WORK; a replica acts on its own promptly) and changes of capacity or rules for everyone
        # (CAPACITY events, counted)
        self.new_work: set[str] = set()
        self.capacity = 0
        # While `watching` (live events, not replay): pods created and bound, as (stage, PodGroup key,
        # pod creation time), for the replica to time them (Volcano's task scheduling latency).
        self.watching = False
        self.seen: list[tuple[str, str, float]] = []

    # --- reading -------------------------------------------------------------------------------------
    def all_queues(self) -> tuple[Queue, ...]:
        """Every queue, and `default` even before anyone applied it (as in Volcano)."""
        queues = self._cached("queues", self.queues)
        return queues if DEFAULT_QUEUE in self.queues else (_DEFAULT_QUEUE, *queues)

    def snapshot(self, seq: int | None = None) -> ClusterSnapshot:
        """The session input at `seq` (default: the last applied event's)."""
        return ClusterSnapshot(
            nodes=self._cached("nodes", self.nodes),
            pods=self.shown.live_pods(),
            podgroups=self.shown.live_podgroups(),
            queues=self.all_queues(),
            priority_classes=self._cached("priority_classes", self.priority_classes),
            hypernodes=self._cached("hypernodes", self.hypernodes),
            sequence=self.seq if seq is None else seq,
            node_base=self.node_rows.base(),
            task_facts=self.shown.live_facts(),
        )

    def _cached(self, kind: str, objects: Mapping[str, Any]) -> tuple[Any, ...]:
        cached = self._cache.get(kind)
        if cached is None:
            cached = self._cache[kind] = tuple(objects.values())
        return cached

    def pod(self, key: str) -> Pod | None:
        """A pod as sessions see it (finished ones included)."""
        return self.shown.pods.get(key)

    def podgroup(self, key: str) -> PodGroup | None:
        return self.shown.podgroups.get(key)

    def counts(self) -> dict[str, int]:
        """What the view holds: nodes (Ready ones apart), pods and PodGroups (live ones apart)."""
        return {
            "nodes": len(self.nodes),
            "nodes_ready": self.node_rows.ready_count,
            **self.shown.counts(),
        }

    def waiting_groups(self) -> set[str]:
        """Live PodGroups a session may act for even if nothing changes: pods waiting for a node, or the
        group waiting to be enqueued."""
        return self.shown.waiting_groups()

    def take_touched(self) -> set[str]:
        """PodGroups whose pods changed (as sessions see them) since the last call."""
        touched, self.shown.touched = self.shown.touched, set()
        return touched

    def final_jobs(self) -> frozenset[str]:
        return self.shown.final_jobs()

    def restore_final_jobs(self, keys: Iterable[str]) -> None:
        """After loading a checkpoint: the Jobs it recorded as final (no event says so again)."""
        self.shown.restore_final_jobs(keys)

    def assumed_plans(self) -> tuple[str, ...]:
        return tuple(self._plans)

    # --- folding -------------------------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        self.seq = max(self.seq, event.seq)
        self.time = event.time
        handler = HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event)
            if event.type in CAPACITY:
                self.capacity += 1
            elif event.type == "PodGroupCreated":
                self.new_work.add(event_key(event))
            elif event.type == "PodCreated":
                key = event_key(event)
                group = self.shown.group_of(key)
                if group is not None:
                    self.new_work.add(group)
                    if self.watching:
                        self.seen.append((WATCHED, group, self.logged_pods[key].meta.creation_timestamp))
            elif event.type == "PodBound" and self.watching:
                key = event_key(event)
                group = self.shown.group_of(key)
                if group is not None:
                    self.seen.append((BOUND, group, self.logged_pods[key].meta.creation_timestamp))

    def take_seen(self) -> list[tuple[str, str, float]]:
        """The pods created and bound since the last call (see `seen`)."""
        seen, self.seen = self.seen, []
        return seen

    def set_object(self, kind: str, objects: dict[str, Any], key: str, obj: Any | None) -> None:
        _put(objects, key, obj)
        self._cache.pop(kind, None)

    def set_node(self, node: Node) -> None:
        self.set_object("nodes", self.nodes, node.meta.name, node)
        self.node_rows.put(node)

    def set_pod(self, key: str, pod: Pod | None, *, settles: bool) -> None:
        """Record the log's pod; `settles`: this event answers an assumption about it."""
        _put(self.logged_pods, key, pod)
        if settles:
            self._settle(_POD, key)
        self._show_pod(key)

    def set_podgroup(self, key: str, pg: PodGroup | None, *, settles: bool) -> None:
        _put(self.logged_podgroups, key, pg)
        if settles:
            self._settle(_GROUP, key)
        self._show_podgroup(key)

    def _show_pod(self, key: str) -> None:
        pod = self.logged_pods.get(key)
        assumed = self._pod_assumed.get(key)
        if pod is not None and assumed is not None:
            change, node = assumed[1]
            if change == _EVICT:
                pod = evolve(pod, meta=evolve(pod.meta, deletion_timestamp=self.time))
            elif change == _NOMINATE:
                pod = evolve(pod, status=evolve(pod.status, nominated_node_name=node))
            else:
                pod = evolve(pod, spec=evolve(pod.spec, node_name=node))
        self.shown.put_pod(key, pod)

    def _show_podgroup(self, key: str) -> None:
        pg = self.logged_podgroups.get(key)
        assumed = self._group_assumed.get(key)
        if pg is not None and assumed is not None:
            pg = with_status(pg, assumed[1])
        self.shown.put_podgroup(key, pg)

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
        changes: list[tuple[str, str, Any]] = [(_POD, b.task, (_BIND, b.node)) for b in plan.binds]
        changes += [(_POD, e.task, (_EVICT, e.node)) for e in plan.evictions]
        changes += [(_POD, r.task, (_NOMINATE, r.node)) for r in plan.reservations]
        changes += [(_GROUP, key, update) for key, update in plan.podgroups.items()]
        for kind, key, value in changes:
            known = self.logged_pods if kind == _POD else self.logged_podgroups
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
            pod = self.logged_pods.get(key) if kind == _POD else None
            self.new_work.add(podgroup_key(pod) if pod is not None else key)
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
