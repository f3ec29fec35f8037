"""Fold one event into the queue-controller's state (in place; see state.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from contracts import codec, payloads
from contracts.objects import PodGroup, Queue
from services.queue_controller.core.machine import ACTIONS, after_action, after_sync
from services.queue_controller.core.state import (
    DEFAULT_QUEUE,
    Cause,
    QueueRecord,
    State,
    count_live,
    count_podgroup,
)
from shared.runner_types import Event

# the job phases after which Volcano's controller deletes the job's PodGroup (KillJob)
FINAL_JOB_PHASES = frozenset({"Completed", "Failed", "Terminated"})


def apply(state: State, event: Event) -> State:
    """Fold one event; `state.changed` names the queues it changed."""
    state.changed = set()
    handler = _HANDLERS.get(event.type)
    if handler is not None:
        handler(state, event)
        if event.kind == "queue":
            state.changed.add(event.name)
    return state


def _cause(event: Event) -> Cause:
    return (event.seq, event.id)


# --- queues ----------------------------------------------------------------------------------------


def _queue_applied(state: State, event: Event) -> None:
    queue = event.payload_as(payloads.QueueApplied).decoded()
    if not isinstance(queue, Queue):
        raise codec.DecodeError(f"QueueApplied: expected a Queue, got a {queue.kind}")
    record = state.queues.get(event.name)
    if record is None:
        # a new queue starts Open; a spec change keeps the state the commands gave it
        state.queues[event.name] = QueueRecord(event.name, queue, incarnation=event.seq)
    else:
        record.queue = queue


def _queue_deleted(state: State, event: Event) -> None:
    if event.name != DEFAULT_QUEUE:
        state.queues.pop(event.name, None)


def _command_issued(state: State, event: Event) -> None:
    command = event.payload_as(payloads.CommandIssued)
    action = command.action
    if command.target_kind != "Queue" or action not in ACTIONS:
        return
    record = state.queues.get(command.target)
    if record is not None:
        record.state = after_action(record.state, action, state.has_podgroups(record.name))
        record.state_cause = _cause(event)
        state.changed.add(record.name)


def _queue_state_changed(state: State, event: Event) -> None:
    record = state.queues.get(event.name)
    if record is not None:
        record.published_state = event.payload_as(payloads.QueueStateChanged).state
        record.state_generation += 1


# --- podgroups -------------------------------------------------------------------------------------


def _podgroup_created(state: State, event: Event) -> None:
    podgroup = event.payload_as(payloads.PodGroupCreated).decoded()
    if not isinstance(podgroup, PodGroup):
        raise codec.DecodeError(f"PodGroupCreated: expected a PodGroup, got a {podgroup.kind}")
    key = f"{event.namespace}/{event.name}"
    if key in state.podgroups:
        return  # a second delivery of the same creation
    state.podgroups[key] = (podgroup.queue, podgroup.status.phase)
    state.finished.discard(key)  # a new incarnation of the job
    count_podgroup(state, podgroup.queue, podgroup.status.phase, 1)
    count_live(state, podgroup.queue, 1)
    _podgroups_changed(state, podgroup.queue, event)


def _podgroup_status_changed(state: State, event: Event) -> None:
    key = f"{event.namespace}/{event.name}"
    if key not in state.podgroups:
        return
    queue, phase = state.podgroups[key]
    following = event.payload_as(payloads.PodGroupStatusChanged).phase
    if following == phase:
        return
    state.podgroups[key] = (queue, following)
    count_podgroup(state, queue, phase, -1)
    count_podgroup(state, queue, following, 1)
    _podgroups_changed(state, queue, event)


def _podgroup_deleted(state: State, event: Event) -> None:
    entry = state.podgroups.pop(f"{event.namespace}/{event.name}", None)
    if entry is None:
        return
    queue, phase = entry
    count_podgroup(state, queue, phase, -1)
    key = f"{event.namespace}/{event.name}"
    if key in state.finished:
        state.finished.discard(key)
    else:
        count_live(state, queue, -1)
    _podgroups_changed(state, queue, event)


def _job_status_changed(state: State, event: Event) -> None:
    """A job in a final phase no longer holds its queue open (lahar names a Job's PodGroup after it)."""
    key = f"{event.namespace}/{event.name}"
    if event.payload_as(payloads.JobStatusChanged).phase not in FINAL_JOB_PHASES or key in state.finished:
        return
    entry = state.podgroups.get(key)
    if entry is None:
        return
    state.finished.add(key)
    count_live(state, entry[0], -1)
    _podgroups_changed(state, entry[0], event)


def _podgroups_changed(state: State, queue: str, event: Event) -> None:
    record = state.queues.get(queue)
    if record is None:
        return
    state.changed.add(queue)
    following = after_sync(record.state, state.has_podgroups(queue))
    if following != record.state:
        record.state = following
        record.state_cause = _cause(event)


_HANDLERS: Mapping[str, Callable[[State, Event], None]] = {
    "QueueApplied": _queue_applied,
    "QueueDeleted": _queue_deleted,
    "CommandIssued": _command_issued,
    "QueueStateChanged": _queue_state_changed,
    "PodGroupCreated": _podgroup_created,
    "PodGroupStatusChanged": _podgroup_status_changed,
    "PodGroupDeleted": _podgroup_deleted,
    "JobStatusChanged": _job_status_changed,
}
HANDLED_EVENTS = frozenset(_HANDLERS)
