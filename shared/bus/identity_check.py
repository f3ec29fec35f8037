"""The write side of contracts/identity.py: the bus refuses to store an event whose payload is about
another object than its subject names, so no writer (a service's bug, a forged request that got that far)
puts one in the log, where every reader would have to set it aside at every replay."""

from __future__ import annotations

from contracts.identity import OBJECT_EVENT_TYPES, identity_problem
from shared.bus.envelope import Envelope
from shared.bus.errors import EventRefused
from shared.bus.subjects import parse_event_subject


def refuse_wrong_object(envelope: Envelope, subject: str) -> None:
    """Raises EventRefused when the envelope's payload names another object than the subject. Only
    object-carrying types are looked at (their subject is parsed): other events cost one set lookup."""
    if envelope.type not in OBJECT_EVENT_TYPES:
        return
    try:
        ref = parse_event_subject(subject)
    except ValueError:
        return  # not an event subject: not this rule's to judge (a test stream, a record)
    problem = identity_problem(envelope.type, envelope.payload, ref.namespace, ref.name)
    if problem is not None:
        raise EventRefused(f"event {envelope.id} not written to {subject}: {problem}")
