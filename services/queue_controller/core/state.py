"""What the queue-controller knows: every queue with its state and what was last published about it, and
every PodGroup with its queue and phase (for the per-queue counts, which the read model shows: they are
derived from the PodGroups' events, so no event repeats them), folded from the log.

Like the job-controller's, the state is a mutable container that the fold updates in place. The `default`
queue exists from the start without a QueueApplied (Volcano creates it at installation); it cannot be
deleted (Volcano's webhook refuses to).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts import codec
from contracts.objects import Queue
from services.queue_controller.core.machine import OPEN

DEFAULT_QUEUE = "default"

# (seq, event id) of the event that made something true; the id becomes the outputs' causation id
Cause = tuple[int, str]
NO_CAUSE: Cause = (0, "")

# QueueStatus counters, by the PodGroup phase they count
COUNTED_PHASES = {
    "Pending": "pending",
    "Inqueue": "inqueue",
    "Running": "running",
    "Unknown": "unknown",
    "Completed": "completed",
}


@dataclass(slots=True)
class QueueRecord:
    name: str
    queue: Queue | None  # the applied spec; None for the implicit default queue
    incarnation: int  # seq of the QueueApplied that created it (0: the implicit default): part of output ids
    state: str = OPEN
    state_cause: Cause = NO_CAUSE  # the event that last moved `state`
    published_state: str | None = None  # from the last QueueStateChanged
    state_generation: int = 0  # QueueStateChanged events folded so far


@dataclass(slots=True)
class State:
    queues: dict[str, QueueRecord] = field(default_factory=dict)
    podgroups: dict[str, tuple[str, str]] = field(default_factory=dict)  # PodGroup key -> (queue, phase)
    # queue -> PodGroup phase -> how many (derived from podgroups, kept up to date by the fold)
    phases: dict[str, dict[str, int]] = field(default_factory=dict)
    # PodGroups whose job reached a final phase (JobStatusChanged): Volcano's KillJob deletes those, so a
    # Closing queue does not wait for them (they still count in the status until they are deleted)
    finished: set[str] = field(default_factory=set)
    # queue -> PodGroups not finished (derived), what closing waits for
    live: dict[str, int] = field(default_factory=dict)
    # queues the last folded event changed (transient: the loop's dirty keys, the read model's marks)
    changed: set[str] = field(default_factory=set, compare=False)

    def has_podgroups(self, queue: str) -> bool:
        """Does the queue still hold PodGroups of jobs that have not finished (a Closing queue waits)?"""
        return self.live.get(queue, 0) > 0

    def counts(self, queue: str) -> dict[str, int]:
        phases = self.phases.get(queue, {})
        return {counter: phases.get(phase, 0) for phase, counter in COUNTED_PHASES.items()}


def initial_state() -> State:
    return State(queues={DEFAULT_QUEUE: QueueRecord(DEFAULT_QUEUE, None, incarnation=0)})


def count_live(state: State, queue: str, delta: int) -> None:
    state.live[queue] = state.live.get(queue, 0) + delta
    if not state.live[queue]:
        del state.live[queue]


def count_podgroup(state: State, queue: str, phase: str, delta: int) -> None:
    phases = state.phases.setdefault(queue, {})
    phases[phase] = phases.get(phase, 0) + delta
    if not phases[phase]:
        del phases[phase]
    if not phases:
        del state.phases[queue]


# --- plain data ------------------------------------------------------------------------------------


def to_plain(state: State) -> dict[str, Any]:
    return {
        "queues": [_record_to_plain(r) for r in state.queues.values()],
        "podgroups": [[key, queue, phase] for key, (queue, phase) in state.podgroups.items()],
        "finished": sorted(state.finished),
    }


def from_plain(data: dict[str, Any]) -> State:
    state = State()
    for item in data["queues"]:
        record = _record_from_plain(item)
        state.queues[record.name] = record
    state.finished = set(data.get("finished", ()))
    for key, queue, phase in data["podgroups"]:
        state.podgroups[key] = (queue, phase)
        count_podgroup(state, queue, phase, 1)
        if key not in state.finished:
            count_live(state, queue, 1)
    return state


def _record_to_plain(r: QueueRecord) -> dict[str, Any]:
    return {
        "name": r.name,
        "queue": None if r.queue is None else codec.encode(r.queue),
        "incarnation": r.incarnation,
        "state": r.state,
        "state_cause": list(r.state_cause),
        "published_state": r.published_state,
        "state_generation": r.state_generation,
    }


def _record_from_plain(d: dict[str, Any]) -> QueueRecord:
    return QueueRecord(
        name=d["name"],
        queue=None if d["queue"] is None else codec.decode(Queue, d["queue"]),
        incarnation=d["incarnation"],
        state=d["state"],
        state_cause=_cause(d["state_cause"]),
        published_state=d["published_state"],
        state_generation=d["state_generation"],
    )


def _cause(value: list[Any]) -> Cause:
    return (int(value[0]), str(value[1]))
