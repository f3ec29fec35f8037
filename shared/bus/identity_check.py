"""The write side of contracts/identity.py: the bus refuses to store an event whose payload is about
another object than its subject names, so no writer (a service's bug, a forged request that got that far)
puts one in the log, where every reader would have to set it aside at every replay. A bundle's events are
each checked against the pod its entry names (contracts/bundles.py)."""

from __future__ import annotations

from contracts.bundles import BUNDLE_OF
from contracts.identity import OBJECT_EVENT_TYPES, identity_problem
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
        try:
            events = unpack(ref, envelope)
        except ValueError as exc:
            raise EventRefused(f"event {envelope.id} not written to {subject}: {exc}") from None
        problems = (identity_problem(e.type, e.payload, r.namespace, r.name) for r, e in events)
        problem = next((p for p in problems if p is not None), None)
    if problem is not None:
        raise EventRefused(f"event {envelope.id} not written to {subject}: {problem}")
