"""The pure side of the event-sourced service loop: what a core folds (Event), what it asks to be written
(Output) and the Core protocol itself (docs/control-plane.md, "The event-sourced service loop").

Cores import only this module from shared/ (a test keeps I/O out of services/*/core/): no NATS, no etcd,
no clock. The loop that feeds events and publishes outputs is shared.runner.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import msgspec

from contracts.payloads import Payload, Uncatalogued
from contracts.typed_events import RawPayload, UncataloguedType, decode_payload, encode_payload
from shared.name_uuid import name_uuid

S = TypeVar("S")
P = TypeVar("P", bound=Payload)
_UNCATALOGUED = Uncatalogued()
# What a core reconciles one at a time (a job, a node, a queue): its own choice of hashable key.
Key = Hashable

# Fixed namespace of output ids: the same fact always maps to the same id, in every process and every
# run, so a re-published output is deduplicated by the stream (Nats-Msg-Id) instead of stored twice.
_OUTPUT_ID_NAMESPACE = uuid.UUID("6a1f0c5e-2d3b-4b8e-9f47-1c0d2e3f4a5b")


# Fixed namespace for ids derived from a cause (uuid5): the same cause and index always yield the same id,
# so a decision that is replayed or retried publishes with the same Nats-Msg-Id and is deduplicated.
_DERIVED_ID_NAMESPACE = uuid.UUID("3f6f1c1e-9a47-4c61-9d0e-6c2f4b8f0a51")


def derived_event_id(cause_id: str, index: int = 0) -> str:
    """A deterministic id for the index-th event caused by cause_id: admission's events carry the ids
    derived from their request's id (shared/bus/envelope.py re-exports it for the shells)."""
    return name_uuid(_DERIVED_ID_NAMESPACE, f"{cause_id}/{index}")


def deterministic_id(service: str, event_type: str, *key: object) -> str:
    """The id of the event that records one fact, e.g. ("job-controller", "PodCreated", pod_key, version).

    key must identify the fact, not the moment it was decided: the same fact decided again (after a
    restart, by a new leader) must give the same id.
    """
    return name_uuid(_OUTPUT_ID_NAMESPACE, "\x1f".join([service, event_type, *map(str, key)]))


class Event(msgspec.Struct, frozen=True):
    """One event of the log as a core sees it: the envelope's fields, where it sits (seq) and whom it is
    about (kind, namespace, name: the subject's object; namespace None for cluster-scoped objects).

    `data` is the payload as its typed class (contracts/payloads.py), decoded and checked when the event
    is made, upcast from the schema `version` it was written at (0: the current one); a payload that
    is not what its type promises raises PayloadError here, so no core ever sees it. Cores read `data`
    (see `payload_as`); `payload` is the plain form as written. Read from the bus, `payload` is a
    RawPayload: `data` is decoded straight from its bytes, and the plain mapping is built only if
    something reads it. An event type the catalogue does not list gets `Uncatalogued` (see there), and
    its plain payload is decoded at once: it is all a reader of such an event has.

    A frozen msgspec Struct rather than a dataclass: every service makes one per event it reads, and a
    Struct is built in C (about 1.4 µs less an event than a frozen dataclass's __init__). `data` is a
    field only because a Struct has no other kind of attribute: it is always computed from `payload`,
    never taken from the caller.
    """

    seq: int
    type: str
    kind: str
    namespace: str | None
    name: str
    payload: Mapping[str, Any]
    id: str
    time: float
    correlation_id: str
    causation_id: str | None = None
    traceparent: str | None = None
    producer: str = ""
    version: int = 0
    data: Payload = _UNCATALOGUED  # computed in __post_init__ (see above)

    def __post_init__(self) -> None:
        try:
            data = decode_payload(self.type, self.version, self.payload)
        except UncataloguedType:
            if isinstance(self.payload, RawPayload):
                self.payload.plain  # noqa: B018  # a payload that is not plain data fails here, as it always has
            data = _UNCATALOGUED
        msgspec.structs.force_setattr(self, "data", data)

    def payload_as(self, cls: builtins.type[P]) -> P:
        """The typed payload, as the class its type has (a TypeError names a handler given the wrong
        event type: a bug, not bad input)."""
        data = self.data
        if not isinstance(data, cls):
            raise TypeError(f"{self.type} carries a {data.__class__.__name__}, not a {cls.__name__}")
        return data


@dataclass(frozen=True, slots=True)
class Output:
    """An event a core wants written. The loop publishes it on the subject of (kind, namespace, name).

    id must be deterministic (see deterministic_id): it is the message id the stream deduplicates on.
    expected_last_subject_seq: publish only if the last event this service wrote about the object is
    still at that sequence (0: none yet), for writers that must not lose a race. batch: outputs of one
    reconcile carrying the same batch key are committed atomically, all or none (a gang's binds).
    traceparent: the trace this write belongs to when the core knows it (e.g. the job's); by default the
    loop uses its cause's trace.
    """

    type: str
    kind: str
    namespace: str | None
    name: str
    id: str
    correlation_id: str
    payload: Payload | Mapping[str, Any] = field(default_factory=dict)
    causation_id: str | None = None
    expected_last_subject_seq: int | None = None
    batch: str | None = None
    traceparent: str | None = None

    @property
    def plain_payload(self) -> dict[str, Any]:
        """The payload as it is written on the bus (plain data)."""
        return encode_payload(self.payload)


class Core(Protocol[S]):
    """A service's decisions as pure functions. The loop guarantees:

    - apply() sees every event of the service's subject filter exactly once, in log order, including
      the events the service wrote itself; it must not fail for events it does not care about.
    - reconcile() is called only once the state is caught up with the log. It returns everything that
      should be written about `keys` and is not yet in the log; with keys None, about everything. Returning
      an output again before its event arrived is expected and harmless (the loop keeps it in flight).
    - The cost of an event is proportional to what it touches, not to the size of the state: after each
      batch of live events the loop reconciles only the keys touched() named for its events; on its timer
      it adds the keys due() names (time-based decisions: TTLs, timeouts, liveness). A full reconcile
      (keys None) runs after replay, on taking over as leader, after outputs failed or stayed unanswered,
      and as a rare periodic resync: a key a core forgets to name is late, never lost.
    - load(dump(state)) == state; dump is called for checkpoints, load at start.
    """

    @property
    def name(self) -> str:
        """The service name: also the checkpoint key, the election name and the events' producer."""
        ...

    def initial(self) -> S: ...

    def apply(self, state: S, event: Event) -> S: ...

    def touched(self, state: S, event: Event) -> Iterable[Key]:
        """Called right after apply(state, event): the keys whose outputs the event may have changed."""
        ...

    def due(self, state: S, now: float) -> Iterable[Key]:
        """The keys whose time-based decision may fall due at `now`; must not walk the whole state."""
        ...

    # Keys are Any here: each core picks its own key type (str, tuples) and the loop only carries them from
    # touched() and due() to reconcile(); a Collection[Hashable] parameter would refuse every such core.
    def reconcile(self, state: S, now: float, keys: Collection[Any] | None = None) -> list[Output]: ...

    def dump(self, state: S) -> bytes: ...

    def load(self, data: bytes) -> S: ...
