"""The simulated event log: what the services would have written to the stream, in order, each event with
its seq, simulated time and writer. Like the stream, it keeps one event per id (a re-published output is
dropped), so the cores see exactly what they would see in the stack.
"""

from __future__ import annotations

from typing import Any

from shared.runner_types import Event, Output


class SimLog:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self._ids: set[str] = set()

    def __len__(self) -> int:
        return len(self.events)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def append(self, producer: str, output: Output, now: float) -> Event | None:
        """Write `output` at simulated time `now`; None if an event with its id is already in the log."""
        if output.id in self._ids:
            return None
        event = Event(
            seq=len(self.events) + 1,
            type=output.type,
            kind=output.kind,
            namespace=output.namespace,
            name=output.name,
            payload=output.plain_payload,
            id=output.id,
            time=now,
            correlation_id=output.correlation_id,
            causation_id=output.causation_id,
            producer=producer,
        )
        self.events.append(event)
        self._ids.add(event.id)
        return event


def event_to_plain(event: Event) -> dict[str, Any]:
    """An event for a report. An `object` payload (the whole manifest of a Job, PodGroup or pod) is left
    out: the subject names the object."""
    payload = {k: v for k, v in event.payload.items() if k != "object"}
    return {
        "seq": event.seq,
        "time": event.time,
        "type": event.type,
        "subject": f"{event.kind}/{event.namespace}/{event.name}"
        if event.namespace
        else f"{event.kind}/{event.name}",
        "producer": event.producer,
        "id": event.id,
        "causation_id": event.causation_id,
        "payload": payload,
    }
