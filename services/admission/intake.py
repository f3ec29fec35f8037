"""The intake stream: manifests published onto the bus by producers that do not call the API
(contracts/intake.md). Admission consumes LAHAR_INTAKE with the durable consumer "admission".

Also the errors the API reports too (`Unavailable`, `Conflict`); reading a manifest, shared with the
API, is manifests.py's.

A manifest is authorized as its publisher's (core/authorize.py): the tenant named by the subject's last
token, or the operator for a subject without one; one its publisher may not make is moved to
LAHAR_DEADLETTER with reason "forbidden" and writes nothing to the log. A valid manifest becomes the
same events an apply request makes. An invalid one - bad YAML, an unknown kind, an unknown field,
invalid fields, an unknown queue, too large, not text at all - becomes one `ManifestRejected` event
listing every error and naming the source, since no one waits for a reply; it lists as many errors as
fit the bus's max payload (core/rejection_size.py). A message's `Lahar-Validate: warn` header makes its
unknown fields warnings instead, which are logged (manifests.py). Either way the message is then
acknowledged. Only a transient failure (the log did not take the write, the object changed twice under
admission) leaves it unacknowledged, to be delivered again later. A message whose handling raises
(say, its rejection cannot be published) is tried a few times, then moved to LAHAR_DEADLETTER
(docs/reliability.md), as is one whose transient failure outlasts its deliveries; either way with a
ManifestRejected where one can be written.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import nats.errors
import structlog
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from contracts.bus_messages import DeadLetterReason
from contracts.errors import FieldError
from services.admission.core.authorize import Forbidden, IntakePrincipal, authorized
from services.admission.core.decide import manifest_rejected
from services.admission.core.rejection_size import fit_errors
from services.admission.manifests import Invalid, apply_requests, parse_manifests, validate_mode
from services.admission.port import AdmissionPort
from services.admission.submission import Submission, Submitted
from shared.bus.consumers import ConsumerSpec, Delivery, DurableConsumer
from shared.bus.envelope import Envelope, EnvelopeError
from shared.bus.errors import BusError
from shared.bus.poison import error_text, move_to_dead_letters
from shared.bus.streams import deadletter_stream, intake_stream
from shared.bus.subjects import INTAKE_ROOT, INTAKE_STREAM, ObjectRef, decode_token, event_subject
from shared.runner_types import deterministic_id
from shared.telemetry.tracing import JOB_ATTRIBUTE, extract_context, trace_fields

log = structlog.get_logger(__name__)

CONSUMER = "admission"
REJECTION_KIND = "rejection"
_FETCH_WAIT_S = 0.5  # bounds how long a stop request waits for the fetch loop
_RETRY_DELAY_S = 1.0
_MAX_DELIVER = 20
_ATTEMPTS = 3  # a manifest whose handling raised this often goes to the dead letters
_WARNINGS_LOGGED = 20  # of one manifest's unknown fields (Lahar-Validate: warn)
# room left in a message for its headers (message id, trace context, compare-and-set guard)
HEADERS_ALLOWANCE = 4096


class Unavailable(RuntimeError):
    """The request cannot be decided now (the view lags the log, or the service is stopping); nothing
    was written and the same request may be sent again."""


class Conflict(Unavailable):
    """The object changed under two consecutive decisions; nothing was written."""


# what writing a decided submission's events can fail with that writing them again would not mend: an
# event the bus will not carry (larger than its max payload), a payload MessagePack cannot hold
UNWRITABLE = (nats.errors.MaxPayloadError, EnvelopeError)


def too_large_to_write(source: str, max_payload: int) -> FieldError:
    """Why a manifest admission accepted is refused after all: its events do not fit a bus message."""
    message = f"its events would be larger than the {max_payload} bytes a bus message holds; make it smaller"
    return FieldError(source, "", message)


def intake_ref(subject: str) -> ObjectRef | None:
    """The object an intake subject names (lahar.intake.<kind>.<namespace or _>.<name>[.<tenant>]), None
    for any other subject."""
    return intake_parts(subject)[0]


def intake_parts(subject: str) -> tuple[ObjectRef | None, str | None]:
    """The object an intake subject names and the tenant that published it: the sixth token, which the
    server lets only that tenant's users write (None: the operator's five-token subject)."""
    prefix = INTAKE_ROOT + "."
    tokens = subject[len(prefix) :].split(".") if subject.startswith(prefix) else []
    if len(tokens) not in (3, 4):
        return None, None
    try:
        kind, namespace, name = tokens[:3]
        ref = ObjectRef(
            decode_token(kind), None if namespace == "_" else decode_token(namespace), decode_token(name)
        )
        return ref, decode_token(tokens[3]) if len(tokens) == 4 else None
    except ValueError:
        return None, None


@dataclass(slots=True)
class _Manifest:
    """One intake message on its way through a batch."""

    delivery: Delivery
    source: str
    request_id: str
    ref: ObjectRef | None
    span: Span
    errors: Sequence[FieldError] = ()  # why it cannot be admitted at all (does not parse, ...)
    submission: Submission | None = None  # what to decide, when it parsed

    @property
    def seq(self) -> int:
        return self.delivery.record.seq


class IntakeConsumer:
    def __init__(self, port: AdmissionPort, *, batch: int, stream_replicas: int) -> None:
        self.port = port
        self.batch = batch  # messages fetched at once
        self.stream_replicas = stream_replicas  # of the intake stream, should it be created
        self.consumer: DurableConsumer | None = None
        self._handling = False

    async def idle(self) -> bool:
        return not self._handling and self.consumer is not None and await self.consumer.pending() == 0

    async def run(self) -> None:
        port = self.port
        replicas = self.stream_replicas
        await port.bus.ensure_streams(
            [intake_stream(replicas=replicas), deadletter_stream(replicas=replicas)]
        )
        spec = ConsumerSpec(INTAKE_STREAM, CONSUMER, max_deliver=_MAX_DELIVER, max_ack_pending=1000)
        self.consumer = await port.bus.durable(spec)
        try:
            while not port.stopping.is_set():
                try:
                    deliveries = await self.consumer.fetch(self.batch, timeout_s=_FETCH_WAIT_S)
                except TimeoutError:
                    # nats-py's fetch can raise asyncio's TimeoutError (not its own) on an empty stream
                    continue
                if not deliveries:
                    continue
                self._handling = True
                try:
                    await self.handle(deliveries)
                finally:
                    self._handling = False
                    port.progressed()
        finally:
            await self.consumer.close()

    async def handle(self, deliveries: Sequence[Delivery]) -> None:
        """Admit a fetched batch of manifests together (one catch-up with the log, their events in flight
        together), record each rejection, and acknowledge every message whose failure, if any, was not
        transient (the others come back)."""
        manifests = [self._read(delivery) for delivery in deliveries]
        valid = [m for m in manifests if m.submission is not None]
        try:
            results = await self.port.submit_many([m.submission for m in valid])  # type: ignore[misc]
        except (Unavailable, BusError) as exc:  # the catch-up itself failed: nothing was written
            results = [exc] * len(valid)
        except Exception:  # a bug one manifest reaches: each on its own, so it fails that one only
            log.exception("admission failed on a batch of intake manifests; deciding them one by one")
            results = [await self._submit_alone(m.submission) for m in valid]  # type: ignore[arg-type]
        outcomes: dict[int, Submitted | Exception] = {id(m): r for m, r in zip(valid, results, strict=True)}
        # every manifest's rejection and acknowledgement in flight together: one write to the server for
        # the batch, not a round trip per manifest (each finish is its message's own error boundary)
        finished = await asyncio.gather(*(self._finish(m, outcomes.get(id(m))) for m in manifests))
        accepted = finished.count("accepted")
        if accepted:
            seqs = f"{manifests[0].seq}-{manifests[-1].seq}"  # of the intake stream
            log.info("intake manifests accepted", accepted=accepted, of=len(manifests), seqs=seqs)

    async def _finish(self, manifest: _Manifest, outcome: Submitted | Exception | None) -> str:
        """Settle one manifest of a batch by its outcome; what became of it: the intake metric's result,
        or "" when it could not be settled now (it comes back)."""
        try:
            if isinstance(outcome, Forbidden):
                return await self._forbid(manifest, outcome)
            if isinstance(outcome, Unavailable | BusError):
                if manifest.delivery.num_delivered >= _MAX_DELIVER:  # never delivered again: move it
                    return await self._give_up(manifest, outcome, "retries_exhausted")
            elif isinstance(outcome, Exception) and not isinstance(outcome, nats.errors.MaxPayloadError):
                return await self._failed(manifest, outcome)
            # accepted, refused, or too large for the bus whenever it comes: a rejection says so
            return await self._settle(manifest, outcome)
        except Exception as exc:  # the error boundary of one message: it cannot stop the intake
            return await self._failed(manifest, exc)
        finally:
            manifest.span.end()

    async def _submit_alone(self, submission: Submission) -> Submitted | Exception:
        try:
            return (await self.port.submit_many([submission]))[0]
        except Exception as exc:
            return exc

    async def _failed(self, manifest: _Manifest, exc: Exception) -> str:
        """Handling raised: deliver it again, or after _ATTEMPTS tries move it to the dead letters."""
        log.error("admission failed on an intake manifest", source=manifest.source, exc_info=exc)
        if manifest.delivery.num_delivered < _ATTEMPTS:
            self.port.metrics.intake.labels("retried").inc()
            with contextlib.suppress(nats.errors.Error, TimeoutError):  # unsettled, it comes back anyway
                await manifest.delivery.nak(delay_s=_RETRY_DELAY_S)
            return "retried"
        return await self._give_up(manifest, exc, "handling_failed")

    async def _forbid(self, manifest: _Manifest, exc: Forbidden) -> str:
        """A manifest its publisher may not make: moved to the dead letters (reason forbidden, naming the
        rule), and nothing in the log, not even a rejection (core/authorize.py)."""
        delivery = manifest.delivery
        try:
            await move_to_dead_letters(
                self.port.bus, delivery, CONSUMER, "forbidden", exc, now=self.port.clock()
            )
            await delivery.term()
        except (BusError, nats.errors.Error, TimeoutError) as err:
            log.warning("forbidden intake manifest not moved yet", source=manifest.source, error=str(err))
            with contextlib.suppress(nats.errors.Error, TimeoutError):
                await delivery.nak(delay_s=_RETRY_DELAY_S)
            return ""
        log.warning("intake manifest forbidden", source=manifest.source, error=str(exc))
        manifest.span.set_attribute("lahar.admission.code", "forbidden")
        self.port.metrics.intake.labels("forbidden").inc()
        return "forbidden"

    async def _give_up(self, manifest: _Manifest, exc: Exception, reason: DeadLetterReason) -> str:
        """Tell the producer (a ManifestRejected, where one can be written), move the message to
        LAHAR_DEADLETTER and take it off the intake stream; kept if the dead letter cannot be stored."""
        answer = ""
        text = f"admission could not handle this manifest ({type(exc).__name__}: {error_text(exc)})"
        try:
            await self._reject(
                [FieldError(manifest.source, "", f"{text}; it is kept in the dead letters")],
                manifest.source,
                manifest.ref,
                manifest.request_id,
                manifest.seq,
            )
            answer = "ManifestRejected"
        except Exception as err:
            log.warning(
                "no rejection written for a dead-lettered manifest", source=manifest.source, error=repr(err)
            )
        clock, delivery = self.port.clock, manifest.delivery
        try:
            await move_to_dead_letters(
                self.port.bus, delivery, CONSUMER, reason, exc, now=clock(), answer=answer
            )
            await delivery.term()
        except (BusError, nats.errors.Error, TimeoutError) as err:
            log.warning(
                "intake manifest not moved to the dead letters", source=manifest.source, error=str(err)
            )
            return ""
        log.error("intake manifest moved to the dead letters", source=manifest.source, reason=reason)
        manifest.span.set_attribute("lahar.admission.code", "dead_letter")
        self.port.metrics.intake.labels("dead_letter").inc()
        return "dead_letter"

    def _read(self, delivery: Delivery) -> _Manifest:
        """Parse one message and open its span (a child of the producer's trace, if it sent one)."""
        port = self.port
        record = delivery.record
        source = f"{record.subject}#{record.seq}"
        # the same message delivered again gets the same request id, so its events are deduplicated
        request_id = deterministic_id(CONSUMER, "intake", record.seq, hashlib.sha256(record.data).hexdigest())
        ref, tenant = intake_parts(record.subject)
        span = port.tracer.start_span(
            "admission intake",
            context=extract_context(record.headers),
            kind=SpanKind.CONSUMER,
            attributes={"messaging.system": "nats", "lahar.intake.source": source},
        )
        if ref is not None and ref.kind == "job" and ref.namespace is not None:
            span.set_attribute(JOB_ATTRIBUTE, f"{ref.namespace}/{ref.name}")
        manifest = _Manifest(delivery, source, request_id, ref, span)
        try:
            validate = validate_mode(record.headers, source)
            manifests = parse_manifests(record.data, source, port.max_request_bytes, port.pod_caps, validate)
        except Invalid as exc:
            manifest.errors = exc.errors
        except Exception as exc:  # a bug must not wedge the stream: the producer learns of it
            log.exception("admission failed on an intake manifest", source=source)
            manifest.errors = [
                FieldError(source, "", f"admission failed on this manifest: {type(exc).__name__}")
            ]
        else:
            if manifests.warnings:  # no reply reaches a producer: the log says what was passed over
                warnings = [str(w) for w in manifests.warnings[:_WARNINGS_LOGGED]]
                log.warning("intake manifest with unknown fields", source=source, warnings=warnings)
            trace_context = trace.set_span_in_context(span)
            build = authorized(apply_requests(manifests.documents), IntakePrincipal(tenant))
            manifest.submission = Submission(build, request_id, trace_context)
        return manifest

    async def _settle(self, manifest: _Manifest, outcome: Submitted | Exception | None) -> str:
        errors: Sequence[FieldError] = manifest.errors
        if isinstance(outcome, Submitted):
            errors = outcome.plan.errors
        elif isinstance(outcome, nats.errors.MaxPayloadError):
            errors = [too_large_to_write(manifest.source, self.port.bus.nc.max_payload)]
        elif isinstance(outcome, Exception) and not isinstance(outcome, Unavailable | BusError):
            log.error("admission failed on an intake manifest", source=manifest.source, error=repr(outcome))
            errors = [FieldError(manifest.source, "", f"admission failed on this manifest: {outcome!r}")]
        try:
            if isinstance(outcome, Unavailable | BusError):
                raise outcome
            if errors:
                await self._reject(errors, manifest.source, manifest.ref, manifest.request_id, manifest.seq)
        except (Unavailable, BusError) as exc:
            log.warning(
                "intake manifest not admitted yet; it will be delivered again",
                source=manifest.source,
                error=str(exc),
            )
            self.port.metrics.intake.labels("retried").inc()
            await manifest.delivery.nak(delay_s=_RETRY_DELAY_S)
            return "retried"
        result = "rejected" if errors else "accepted"
        manifest.span.set_attribute("lahar.admission.code", result)
        self.port.metrics.intake.labels(result).inc()
        if errors:
            log.info("intake manifest", source=manifest.source, result=result, errors=len(errors))
        else:  # the batch logs how many were accepted (a line per manifest cost ~2 % of admission's CPU)
            log.debug("intake manifest", source=manifest.source, result=result, errors=0)
        await manifest.delivery.ack()
        return result

    async def _reject(
        self, errors: Sequence[FieldError], source: str, ref: ObjectRef | None, request_id: str, seq: int
    ) -> None:
        """One ManifestRejected event about the object the intake subject names (rejection
        <namespace>/<name>, or intake-<seq> when the subject names none)."""
        namespace, name = (ref.namespace, ref.name) if ref is not None else (None, f"intake-{seq}")
        key = f"{namespace}/{name}" if namespace is not None else name
        now, trace = self.port.clock(), trace_fields()

        def rejection(listed: Sequence[FieldError]) -> Envelope:
            return Envelope.create(
                "ManifestRejected",
                time=now,
                producer=self.port.producer,
                correlation_id=key,
                payload=manifest_rejected(listed, source),
                # not derived_event_id(request_id, 0): that is the id of the first event should the same
                # message be accepted when delivered again (say, once its queue exists)
                id=deterministic_id(CONSUMER, "ManifestRejected", request_id),
                causation_id=request_id,
                **trace,
            )

        room = self.port.bus.nc.max_payload - HEADERS_ALLOWANCE
        envelope = rejection(fit_errors(errors, lambda listed: len(rejection(listed).encode()), room, source))
        subject = event_subject(REJECTION_KIND, namespace, name, envelope.type, envelope.producer)
        await self.port.bus.publish(envelope, subject)
