"""Plain Pods and PodGroups as part of the job-controller (Volcano's podgroup controller): users submit
them without a Job (admission's PodSubmitted and PodGroupSubmitted), and the job-controller creates them
on the log as it creates a Job's, so the scheduler, binder, node agents and queue-controller see one kind
of pod and PodGroup whoever asked for it.

`PlainCore` folds (fold.py), reconciles (reconcile.py), renders the read-model objects and checkpoints
the state as plain data. The job-controller's service runs it beside the Jobs' core (controller.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from contracts import codec
from contracts.objects import ApiObject, Pod, PodGroup, PodGroupCondition, PodGroupStatus, PodStatus
from services.job_controller.core.plain import fold, reconcile
from services.job_controller.core.plain.state import PlainGroup, PlainPod, PlainState, put_pod
from shared.projected_core import ObjectKey
from shared.runner_types import Event, Output


class PlainCore:
    def initial(self) -> PlainState:
        return PlainState()

    def apply(self, state: PlainState, event: Event) -> list[ObjectKey]:
        """Fold one event; returns the read-model objects it may have changed."""
        return fold.apply(state, event)

    def reconcile(self, state: PlainState, keys: Iterable[ObjectKey] | None = None) -> list[Output]:
        return reconcile.reconcile(state, keys)

    def render(self, state: PlainState, key: ObjectKey) -> ApiObject | None:
        kind, namespace, name = key
        full = f"{namespace}/{name}"
        if kind == "pod":
            record = state.pods.get(full)
            return None if record is None else pod_object(record)
        if kind == "podgroup":
            group = state.groups.get(full)
            return None if group is None else podgroup_object(state, group)
        return None

    def keys(self, state: PlainState) -> Iterator[ObjectKey]:
        for key, record in state.pods.items():
            if pod_object(record) is not None:
                namespace, _, name = key.partition("/")
                yield ("pod", namespace, name)
        for key, group in state.groups.items():
            if group.exists:
                namespace, _, name = key.partition("/")
                yield ("podgroup", namespace, name)

    def dump(self, state: PlainState) -> dict[str, Any]:
        return {
            "pods": [_pod_to_plain(r) for r in state.pods.values()],
            "groups": [_group_to_plain(g) for g in state.groups.values()],
        }

    def load(self, data: dict[str, Any]) -> PlainState:
        state = PlainState()
        for item in data["pods"]:
            put_pod(state, _pod_from_plain(item))
        for item in data["groups"]:
            group = _group_from_plain(item)
            state.groups[group.key] = group
        return state


# --- read-model objects ----------------------------------------------------------------------------


def pod_object(record: PlainPod) -> Pod | None:
    """The pod as submitted, with what became of it; shown until it is withdrawn and gone."""
    if record.withdrawn is not None and (not record.created or record.gone):
        return None
    stopping = record.evicting or record.deletion_node is not None or record.withdrawn is not None
    pod = record.pod
    return replace(
        pod,
        meta=replace(pod.meta, deletion_timestamp=record.deletion_time if stopping else None),
        spec=replace(pod.spec, node_name=record.node),
        status=replace(record.details, phase=record.phase),
    )


def podgroup_object(state: PlainState, group: PlainGroup) -> PodGroup | None:
    """The PodGroup while it exists, its phase and conditions from the log, its counts from its pods."""
    if not group.exists:
        return None
    phases = [state.pods[k].phase for k in state.members.get(group.key, ()) if state.pods[k].created]
    status = PodGroupStatus(
        phase=group.phase,
        conditions=group.conditions,
        running=phases.count("Running"),
        succeeded=phases.count("Succeeded"),
        failed=phases.count("Failed"),
    )
    return replace(group.podgroup, status=status)


# --- plain data ------------------------------------------------------------------------------------


def _pod_to_plain(r: PlainPod) -> dict[str, Any]:
    successor = r.successor
    return {
        "pod": codec.encode(r.pod),
        "cause": list(r.cause),
        "created": r.created,
        "node": r.node,
        "phase": r.phase,
        "evicting": r.evicting,
        "deletion_node": r.deletion_node,
        "deletion_time": r.deletion_time,
        "ended": r.ended,
        "done_cause": None if r.done_cause is None else list(r.done_cause),
        "details": codec.encode(r.details),
        "withdrawn": None if r.withdrawn is None else list(r.withdrawn),
        "successor": None
        if successor is None
        else [
            codec.encode(successor[0]),
            None if successor[1] is None else codec.encode(successor[1]),
            list(successor[2]),
        ],
    }


def _pod_from_plain(d: dict[str, Any]) -> PlainPod:
    successor = d["successor"]
    return PlainPod(
        pod=codec.decode(Pod, d["pod"]),
        cause=_cause(d["cause"]),
        created=d["created"],
        node=d["node"],
        phase=d["phase"],
        evicting=d["evicting"],
        deletion_node=d["deletion_node"],
        deletion_time=d["deletion_time"],
        ended=d["ended"],
        done_cause=None if d["done_cause"] is None else _cause(d["done_cause"]),
        details=codec.decode(PodStatus, d["details"]),
        withdrawn=None if d["withdrawn"] is None else _cause(d["withdrawn"]),
        successor=None
        if successor is None
        else (
            codec.decode(Pod, successor[0]),
            None if successor[1] is None else codec.decode(PodGroup, successor[1]),
            _cause(successor[2]),
        ),
    )


def _group_to_plain(g: PlainGroup) -> dict[str, Any]:
    return {
        "podgroup": codec.encode(g.podgroup),
        "cause": list(g.cause),
        "owner": g.owner,
        "created": g.created,
        "deleted": g.deleted,
        "phase": g.phase,
        "conditions": [codec.encode(c) for c in g.conditions],
        "withdrawn": None if g.withdrawn is None else list(g.withdrawn),
        "successor": None if g.successor is None else [codec.encode(g.successor[0]), list(g.successor[1])],
    }


def _group_from_plain(d: dict[str, Any]) -> PlainGroup:
    successor = d["successor"]
    return PlainGroup(
        podgroup=codec.decode(PodGroup, d["podgroup"]),
        cause=_cause(d["cause"]),
        owner=d["owner"],
        created=d["created"],
        deleted=d["deleted"],
        phase=d["phase"],
        conditions=tuple(codec.decode(PodGroupCondition, c) for c in d["conditions"]),
        withdrawn=None if d["withdrawn"] is None else _cause(d["withdrawn"]),
        successor=None if successor is None else (codec.decode(PodGroup, successor[0]), _cause(successor[1])),
    )


def _cause(value: list[Any]) -> tuple[int, str]:
    return (int(value[0]), str(value[1]))
