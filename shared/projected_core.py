"""A core with its read model: what the job- and queue-controller's projections share.

A projection wraps a service's core (`inner`): it folds every event into the core's state unchanged and,
beside it, keeps what the read model shows that the core does not need, and marks the objects an event
changed as dirty with the event's seq (shared.runner.read_model writes them and clears the marks). The
decisions (touched, due, reconcile) are the inner core's. The checkpoint is the inner core's with the
projection's own details beside it; the dirty marks are not checkpointed (a new leader rewrites
everything).

Pure, like the cores that use it (shared.runner_types): no I/O, no clock.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import msgpack

from shared.runner_types import Event, Key, Output

S = TypeVar("S")

# (kind, namespace, name) of a read-model object; namespace None for cluster-scoped kinds
ObjectKey = tuple[str, str | None, str]


@dataclass(slots=True)
class ProjectedState(Generic[S]):
    """The inner core's state and the objects changed since they were last written (-> seq of the
    change). A projection's own details are fields of its subclass."""

    core: S
    dirty: dict[ObjectKey, int] = field(default_factory=dict)


P = TypeVar("P", bound=ProjectedState[Any])


class InnerCore(Protocol[S]):
    """The core a projection wraps: a shared.runner_types.Core, whatever its keys."""

    name: str

    def initial(self) -> S: ...

    def apply(self, state: S, event: Event) -> S: ...

    def touched(self, state: S, event: Event) -> Iterable[Any]: ...

    def due(self, state: S, now: float) -> Iterable[Any]: ...

    def reconcile(self, state: S, now: float, keys: Collection[Any] | None = None) -> list[Output]: ...

    def dump(self, state: S) -> bytes: ...

    def load(self, data: bytes) -> S: ...


class Projection(ABC, Generic[S, P]):
    """An inner core plus its read model. A subclass says what it projects: `initial`, `apply`,
    `render`, `keys`, and its details' checkpoint (`details_to_plain`, `from_checkpoint`)."""

    kinds: tuple[str, ...]  # the read-model kinds it writes
    checkpoint_version: int = 1

    def __init__(self, inner: InnerCore[S]) -> None:
        self.inner = inner
        self.name = inner.name

    def touched(self, state: P, event: Event) -> list[Key]:
        return list(self.inner.touched(state.core, event))

    def due(self, state: P, now: float) -> list[Key]:
        return list(self.inner.due(state.core, now))

    def reconcile(self, state: P, now: float, keys: Collection[Key] | None = None) -> list[Output]:
        return self.inner.reconcile(state.core, now, keys)

    def dirty(self, state: P) -> dict[ObjectKey, int]:
        return state.dirty

    def dump(self, state: P) -> bytes:
        document = {
            **self.details_to_plain(state),
            "version": self.checkpoint_version,
            "core": self.inner.dump(state.core),
        }
        return msgpack.packb(document, use_bin_type=True)  # type: ignore[no-any-return]

    def load(self, data: bytes) -> P:
        document = msgpack.unpackb(data, raw=False)
        if not isinstance(document, dict) or document.get("version") != self.checkpoint_version:
            # an older layout is only a cache of the log: the loop replays instead
            found = document.get("version") if isinstance(document, dict) else None
            raise ValueError(f"unsupported {self.name} checkpoint version {found!r}")
        return self.from_checkpoint(self.inner.load(document["core"]), document)

    # --- what a projection says -----------------------------------------------------------------------

    @abstractmethod
    def initial(self) -> P: ...

    @abstractmethod
    def apply(self, state: P, event: Event) -> P: ...

    @abstractmethod
    def render(self, state: P, key: ObjectKey) -> Mapping[str, Any] | None:
        """The read-model value of an object: codec.encode_object of it, None when it does not exist."""

    @abstractmethod
    def keys(self, state: P) -> Iterable[ObjectKey]:
        """Every object that exists."""

    @abstractmethod
    def details_to_plain(self, state: P) -> dict[str, Any]:
        """The projection's own details as plain data, checkpointed beside the inner core's state."""

    @abstractmethod
    def from_checkpoint(self, core: S, document: Mapping[str, Any]) -> P:
        """The projected state of a loaded inner state and the details `details_to_plain` wrote."""
