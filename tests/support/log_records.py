"""Reading records of the events stream in tests as the services read them: a bundle
(contracts/bundles.py) is the events it carries."""

from __future__ import annotations

from shared.bus.bundles import record_events
from shared.bus.envelope import Envelope
from shared.bus.records import StreamRecord
from shared.bus.subjects import EventSubject, parse_event_subject
from shared.runner.events import record_to_events
from shared.runner_types import Event


def subjects_and_envelopes(record: StreamRecord) -> list[tuple[EventSubject, Envelope]]:
    """The (subject, envelope) of each event the record holds."""
    return record_events(parse_event_subject(record.subject), record.envelope())


def events_of(record: StreamRecord) -> list[Event]:
    """The events the record holds, as a core sees them (made as the service loop makes them)."""
    return record_to_events(record.seq, parse_event_subject(record.subject), record.envelope())
