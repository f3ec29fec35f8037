"""The intake stream: manifests published onto the bus by producers that do not call the API
(contracts/intake.md). Admission consumes LAHAR_INTAKE with the durable consumer "admission".

Also the manifest reading shared with the API (`parse_manifests`: every document, every error) and the
errors both report (`Invalid`, `Unavailable`, `Conflict`).

A valid manifest becomes the same events an apply request makes. An invalid one - bad YAML, an unknown
kind, invalid fields, an unknown queue, too large, not text at all - becomes one `ManifestRejected`
event listing every error and naming the source, since no one waits for a reply. Either way the message
is then acknowledged. Only a transient failure (the log did not take the write, the object changed
twice under admission) leaves it unacknowledged, to be delivered again later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import structlog
import yaml
from opentelemetry.trace import SpanKind

from contracts.codec import encode
from contracts.errors import FieldError
from contracts.objects import ApiObject
from contracts.parse import parse_documents
from services.admission.core.context import ClusterContext
from services.admission.core.decide import APPLY, Request
from shared.bus.consumers import ConsumerSpec, Delivery, DurableConsumer
from shared.bus.envelope import Envelope
from shared.bus.errors import BusError
from shared.bus.jetstream import MAX_BATCH_MESSAGES
from shared.bus.streams import intake_stream
from shared.bus.subjects import INTAKE_ROOT, INTAKE_STREAM, ObjectRef, decode_token, event_subject
from shared.runner_types import deterministic_id
from shared.telemetry.tracing import JOB_ATTRIBUTE, extract_context, trace_fields

if TYPE_CHECKING:
    from services.admission.service import AdmissionService

log = structlog.get_logger(__name__)

CONSUMER = "admission"
REJECTION_KIND = "rejection"
_FETCH_WAIT_S = 0.5  # bounds how long a stop request waits for the fetch loop
_RETRY_DELAY_S = 1.0
_MAX_DELIVER = 20
MAX_LISTED_ERRORS = 100  # keeps a rejection of a huge garbage manifest a small event


class Unavailable(RuntimeError):
    """The request cannot be decided now (the view lags the log, or the service is stopping); nothing
    was written and the same request may be sent again."""


class Conflict(Unavailable):
    """The object changed under two consecutive decisions; nothing was written."""


class Invalid(ValueError):
    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(str(e) for e in errors))


class _NoAliases(yaml.SafeLoader):
    """YAML without aliases: an alias bomb in a few bytes would otherwise expand into a huge tree."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not accepted", event.start_mark
            )
        return super().compose_node(parent, index)


def parse_manifests(data: bytes, source: str, max_bytes: int) -> list[tuple[str, ApiObject]]:
    """Every object of a manifest text, each with its document name ("<source>#<n> (<Kind> <key>)"), or
    Invalid listing every problem of every document."""
    if len(data) > max_bytes:
        raise Invalid(
            [FieldError(source, "", f"the manifest is {len(data)} bytes, the limit is {max_bytes}")]
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid([FieldError(source, "", f"the manifest is not UTF-8 text ({exc.reason})")]) from exc
    parsed, errors = parse_documents(text, source, loader=_NoAliases)
    loaded: list[tuple[str, ApiObject]] = [(d.name, d.object) for d in parsed]
    if not errors and not loaded:
        errors.append(FieldError(source, "", "the manifest holds no object"))
    if len(loaded) > MAX_BATCH_MESSAGES:
        errors.append(
            FieldError(source, "", f"{len(loaded)} objects in one request; at most {MAX_BATCH_MESSAGES}")
        )
    if errors:
        raise Invalid(errors)
    return loaded


def apply_requests(documents: Sequence[tuple[str, ApiObject]]) -> Callable[[ClusterContext], list[Request]]:
    return lambda _context: [Request(APPLY, obj, document=name) for name, obj in documents]


def intake_ref(subject: str) -> ObjectRef | None:
    """The object an intake subject names (lahar.intake.<kind>.<namespace or _>.<name>), None for any
    other subject."""
    prefix = INTAKE_ROOT + "."
    tokens = subject[len(prefix) :].split(".") if subject.startswith(prefix) else []
    if len(tokens) != 3:
        return None
    try:
        kind, namespace, name = tokens
        return ObjectRef(
            decode_token(kind), None if namespace == "_" else decode_token(namespace), decode_token(name)
        )
    except ValueError:
        return None


class IntakeConsumer:
    def __init__(self, service: AdmissionService) -> None:
        self.service = service
        self.consumer: DurableConsumer | None = None
        self._handling = False

    async def idle(self) -> bool:
        return not self._handling and self.consumer is not None and await self.consumer.pending() == 0

    async def run(self) -> None:
        service = self.service
        await service.bus.ensure_streams([intake_stream(replicas=service.config.stream_replicas)])
        spec = ConsumerSpec(INTAKE_STREAM, CONSUMER, max_deliver=_MAX_DELIVER, max_ack_pending=1000)
        self.consumer = await service.bus.durable(spec)
        try:
            while not service.stopping.is_set():
                try:
                    deliveries = await self.consumer.fetch(
                        service.config.intake_batch, timeout_s=_FETCH_WAIT_S
                    )
                except TimeoutError:
                    # nats-py's fetch can raise asyncio's TimeoutError (not its own) on an empty stream
                    continue
                for delivery in deliveries:
                    self._handling = True
                    try:
                        await self.handle(delivery)
                    finally:
                        self._handling = False
                        service.progressed()
        finally:
            await self.consumer.close()

    async def handle(self, delivery: Delivery) -> None:
        """Admit one manifest, or record its rejection; ack it unless the failure was transient."""
        service = self.service
        record = delivery.record
        source = f"{record.subject}#{record.seq}"
        # the same message delivered again gets the same request id, so its events are deduplicated
        request_id = deterministic_id(CONSUMER, "intake", record.seq, hashlib.sha256(record.data).hexdigest())
        ref = intake_ref(record.subject)
        with service.tracer.start_as_current_span(
            "admission intake",
            context=extract_context(record.headers),
            kind=SpanKind.CONSUMER,
            attributes={"messaging.system": "nats", "lahar.intake.source": source},
        ) as span:
            if ref is not None and ref.kind == "job" and ref.namespace is not None:
                span.set_attribute(JOB_ATTRIBUTE, f"{ref.namespace}/{ref.name}")
            try:
                errors = await self._admit(record.data, source, request_id)
                if errors:
                    await self._reject(errors, source, ref, request_id, record.seq)
            except (Unavailable, BusError) as exc:
                log.warning(
                    "intake manifest not admitted yet; it will be delivered again",
                    source=source,
                    error=str(exc),
                )
                service.admission_metrics.intake.labels("retried").inc()
                await delivery.nak(delay_s=_RETRY_DELAY_S)
                return
            result = "rejected" if errors else "accepted"
            span.set_attribute("lahar.admission.code", result)
        service.admission_metrics.intake.labels(result).inc()
        log.info("intake manifest", source=source, result=result, errors=len(errors))
        await delivery.ack()

    async def _admit(self, data: bytes, source: str, request_id: str) -> Sequence[FieldError]:
        """Every reason to reject the manifest (none: its events are written)."""
        try:
            documents = parse_manifests(data, source, self.service.config.max_request_bytes)
            submitted = await self.service.submit(apply_requests(documents), request_id)
        except Invalid as exc:
            return exc.errors
        except (Unavailable, BusError):
            raise
        except Exception as exc:  # a bug must not wedge the stream: the producer learns of it
            log.exception("admission failed on an intake manifest", source=source)
            return [FieldError(source, "", f"admission failed on this manifest: {type(exc).__name__}: {exc}")]
        return submitted.plan.errors

    async def _reject(
        self, errors: Sequence[FieldError], source: str, ref: ObjectRef | None, request_id: str, seq: int
    ) -> None:
        """One ManifestRejected event about the object the intake subject names (rejection
        <namespace>/<name>, or intake-<seq> when the subject names none)."""
        namespace, name = (ref.namespace, ref.name) if ref is not None else (None, f"intake-{seq}")
        key = f"{namespace}/{name}" if namespace is not None else name
        if len(errors) > MAX_LISTED_ERRORS:
            more = FieldError(source, "", f"and {len(errors) - MAX_LISTED_ERRORS} more errors")
            errors = [*errors[:MAX_LISTED_ERRORS], more]
        envelope = Envelope.create(
            "ManifestRejected",
            time=self.service.clock(),
            producer=self.service.core.name,
            correlation_id=key,
            payload={"errors": [encode(e) for e in errors], "source": source},
            # not derived_event_id(request_id, 0): that is the id of the first event should the same
            # message be accepted when delivered again (say, once its queue exists)
            id=deterministic_id(CONSUMER, "ManifestRejected", request_id),
            causation_id=request_id,
            **trace_fields(),
        )
        subject = event_subject(REJECTION_KIND, namespace, name, envelope.type, envelope.producer)
        await self.service.bus.publish(envelope, subject)
