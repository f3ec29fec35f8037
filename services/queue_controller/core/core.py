"""The queue-controller as a `shared.runner_types.Core`: fold (fold.py), reconcile (reconcile.py) and the
checkpoint format (state.py's plain data as MessagePack)."""

from __future__ import annotations

from collections.abc import Collection

import msgpack

from contracts.events import QUEUE_CONTROLLER
from services.queue_controller.core import fold, reconcile
from services.queue_controller.core.state import State, from_plain, initial_state, to_plain
from shared.runner_types import Event, Output

CHECKPOINT_VERSION = 2


class QueueControllerCore:
    name = QUEUE_CONTROLLER

    def initial(self) -> State:
        return initial_state()

    def apply(self, state: State, event: Event) -> State:
        """Fold one event; updates `state` in place and returns it."""
        return fold.apply(state, event)

    def touched(self, state: State, event: Event) -> list[str]:
        """Queue names (the fold notes which queues an event changed, a PodGroup's through its queue)."""
        return list(state.changed)

    def due(self, state: State, now: float) -> list[str]:
        return []  # nothing of a queue's lifecycle is timed

    def reconcile(self, state: State, now: float, keys: Collection[str] | None = None) -> list[Output]:
        return reconcile.reconcile(state, keys)

    def dump(self, state: State) -> bytes:
        packed: bytes = msgpack.packb(
            {"version": CHECKPOINT_VERSION, "state": to_plain(state)}, use_bin_type=True
        )
        return packed

    def load(self, data: bytes) -> State:
        document = msgpack.unpackb(data, raw=False)
        if document.get("version") != CHECKPOINT_VERSION:
            # an older layout is only a cache of the log: the loop replays instead
            raise ValueError(f"unsupported queue-controller checkpoint version {document.get('version')!r}")
        return from_plain(document["state"])
