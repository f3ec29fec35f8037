"""How the service loop folds one log record into its core's state (shared/runner/service.py): a record
is decoded into its event (or a bundle into its events), each event applied once and in order, traced
when spans are recorded, and the keys it touched noted for the next reconcile; a record that cannot be
read or applied is set aside in the quarantine, never retried in a loop (docs/reliability.md).

A mixin of EventSourcedService, which owns the attributes declared here: what is folded is the same
state, sequence and outputs the loop reconciles and publishes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic

from opentelemetry.trace import SpanKind, Tracer

from contracts.bus_messages import QuarantineReason
from shared.bus.bundles import BUNDLE_OF, BundleItem, BundleRead, read_bundle
from shared.bus.envelope import Envelope, EnvelopeError
from shared.bus.records import StreamRecord
from shared.bus.subjects import EventSubject, parse_event_subject
from shared.runner.events import bundled_event, span_attributes, to_event
from shared.runner.metrics import RunnerMetrics
from shared.runner.publisher import Publisher
from shared.runner.quarantine import Quarantine, unreadable
from shared.runner_types import Core, Event, Key, S
from shared.telemetry.tracing import extract_context, trace_headers

# where an event came from: its own record (subject, envelope), or a bundle and the bundle's item
_Origin = tuple[EventSubject, Envelope] | tuple[BundleRead, BundleItem]


def _subject_and_envelope(origin: _Origin) -> tuple[EventSubject, Envelope]:
    first, second = origin
    if isinstance(first, BundleRead):
        assert isinstance(second, BundleItem)
        return first.subject(second), first.envelope(second)
    assert isinstance(second, Envelope)
    return first, second


class RecordFolding(Generic[S]):
    """Folding records into `state` (the loop's attributes, set by EventSourcedService.__init__)."""

    name: str
    core: Core[S]
    state: S
    seq: int
    tracer: Tracer
    metrics: RunnerMetrics
    publisher: Publisher
    quarantine: Quarantine
    _reads: frozenset[str] | None
    _causes_outputs: bool
    _dirty: set[Key]
    _full: bool
    clock: Callable[[], float]

    def _apply(self, record: StreamRecord, *, live: bool, track: bool = False) -> None:
        """Fold one record, or quarantine it: no record can stop the loop (docs/reliability.md). A
        bundle's events are folded one by one, each quarantined alone if it must be."""
        if record.seq <= self.seq:
            return  # applied already (a redelivery): an event is never applied twice
        ref: EventSubject | None = None
        env: Envelope | None = None
        try:
            ref = parse_event_subject(record.subject)
            read_type = BUNDLE_OF.get(ref.type, ref.type)
            if self._reads is not None and read_type not in self._reads:
                self.seq = record.seq  # not a type this core folds: skipped before decoding it
                return
            env = record.envelope()
            if read_type is not ref.type:
                bundle = read_bundle(ref, env)
                for item in bundle.events:
                    self._apply_item(record, bundle, item, live=live, track=track)
                self.seq = record.seq
                self.metrics.applied("live" if live else "replay", record.seq)
                return
        except (EnvelopeError, ValueError) as exc:  # no event, or a bundle that is none: set aside whole
            self._quarantine(record, ref, env, unreadable(exc), exc)
            return
        self._apply_one(record, ref, env, live=live, track=track)
        if self.seq < record.seq:
            self.seq = record.seq
            self.metrics.applied("live" if live else "replay", record.seq)

    def _apply_one(
        self, record: StreamRecord, ref: EventSubject, env: Envelope, *, live: bool, track: bool
    ) -> None:
        """Fold a record that is one event."""
        try:
            event = to_event(record.seq, ref, env)
        except (EnvelopeError, ValueError) as exc:
            # Set aside, never applied: no core sees a field it cannot trust, and stopping here would
            # stall the service forever (unreadable names why).
            self._quarantine(record, ref, env, unreadable(exc), exc)
            return
        self._apply_event(record, event, env.tracestate, (ref, env), live=live, track=track)

    def _apply_item(
        self, record: StreamRecord, bundle: BundleRead, item: BundleItem, *, live: bool, track: bool
    ) -> None:
        """Fold one event of a bundle (each is set aside alone if it must be)."""
        try:
            event = bundled_event(record.seq, bundle, item)
        except (EnvelopeError, ValueError) as exc:
            self._quarantine(record, bundle.subject(item), bundle.envelope(item), unreadable(exc), exc)
            return
        self._apply_event(record, event, bundle.env.tracestate, (bundle, item), live=live, track=track)

    def _apply_event(
        self,
        record: StreamRecord,
        event: Event,
        tracestate: str | None,
        origin: _Origin,
        *,
        live: bool,
        track: bool,
    ) -> None:
        """Apply an event and note the keys it touched. `origin` (the event's subject and envelope, or
        its bundle and item) is only read to set it aside."""
        try:
            self._fold(event, tracestate, live)
        except Exception as exc:
            # A core that cannot apply an event would raise on it at every replay: it is set aside. Cores
            # are deterministic, so every replay and every replica set it aside the same way; what a
            # partial apply left in the state is documented in docs/reliability.md.
            self._quarantine(record, *_subject_and_envelope(origin), "apply_error", exc)
            self._full = True  # whatever the event did get, the outputs are decided again from the state
            return
        if track:
            try:
                self._dirty.update(self.core.touched(self.state, event))
            except Exception as exc:
                # The event is applied; only the keys it changed are unknown: reconcile everything.
                self.metrics.touched_errors.inc()
                self._record(record, *_subject_and_envelope(origin), "touched_error", exc)
                self._full = True

    def _fold(self, event: Event, tracestate: str | None, live: bool) -> None:
        # A core that writes no events (a scheduler replica) causes no outputs: the publisher need not
        # note, per event, the trace its outputs would join.
        causes = self._causes_outputs
        if live and self.publisher.records:
            carrier = {
                key: value
                for key, value in (("traceparent", event.traceparent), ("tracestate", tracestate))
                if value is not None
            }
            with self.tracer.start_as_current_span(
                f"apply {event.type}",
                context=extract_context(carrier),
                kind=SpanKind.CONSUMER,
                attributes=span_attributes(event),
            ):
                self.state = self.core.apply(self.state, event)
                if causes:  # outputs this event causes become children of this span
                    self.publisher.seen(event.id, trace_headers().get("traceparent"))
        else:
            # Replay is not traced per event (it would graft old events onto their traces again), nor is
            # anything when spans are not recorded: outputs then carry their cause's trace context.
            self.state = self.core.apply(self.state, event)
            if causes:
                self.publisher.seen(event.id, event.traceparent)

    def _quarantine(
        self,
        record: StreamRecord,
        ref: EventSubject | None,
        env: Envelope | None,
        reason: QuarantineReason,
        exc: Exception,
    ) -> None:
        """Set a record aside: never applied, counted, logged with its sequence and recorded."""
        self.metrics.events_skipped.labels(self.name, reason).inc()
        self._record(record, ref, env, reason, exc)
        self.seq = record.seq

    def _record(
        self,
        record: StreamRecord,
        ref: EventSubject | None,
        env: Envelope | None,
        reason: QuarantineReason,
        exc: Exception,
    ) -> None:
        self.quarantine.set_aside(self.name, record, ref, env, reason, exc, now=self.clock())
