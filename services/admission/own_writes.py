"""The objects of admission's own writes, kept from the decision until the view folds them back.

Admission decides an object (a Job, a Queue, ...), encodes it into its event's payload and publishes it;
a moment later its view folds that event from the log and used to decode the object again (about 0.1 ms
for a Job, once per job). The decided object is kept here, by the event's id, for that fold: it is used
when the logged payload is the one admission published, so the view holds what decoding the log would
give (the codec round-trips the objects admission makes), and anything else (another instance's event
under the same id, a replay, an entry missed) is decoded from the log as before.

Pure data in the view; the service remembers before publishing and forgets once the round is folded.
"""

from __future__ import annotations

from typing import Any

from contracts.events import ADMISSION
from contracts.objects import ApiObject
from contracts.payloads import ObjectPayload
from services.admission.core.decide import Emit
from shared.runner_types import Event

# event id -> (the encoded object published, the decided object)
OwnWrites = dict[str, tuple[Any, ApiObject]]


def remember(own: OwnWrites, event_id: str, emit: Emit, types: frozenset[str]) -> None:
    """Keep a write's object for its fold, if its type is one of `types` (the view's object-storing
    events) and its payload carries the object."""
    payload = emit.payload
    if emit.type in types and isinstance(payload, ObjectPayload):
        own[event_id] = (payload.object, emit.object)


def take(own: OwnWrites, event: Event) -> ApiObject | None:
    """The decided object of one of admission's own events, if the log holds what was published (the
    encoded payloads compare equal, in C); None: decode it."""
    if not own:
        return None
    kept = own.pop(event.id, None)
    if kept is None or event.producer != ADMISSION:
        return None
    published, obj = kept
    data = event.data
    return obj if isinstance(data, ObjectPayload) and data.object == published else None


def forget(own: OwnWrites) -> None:
    """Drop what was not folded back (a write that failed, a fold that came after the wait ended)."""
    own.clear()
