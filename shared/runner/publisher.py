"""Publishing a reconcile's outputs: in order, each at most once while it is in flight, traced.

An output is in flight from its publish until its event is applied (seen in the log) or
inflight_timeout_s passes; a reconcile may return it again meanwhile and it is not sent again. After the
timeout expire() forgets it and the loop reconciles everything, which sends it again with the same id if
it is still wanted (a no-op inside the stream's dedup window). A failed publish leaves nothing in flight
and makes the loop reconcile everything at its next tick.

Plain outputs go out pipelined; an output with expected_last_subject_seq alone (a compare-and-set); the
outputs sharing a batch key as one atomic batch, at the position of the first of them. Within each
operation, events of a bundle type about objects of one namespace go out as one bundle
(shared/bus/bundles.py); each stays in flight by its own id until it comes back from the log.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from contracts.bundles import BUNDLE_FOR, BUNDLE_SUBJECT_KIND
from contracts.identity import OBJECT_EVENT_TYPES, identity_problem
from contracts.payloads import PayloadError
from shared.bus.bundles import bundle_envelope, group_for_bundles
from shared.bus.envelope import Envelope
from shared.bus.errors import (
    AtomicBatchUnsupported,
    BusError,
    ConcurrencyConflict,
    DuplicateBatch,
    EventRefused,
)
from shared.bus.jetstream import BatchItem, Bus
from shared.bus.subjects import event_subject, guard_subject
from shared.runner.metrics import RunnerMetrics
from shared.runner_types import Output
from shared.telemetry.tracing import (
    JOB_ATTRIBUTE,
    POD_ATTRIBUTE,
    TraceFields,
    extract_context,
    records_spans,
    trace_fields,
)

log = structlog.get_logger(__name__)

# How many recent events' trace contexts are kept, so an output is traced as a child of its cause.
_REMEMBERED_TRACES = 10_000
# Outputs sent before their acks are awaited. A reconcile under load decides hundreds (a burst's pods and
# statuses): with the bus's default of 256, every output past the first 256 waited for an ack, and each
# ack let the client flush just one more message (a write and a wakeup of nats-server per output, 45 µs
# of the publisher's CPU per output instead of 28). The client's own bound is 4,000 in flight.
PIPELINE_WINDOW = 2048
# How long a bundle whose send failed is sent again as it was: within the stream's duplicate window
# (shared/bus/streams.py, 120 s), where sending it again is a no-op if it was stored after all.
_PIN_S = 100.0


@dataclass(frozen=True, slots=True)
class _Step:
    """Outputs sent in one operation: kind 'pipelined', 'cas' or 'batch'."""

    kind: str
    outputs: tuple[Output, ...]


def plan_steps(outputs: Sequence[Output]) -> list[_Step]:
    """Group outputs into publish operations, keeping their order (a batch sits where it first appears)."""
    batches: dict[str, list[Output]] = {}
    for output in outputs:
        if output.batch is not None:
            batches.setdefault(output.batch, []).append(output)
    steps: list[_Step] = []
    plain: list[Output] = []
    placed: set[str] = set()
    for output in outputs:
        if output.batch is None and output.expected_last_subject_seq is None:
            plain.append(output)
            continue
        if plain:
            steps.append(_Step("pipelined", tuple(plain)))
            plain = []
        if output.batch is None:
            steps.append(_Step("cas", (output,)))
        elif output.batch not in placed:
            placed.add(output.batch)
            steps.append(_Step("batch", tuple(batches[output.batch])))
    if plain:
        steps.append(_Step("pipelined", tuple(plain)))
    return steps


class Publisher:
    def __init__(
        self,
        bus: Bus,
        producer: str,
        tracer: Tracer,
        metrics: RunnerMetrics,
        *,
        inflight_timeout_s: float,
        clock: Callable[[], float],
    ) -> None:
        self.bus = bus
        self.producer = producer
        self.tracer = tracer
        self.metrics = metrics
        self.inflight_timeout_s = inflight_timeout_s
        self.clock = clock
        self.records = records_spans(tracer)  # False: outputs carry their cause's trace context, no span
        self._inflight: dict[str, float] = {}  # output id -> monotonic time after which it may be re-sent
        # output id -> (the bundle it went out in when that send failed, when to forget it)
        self._pins: dict[str, tuple[tuple[Output, ...], float]] = {}
        self._traces: OrderedDict[str, str] = (
            OrderedDict()
        )  # event id -> traceparent its effects descend from

    @property
    def inflight(self) -> int:
        return len(self._inflight)

    def seen(self, event_id: str, traceparent: str | None) -> None:
        """An event was applied: it is no longer in flight, and outputs it causes join its trace."""
        self._inflight.pop(event_id, None)
        if self._pins:
            self._pins.pop(event_id, None)
        if traceparent is not None:
            self._traces[event_id] = traceparent
            if len(self._traces) > _REMEMBERED_TRACES:
                self._traces.popitem(last=False)

    def expire(self) -> int:
        """Forget the outputs whose events did not come back in time and say how many: their keys need a
        full reconcile (which sends them again if they are still wanted)."""
        now = time.monotonic()
        late = [output_id for output_id, deadline in self._inflight.items() if deadline <= now]
        for output_id in late:
            del self._inflight[output_id]
        if self._pins:
            self._pins = {i: pin for i, pin in self._pins.items() if pin[1] > now}
        return len(late)

    def forget_inflight(self) -> None:
        """Leadership changed hands: whatever this instance sent is the new leader's to judge."""
        self._inflight.clear()  # pins stay: a bundle sent again as it was is harmless whoever sends it

    async def publish(self, outputs: Sequence[Output], may_publish: Callable[[], bool]) -> int:
        """Send what is not in flight; returns how many outputs could not be stored (to retry later).

        may_publish is checked before each operation: a leader that lost its term stops mid-way.
        """
        now = time.monotonic()
        unique = {o.id: o for o in outputs}.values()  # a core may name the same fact twice
        in_flight = {o.id for o in unique if self._inflight.get(o.id, 0.0) > now}
        # A batch went out atomically: if any of its outputs is in flight, all of them are.
        sent_batches = {o.batch for o in unique if o.id in in_flight and o.batch is not None}
        fresh = [
            o for o in unique if o.id not in in_flight and o.batch not in sent_batches and self._allowed(o)
        ]
        failed = 0
        for step in plan_steps(fresh):
            if not may_publish():
                break
            failed += await self._send(step)
        return failed

    def _allowed(self, output: Output) -> bool:
        """False for an output about another object than its subject names (contracts/identity.py): the
        bus would refuse it, and with it whatever shares its step; a core's bug that publishing again
        cannot fix, so it is counted and logged, not retried until the core decides it again."""
        if output.type not in OBJECT_EVENT_TYPES:
            return True
        problem = identity_problem(output.type, output.payload, output.namespace, output.name)
        if problem is None:
            return True
        log.error("output refused: its payload is about another object", id=output.id, problem=problem)
        self.metrics.published(output.type, "refused")
        return False

    async def _send(self, step: _Step) -> int:
        groups = group_for_bundles(step.outputs, self._pinned_bundles())
        outputs = [o for group in groups for o in group]  # a bundle sent again may add some
        spans = [self._start_span(o) if self.records else None for o in outputs]
        span_of = {o.id: span for o, span in zip(outputs, spans, strict=True)}
        try:
            items = [self._message(group, span_of) for group in groups]
        except PayloadError as exc:
            # a core's output its type does not allow: a bug that publishing again cannot fix
            log.error("outputs refused: not what their type allows", error=str(exc))
            self._failed(groups, spans, "refused", exc)
            return 0
        deadline = time.monotonic() + self.inflight_timeout_s
        for output in outputs:
            self._inflight[output.id] = deadline
        try:
            stored = await self._store(step, items, groups)
            results = [result for group, result in zip(groups, stored, strict=True) for _ in group]
        except ConcurrencyConflict as exc:
            log.info("output lost a compare-and-set race; reconciling again", error=str(exc))
            return self._failed(groups, spans, "conflict", exc)
        except EventRefused as exc:
            # a core's output about another object than its subject (contracts/identity.py): a bug that
            # publishing again cannot fix, so it is not retried until the core decides it again
            log.error("outputs refused by the bus", error=str(exc))
            self._failed(groups, spans, "refused", exc)
            return 0
        except AtomicBatchUnsupported:
            self._failed(groups, spans, "error", None)
            raise  # the deployment cannot give the guarantee the service relies on
        except BusError as exc:
            log.warning("outputs not published; retrying at the next reconcile", error=str(exc))
            return self._failed(groups, spans, "error", exc)
        self.metrics.sent(stored)
        for output, span, result in zip(outputs, spans, results, strict=True):
            self.metrics.published(output.type, result)
            if span is not None:
                span.set_attribute("lahar.publish.result", result)
                span.end()
        return 0

    def _pinned_bundles(self) -> dict[str, tuple[Output, ...]] | None:
        if not self._pins:
            return None
        return {output_id: bundle for output_id, (bundle, _) in self._pins.items()}

    def _message(self, group: list[Output], span_of: dict[str, Span | None]) -> tuple[Envelope, str]:
        """The envelope and subject of one message: an output alone, or a bundle of several."""
        if len(group) == 1:
            o = group[0]
            return self._envelope(o, span_of[o.id]), event_subject(
                o.kind, o.namespace, o.name, o.type, self.producer
            )
        traceparents = [self._trace_fields(o, span_of[o.id])["traceparent"] for o in group]
        envelope, bundle_type, name = bundle_envelope(
            group, time=self.clock(), producer=self.producer, traceparents=traceparents
        )
        kind = BUNDLE_SUBJECT_KIND[bundle_type]
        return envelope, event_subject(kind, group[0].namespace, name, bundle_type, self.producer)

    async def _store(
        self, step: _Step, items: list[tuple[Envelope, str]], groups: list[list[Output]]
    ) -> list[str]:
        if step.kind == "pipelined":
            acks = await self.bus.publish_pipelined(items, window=PIPELINE_WINDOW)
            return ["duplicate" if ack.duplicate else "stored" for ack in acks]
        if step.kind == "cas":
            (envelope, subject), output = items[0], step.outputs[0]
            ack = await self.bus.publish(
                envelope,
                subject,
                expected_last_subject_seq=output.expected_last_subject_seq,
                guard=self._guard(output),
            )
            return ["duplicate" if ack.duplicate else "stored"]
        batch = [
            BatchItem(env, subject, group[0].expected_last_subject_seq, self._guard(group[0]))
            for (env, subject), group in zip(items, groups, strict=True)
        ]
        try:
            await self.bus.publish_batch(batch)
        except DuplicateBatch:
            return ["duplicate"] * len(batch)
        return ["stored"] * len(batch)

    def _guard(self, output: Output) -> str | None:
        """A compare-and-set covers this producer's own events about the output's object."""
        if output.expected_last_subject_seq is None:
            return None
        return guard_subject(output.kind, output.namespace, output.name, self.producer)

    def _failed(
        self, groups: list[list[Output]], spans: list[Span | None], result: str, exc: Exception | None
    ) -> int:
        outputs = [o for group in groups for o in group]
        if result == "error":
            # Stored or not, nobody knows (a lost acknowledgement; the client may still send what it
            # buffered once it reconnects): an event that may travel in a bundle is sent again exactly
            # as it went, alone or bundled, so that the stream drops it if it was stored
            # (group_for_bundles).
            until = time.monotonic() + _PIN_S
            for group in groups:
                if group[0].type in BUNDLE_FOR:
                    bundle = tuple(group)
                    self._pins.update((o.id, (bundle, until)) for o in group)
        self.metrics.sent([result] * len(groups))
        for output, span in zip(outputs, spans, strict=True):
            self._inflight.pop(output.id, None)
            self.metrics.published(output.type, result)
            if span is not None:
                span.set_status(Status(StatusCode.ERROR, str(exc) if exc else result))
                span.end()
        return len(outputs)

    def _parent(self, output: Output) -> str | None:
        return output.traceparent or self._traces.get(output.causation_id or "")

    def _start_span(self, output: Output) -> Span:
        parent = self._parent(output)
        attributes: dict[str, str] = {
            "messaging.system": "nats",
            "lahar.event.type": output.type,
            "lahar.event.id": output.id,
            JOB_ATTRIBUTE: output.correlation_id,
        }
        if output.kind == "pod":
            attributes[POD_ATTRIBUTE] = f"{output.namespace or ''}/{output.name}"
        context = extract_context({"traceparent": parent}) if parent else None
        return self.tracer.start_span(
            f"publish {output.type}", context=context, kind=SpanKind.PRODUCER, attributes=attributes
        )

    def _trace_fields(self, output: Output, span: Span | None) -> TraceFields:
        if span is None:
            return {"traceparent": self._parent(output), "tracestate": None}
        return trace_fields(trace.set_span_in_context(span))

    def _envelope(self, output: Output, span: Span | None) -> Envelope:
        fields = self._trace_fields(output, span)
        return Envelope.create(
            output.type,
            time=self.clock(),
            producer=self.producer,
            correlation_id=output.correlation_id,
            payload=output.payload,
            id=output.id,
            causation_id=output.causation_id,
            **fields,
        )
