"""A scheduler replica's state as a Core for the event-sourced loop: the view, plus the trace each PodGroup
belongs to (pure).

The loop folds every event into the view; reconcile asks for nothing, because a replica never writes
events (it sends plans, from its own scheduling task). The checkpoint holds the objects as the log says,
without this replica's assumptions: those belong to plans of a process that may be gone, and a plan
that is still on its way settles or is rejected like any other, assumed or not.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgpack

from contracts.codec import decode_object, encode_object
from contracts.job_shape import GROUP_NAME
from services.scheduler.core.snapshot import podgroup_key
from services.scheduler.view import SchedulerView
from services.scheduler.view_events import VIEW_EVENTS, event_key
from shared.runner_types import Event, Key, Output

# The events that start a job's trace in this replica's eyes (the job-controller writes them in the
# job's trace); a plan for the PodGroup is traced as a child of the latest one.
_TRACED = frozenset({"PodGroupCreated", "PodCreated"})
# The view's own handlers recreate each object from the event that creates it.
_CREATING = {
    "Node": "NodeRegistered",
    "Queue": "QueueApplied",
    "PriorityClass": "PriorityClassApplied",
    "HyperNode": "HyperNodeApplied",
    "PodGroup": "PodGroupCreated",
    "Pod": "PodCreated",
}


class ReplicaView(SchedulerView):
    """The view with a checkpoint form."""

    __slots__ = ()

    def logged_objects(self) -> Iterator[Any]:
        """Every object as the log says (assumptions left out)."""
        yield from self.nodes.values()
        yield from self.queues.values()
        yield from self.priority_classes.values()
        yield from self.hypernodes.values()
        yield from self.logged_podgroups.values()
        yield from self.logged_pods.values()


@dataclass(slots=True)
class SchedulerState:
    view: ReplicaView = field(default_factory=ReplicaView)
    traces: dict[str, str] = field(default_factory=dict)  # podgroup key -> traceparent


@dataclass(frozen=True, slots=True)
class ViewCore:
    name: str  # the replica id: each replica has its own checkpoint
    reads: frozenset[str] = VIEW_EVENTS
    # the loop need not note which event caused which output (the event's trace, per event): a replica
    # writes no events, it sends plans from its scheduling task with the PodGroups' traces (`traces`)
    writes_events: ClassVar[bool] = False

    def initial(self) -> SchedulerState:
        return SchedulerState()

    def apply(self, state: SchedulerState, event: Event) -> SchedulerState:
        if event.type == "PodTerminated":  # a plain pod's implicit group ends with it
            pod = state.view.pod(event_key(event))
            if pod is not None and GROUP_NAME not in pod.meta.annotations:
                state.traces.pop(podgroup_key(pod), None)
        state.view.apply(event)
        if event.type in _TRACED and event.traceparent:
            key = event_key(event)
            traced: str | None = key
            if event.type == "PodCreated":  # the view has just decoded the pod: read it, not the payload
                traced = state.view.shown.group_of(key)
            if traced is not None:
                state.traces[traced] = event.traceparent
        elif event.type == "PodGroupDeleted":
            state.traces.pop(event_key(event), None)
        return state

    def touched(self, state: SchedulerState, event: Event) -> tuple[()]:
        return ()  # a replica writes no events: it answers the view's changes with sessions

    def due(self, state: SchedulerState, now: float) -> tuple[()]:
        return ()

    def reconcile(
        self, state: SchedulerState, now: float, keys: Collection[Key] | None = None
    ) -> list[Output]:
        return []

    def dump(self, state: SchedulerState) -> bytes:
        view = state.view
        data = {
            "seq": view.seq,
            "time": view.time,
            "objects": [encode_object(obj) for obj in view.logged_objects()],
            "final_jobs": sorted(view.final_jobs()),
            "traces": state.traces,
        }
        return msgpack.packb(data, use_bin_type=True)

    def load(self, data: bytes) -> SchedulerState:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False)
        view = ReplicaView()
        for plain in raw["objects"]:
            obj = decode_object(plain)
            meta = obj.meta
            view.apply(
                Event(
                    seq=raw["seq"],
                    type=_CREATING[obj.kind],
                    kind=obj.kind.lower(),
                    namespace=meta.namespace or None,
                    name=meta.name,
                    payload={"object": plain},
                    id="",
                    time=raw["time"],
                    correlation_id=meta.key,
                )
            )
        view.restore_final_jobs(raw["final_jobs"])
        view.seq, view.time = raw["seq"], raw["time"]
        return SchedulerState(view, dict(raw["traces"]))
