"""An in-memory event log around one core, as the runner drives it: each event is folded into the core's
state as it lands, and what reconcile writes is appended and folded back."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from shared.runner_types import Event, Output


class CoreLog:
    """Events numbered as the stream numbers them, stamped with the log's clock `now` (their seq when
    `now` is None), each with a unique id unless one is given (an output's own)."""

    def __init__(self, core: Any, now: float | None = None) -> None:
        self.core = core
        self.state = core.initial()
        self.events: list[Event] = []
        self.now = now

    def append(
        self, type: str, kind: str, namespace: str | None, name: str, payload: Any = None, *, id: str = ""
    ) -> Event:
        seq = len(self.events) + 1
        event = Event(
            seq=seq,
            type=type,
            kind=kind,
            namespace=namespace,
            name=name,
            payload=payload or {},
            id=id or str(uuid.UUID(int=seq)),
            time=float(seq) if self.now is None else self.now,
            correlation_id="test",
        )
        self.events.append(event)
        self.state = self.core.apply(self.state, event)
        return event

    def publish(self, outputs: Iterable[Output]) -> None:
        for o in outputs:
            self.append(o.type, o.kind, o.namespace, o.name, o.plain_payload, id=o.id)

    def settle(self, now: float, *, rounds: int = 12) -> list[Output]:
        """Reconcile at `now` and write back until reconcile has nothing more to write; all it wrote."""
        written: list[Output] = []
        for _ in range(rounds):
            outputs = self.core.reconcile(self.state, now)
            if not outputs:
                return written
            written.extend(outputs)
            self.publish(outputs)
        raise AssertionError(f"reconcile does not converge: {[o.type for o in written[-6:]]}")
