"""A pod's life as the log tells it, written once for every pod the job-controller creates: a Job's
(fold.py) and a plain one (plain/fold.py). Each folds a pod event into its own record by asking
`transition` which of the pod's lifecycle fields the event changes.

A pod event is about the current generation of the pod only when it names the node the pod is bound to
(PodBound itself excepted): an event naming another node is about an earlier generation of the same pod
name and changes nothing. The rules, for the pod's current generation:

- PodBound: bound to the node, unless it ended.
- PodEvicting: being evicted, if on its node and not ended.
- PodRunning: Running, if Pending on its node and not ended.
- PodSucceeded / PodFailed: finished, if on its node, not finished and not ended.
- PodTerminated: ended, if on its node and not ended.
- PodLost: ended, if on its node, not ended and not finished (a finished pod has nothing left to lose).
- PodDeletionRequested: its deletion asked on the node named (by default the pod's), unless it ended; a
  finished pod is deleted even when its node reported it stopped, since deleting it frees its slot.

Besides the lifecycle, `status_details` keeps what a pod's status shows of the events (start time, exit
code, reason, message; PodBound clears the nominated node), `nomination` the node a PodNominated
reserves room on for a pod still waiting for one (Kubernetes' status.nominatedNodeName), and
`asks_stop` names the events after which the pod is being stopped (its deletion timestamp).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from contracts import payloads
from contracts.objects import PodStatus
from shared.runner_types import Event

FINISHED_POD_PHASES = frozenset({"Succeeded", "Failed"})

# the lifecycle fields a transition sets, by name (both records name them alike)
PodChange = dict[str, Any]


class PodLife(Protocol):
    """The lifecycle fields every pod record has."""

    @property
    def node(self) -> str: ...  # "" while unbound

    @property
    def phase(self) -> str: ...  # Pending | Running | Succeeded | Failed

    @property
    def evicting(self) -> bool: ...

    @property
    def deletion_node(self) -> str | None: ...  # the node its deletion was asked on; None: not asked

    @property
    def ended(self) -> bool: ...  # PodTerminated or PodLost: it no longer exists on any node

    @property
    def finished(self) -> bool: ...


def gone(pod: PodLife) -> bool:
    """Nothing runs it and nothing will, and its slot is free: a live pod stopped, lost, or deleted
    before any node got it; a finished pod once its deletion was asked."""
    if pod.finished:
        return pod.deletion_node is not None
    return pod.ended or (pod.deletion_node == "" and not pod.node)


def transition(pod: PodLife, event: Event) -> PodChange | None:
    """The lifecycle fields a pod event changes (None: the event does not apply to this generation)."""
    return _TRANSITIONS[event.type](pod, event)


def _on_node(pod: PodLife, node: str) -> bool:
    return node == pod.node and bool(pod.node)


def _bound(pod: PodLife, event: Event) -> PodChange | None:
    return None if pod.ended else {"node": event.payload_as(payloads.PodBound).node}


def _evicting(pod: PodLife, event: Event) -> PodChange | None:
    ok = _on_node(pod, event.payload_as(payloads.PodEvicting).node) and not pod.ended
    return {"evicting": True} if ok else None


def _running(pod: PodLife, event: Event) -> PodChange | None:
    node = event.payload_as(payloads.PodRunning).node
    ok = _on_node(pod, node) and pod.phase == "Pending" and not pod.ended
    return {"phase": "Running"} if ok else None


def _succeeded(pod: PodLife, event: Event) -> PodChange | None:
    return _finished(pod, event.payload_as(payloads.PodSucceeded).node, "Succeeded")


def _failed(pod: PodLife, event: Event) -> PodChange | None:
    return _finished(pod, event.payload_as(payloads.PodFailed).node, "Failed")


def _finished(pod: PodLife, node: str, phase: str) -> PodChange | None:
    ok = _on_node(pod, node) and not pod.finished and not pod.ended
    return {"phase": phase} if ok else None


def _terminated(pod: PodLife, event: Event) -> PodChange | None:
    ok = _on_node(pod, event.payload_as(payloads.PodTerminated).node) and not pod.ended
    return {"ended": True} if ok else None


def _lost(pod: PodLife, event: Event) -> PodChange | None:
    ok = _on_node(pod, event.payload_as(payloads.PodLost).node) and not pod.ended and not pod.finished
    return {"ended": True} if ok else None


def _deletion_requested(pod: PodLife, event: Event) -> PodChange | None:
    node = event.payload_as(payloads.PodDeletionRequested).node
    ok = not pod.ended or (pod.finished and pod.deletion_node is None)
    return {"deletion_node": pod.node if node is None else node} if ok else None


_TRANSITIONS: Mapping[str, Callable[[PodLife, Event], PodChange | None]] = {
    "PodBound": _bound,
    "PodEvicting": _evicting,
    "PodRunning": _running,
    "PodSucceeded": _succeeded,
    "PodFailed": _failed,
    "PodTerminated": _terminated,
    "PodLost": _lost,
    "PodDeletionRequested": _deletion_requested,
}
EVENTS = frozenset(_TRANSITIONS)
NOMINATED = "PodNominated"  # read for the pod's status only (`nomination`)
# the events after which a pod is being stopped: its deletion timestamp is the first one's time
STOP_EVENTS = frozenset({"PodEvicting", "PodDeletionRequested"})


def asks_stop(event: Event) -> bool:
    return event.type in STOP_EVENTS


def nomination(pod: PodLife, event: Event) -> str | None:
    """The node a PodNominated event reserves room on for `pod`, or None when it does not apply: the pod is
    bound already (a nomination that lands after the bind is stale) or ended. It changes no lifecycle field,
    only what the pod's status shows, until PodBound clears it."""
    if event.type != NOMINATED or pod.node or pod.ended:
        return None
    return event.payload_as(payloads.PodNominated).node


def status_details(details: PodStatus, event: Event) -> PodStatus:
    """A pod's status details (start time, exit code, reason, message, nominated node) after an event that
    applied."""
    data = event.data
    if isinstance(data, payloads.PodBound):
        # bound: the room held for it is its own now (Kubernetes clears nominatedNodeName on binding)
        return replace(details, nominated_node_name="") if details.nominated_node_name else details
    if isinstance(data, payloads.PodRunning):
        return replace(details, start_time=event.time)
    if isinstance(data, payloads.PodSucceeded):
        return replace(details, exit_code=data.exit_code, reason="", message="")
    if isinstance(data, payloads.PodFailed):
        return replace(details, exit_code=data.exit_code, reason=data.reason, message=data.message)
    return details
