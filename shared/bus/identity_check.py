"""The write side of contracts/identity.py: the bus refuses to store an event whose payload is about
another object than its subject names, so no writer (a service's bug, a forged request that got that far)
puts one in the log, where every reader would have to set it aside at every replay. A bundle's events are
each checked against the pod its entry names (contracts/bundles.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.bundles import BUNDLE_OF
from contracts.identity import OBJECT_EVENT_TYPES, identity_problem
from contracts.typed_events import RawPayload
from shared.bus.bundles import unpack
from shared.bus.envelope import Envelope
from shared.bus.errors import EventRefused
from shared.bus.subjects import parse_event_subject


def refuse_wrong_object(envelope: Envelope, subject: str) -> None:
    """Raises EventRefused when the envelope's payload names another object than the subject. Only
    object-carrying types are looked at (their subject is parsed): other events cost one set lookup."""
    carried = BUNDLE_OF.get(envelope.type, envelope.type)
    if carried not in OBJECT_EVENT_TYPES:
        return
    try:
        ref = parse_event_subject(subject)
    except ValueError:
        return  # not an event subject: not this rule's to judge (a test stream, a record)
    if carried is envelope.type:
        problem = identity_problem(envelope.type, envelope.payload, ref.namespace, ref.name)
    else:
        items = _plain_items(envelope.payload)
        if items is None:  # read from bytes, or not a bundle's shape: unpack reads it or names what is wrong
            try:
                items = [(r.name, e.payload) for r, e in unpack(ref, envelope)]
            except ValueError as exc:
                raise EventRefused(f"event {envelope.id} not written to {subject}: {exc}") from None
        problems = (identity_problem(carried, payload, ref.namespace, name) for name, payload in items)
        problem = next((p for p in problems if p is not None), None)
    if problem is not None:
        raise EventRefused(f"event {envelope.id} not written to {subject}: {problem}")


def _plain_items(payload: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]] | None:
    """A bundle a writer built in process (a plain payload: shared/bus/bundles.py bundle_envelope) as
    (pod name, payload) pairs, without packing it to read it back; None for anything else."""
    if isinstance(payload, RawPayload):
        return None
    events = payload.get("events")
    if not isinstance(events, list) or not events:
        return None
    items = []
    for event in events:
        name = event.get("name") if isinstance(event, dict) else None
        item = event.get("payload") if isinstance(event, dict) else None
        if not isinstance(name, str) or not name or not isinstance(item, Mapping):
            return None
        items.append((name, item))
    return items
