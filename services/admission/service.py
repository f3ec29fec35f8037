"""The admission service: the view of the cluster folded from the log (an EventSourcedService whose core
only folds), and `submit`, the one path by which API requests and intake manifests become events.

Writes are guarded per object rather than by leader election, so any number of instances may run (the
API subjects are served by a queue group): every event is published with the last sequence of its
object's subject as this instance saw it. On a ConcurrencyConflict the instance catches up with the log
and decides once more; a second conflict is answered "conflict, retry".

A request is decided only after the view has caught up with the log as it stood when the request came
(so a job may name a queue created a moment ago through another instance), and answered only after the
view holds its own events (so the next request sees them).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog
from opentelemetry.context import Context
from opentelemetry.trace import Tracer

from contracts.limits import MAX_MANIFEST_BYTES, MAX_PODS_PER_JOB, MAX_PODS_PER_REQUEST
from services.admission import own_writes
from services.admission.api import ApiServer
from services.admission.context_core import (
    STORED_OBJECT_EVENTS,
    AdmissionViewCore,
    Plan,
    View,
    Write,
    plan,
    plan_in,
)
from services.admission.core.authorize import Forbidden
from services.admission.core.context import ClusterContext
from services.admission.core.decide import Request
from services.admission.core.pod_caps import PodCaps
from services.admission.core.tenants import TENANT_KIND, TenantChange
from services.admission.intake import UNWRITABLE, Conflict, IntakeConsumer, Unavailable
from services.admission.job_secrets import job_secret, jobs_needing_keys, with_secrets
from services.admission.keygen import KEYGEN, KeyGenerationError, generate_key_pair
from services.admission.metrics import AdmissionMetrics
from services.admission.port import AdmissionPort
from services.admission.submission import Submission, Submitted
from shared.bus.envelope import Envelope, derived_event_id
from shared.bus.errors import BusError, ConcurrencyConflict, DuplicateBatch
from shared.bus.jetstream import BatchItem, Bus
from shared.bus.subjects import EVENTS_STREAM, event_subject, guard_subject
from shared.runner import EventSourcedService, RunnerConfig
from shared.security.secret_keys import key_file_problems, load_public_key
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry, default_registry
from shared.telemetry.tracing import trace_fields

log = structlog.get_logger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AdmissionConfig(RunnerConfig):
    """Admission: validates and defaults API requests and intake manifests, appends the accepted events."""

    max_request_bytes: int = MAX_MANIFEST_BYTES  # larger requests and intake manifests are refused
    max_pods_per_job: int = MAX_PODS_PER_JOB  # a Job whose replicas add up to more is refused
    max_pods_per_request: int = MAX_PODS_PER_REQUEST  # so is a request (or intake message) making more
    catch_up_timeout_s: float = 5.0  # how long a request waits for the view to reach the log's end
    intake: bool = True  # consume LAHAR_INTAKE
    intake_batch: int = 128  # intake messages fetched (and caught up with, decided, written) at once
    ssh_keygen: str = KEYGEN  # makes the ssh plugin's key pairs (keygen.py)
    # the operator's nkey public keys (`lahar up` passes its admin's): a request from one may do
    # everything; none on an open bus, where every caller is the operator (core/authorize.py)
    operator_keys: tuple[str, ...] = ()
    # the node agents' public key (PEM): job secrets are sealed to it; empty: written in plain text
    secrets_public_key: str = ""

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.max_request_bytes < 1:
            problems.append(f"max_request_bytes: expected an integer >= 1, got {self.max_request_bytes}")
        if self.catch_up_timeout_s <= 0:
            problems.append(f"catch_up_timeout_s: expected a positive number, got {self.catch_up_timeout_s}")
        if self.intake_batch < 1:
            problems.append(f"intake_batch: expected an integer >= 1, got {self.intake_batch}")
        problems.extend(self.pod_caps.problems())
        problems.extend(key_file_problems("secrets_public_key", self.secrets_public_key, load_public_key))
        return problems

    @property
    def pod_caps(self) -> PodCaps:
        return PodCaps(self.max_pods_per_job, self.max_pods_per_request)


class AdmissionService(EventSourcedService[View]):
    follows_whole_log = True  # a request is decided against everything in the log before it

    def __init__(
        self,
        bus: Bus,
        etcd: Etcd,
        config: AdmissionConfig,
        *,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        registry = registry or default_registry()
        super().__init__(
            AdmissionViewCore(), bus, etcd, config, registry=registry, tracer=tracer, clock=clock
        )
        self.config: AdmissionConfig = config
        key = config.secrets_public_key
        self.secrets_recipient = load_public_key(key) if key else None
        if self.secrets_recipient is None:
            log.warning("no secrets public key: the ssh plugin's private keys go to the log in plain text")
        self.admission_metrics = AdmissionMetrics(registry)
        self._lock = asyncio.Lock()
        port = AdmissionPort(
            submit=self.submit,
            submit_many=self.submit_many,
            bus=bus,
            tracer=self.tracer,
            metrics=self.admission_metrics,
            stopping=self.stopping,
            progressed=self.progressed,
            clock=clock,
            producer=self.core.name,
            max_request_bytes=config.max_request_bytes,
            pod_caps=config.pod_caps,
            submit_tenant=self.submit_tenant,
            context=self.context,
            operator_keys=frozenset(config.operator_keys),
        )
        self.api = ApiServer(port)
        self.intake = (
            IntakeConsumer(port, batch=config.intake_batch, stream_replicas=config.stream_replicas)
            if config.intake
            else None
        )

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        tasks = [self.api.run()]
        if self.intake is not None:
            tasks.append(self.intake.run())
        return tasks

    def health(self) -> dict[str, Any]:
        health = super().health()
        health["api_serving"] = self.api.serving
        return health

    async def idle(self) -> bool:
        if self._lock.locked() or self.api.busy:
            return False
        if self.intake is not None and not await self.intake.idle():
            return False
        return await super().idle()

    def progressed(self) -> None:
        super().progressed()
        for target, waiter in self._waiters:
            if (self.seq >= target or self.stopping.is_set()) and not waiter.done():
                waiter.set_result(None)
        self._waiters = [(t, w) for t, w in self._waiters if not w.done()]

    async def caught_up(self, seq: int, *, required: bool = True) -> None:
        """Wait until the view has applied the log up to seq. When required, raise Unavailable if that
        takes longer than catch_up_timeout_s or the service is stopping (its view no longer moves);
        otherwise just stop waiting."""
        if self.seq < seq and not self.stopping.is_set():
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((seq, waiter))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, self.config.catch_up_timeout_s)
        if self.seq < seq and required:
            why = "is stopping" if self.stopping.is_set() else f"is at sequence {self.seq}, behind {seq}"
            raise Unavailable(f"admission's view of the log {why}; retry shortly")

    def context(self) -> ClusterContext:
        return self.state.context()

    async def submit(
        self,
        requests: Callable[[ClusterContext], Sequence[Request]],
        request_id: str,
        *,
        dry_run: bool = False,
    ) -> Submitted:
        """Decide the requests (built from the current context) and, unless dry_run or refused, append
        their events. Raises Unavailable / Conflict when nothing could be written for now."""
        async with self._lock:
            try:
                return await self._submit(requests, request_id, dry_run)
            finally:
                own_writes.forget(self.state.awaiting_fold)

    async def _submit(
        self, requests: Callable[[ClusterContext], Sequence[Request]], request_id: str, dry_run: bool
    ) -> Submitted:
        await self.caught_up(await self.bus.last_seq(EVENTS_STREAM))
        try:
            return await self._decide_and_write(requests, request_id, dry_run)
        except ConcurrencyConflict as exc:
            log.info("admission write lost a race; deciding again", error=str(exc))
            self.admission_metrics.conflicts.inc()
            await self.caught_up(exc.actual or await self.bus.last_seq(EVENTS_STREAM))
        try:
            return await self._decide_and_write(requests, request_id, dry_run)
        except ConcurrencyConflict as exc:
            self.admission_metrics.conflicts.inc()
            raise Conflict(f"{exc}; the object changed concurrently, retry") from exc

    async def _decide_and_write(
        self, requests: Callable[[ClusterContext], Sequence[Request]], request_id: str, dry_run: bool
    ) -> Submitted:
        decided = plan(requests(self.context()), self.state, request_id, self.clock())
        if not decided.accepted or dry_run or not decided.writes:
            return Submitted(decided, self.seq)
        decided = await self._with_secrets(decided)
        seq = await self._publish(decided.writes, request_id)
        await self.caught_up(seq, required=False)  # written: the answer does not depend on it
        return Submitted(decided, seq)

    async def submit_tenant(
        self, decide: Callable[[ClusterContext], TenantChange], request_id: str, *, dry_run: bool = False
    ) -> tuple[TenantChange, int]:
        """Decide a tenant registry request against the caught-up view and append its event, guarded
        like every object admission writes (two replicas cannot both change one tenant)."""
        async with self._lock:
            await self.caught_up(await self.bus.last_seq(EVENTS_STREAM))
            change = decide(self.context())
            if change.errors or change.event is None or change.payload is None or dry_run:
                return change, self.seq
            producer = self.core.name
            envelope = Envelope.create(
                change.event,
                time=self.clock(),
                producer=producer,
                correlation_id=f"{TENANT_KIND}/{change.name}",
                payload=change.payload,
                id=derived_event_id(request_id, 0),
                causation_id=request_id,
                **trace_fields(),
            )
            try:
                ack = await self.bus.publish(
                    envelope,
                    event_subject(TENANT_KIND, None, change.name, change.event, producer),
                    expected_last_subject_seq=self.state.subject_seq(TENANT_KIND, None, change.name),
                    guard=guard_subject(TENANT_KIND, None, change.name, producer),
                )
            except ConcurrencyConflict as exc:
                self.admission_metrics.conflicts.inc()
                raise Conflict(f"{exc}; the tenant changed concurrently, retry") from exc
            await self.caught_up(ack.seq, required=False)
            return change, ack.seq

    async def submit_many(self, batch: Sequence[Submission]) -> list[Submitted | Exception]:
        """Decide and write independent submissions (an intake batch) with one catch-up and their writes
        in flight together. Each is decided against the view with the earlier accepted ones of the batch
        assumed (a manifest may name a queue an earlier one created) and is accepted or refused whole.
        One that writes an object an earlier one of the batch wrote waits for the next round, since its
        guard needs that write's sequence. Per submission: what was decided, or the Unavailable or
        Conflict that kept it from being written now."""
        results: list[Submitted | Exception | None] = [None] * len(batch)
        async with self._lock:
            try:
                await self.caught_up(await self.bus.last_seq(EVENTS_STREAM))
                pending = list(range(len(batch)))
                while pending:
                    pending = await self._round(batch, pending, results)
            finally:
                own_writes.forget(self.state.awaiting_fold)
        return [r if r is not None else Unavailable("not decided") for r in results]

    async def _round(
        self, batch: Sequence[Submission], pending: list[int], results: list[Submitted | Exception | None]
    ) -> list[int]:
        """Decide pending submissions until one collides with an earlier one's writes, write them, and
        return the rest (once the view holds this round's writes)."""
        context = self.context()
        written: set[tuple[str, str | None, str]] = set()
        decided: list[tuple[int, Plan]] = []
        rest: list[int] = []
        for position, index in enumerate(pending):
            submission = batch[index]
            try:
                requests = submission.build(context)
            except Forbidden as exc:  # its publisher may not: it writes nothing, the others go on
                results[index] = exc
                continue
            outcome, after = plan_in(context, requests, self.state, submission.request_id, self.clock())
            objects = {(w.kind, w.namespace, w.name) for w in outcome.writes}
            if objects & written:
                rest = pending[position:]
                break
            written |= objects
            context = after
            if outcome.accepted and outcome.writes:
                decided.append((index, outcome))
            else:
                results[index] = Submitted(outcome, self.seq)
        outcomes = await asyncio.gather(
            *(self._write(outcome, batch[index]) for index, outcome in decided), return_exceptions=True
        )
        last = self.seq
        for (index, _), done in zip(decided, outcomes, strict=True):
            if isinstance(done, ConcurrencyConflict):
                self.admission_metrics.conflicts.inc()
                results[index] = Conflict(f"{done}; the object changed concurrently, retry")
            elif isinstance(done, (Unavailable, BusError, *UNWRITABLE)):
                # this submission's outcome (to retry, or to refuse); the others of the batch get theirs
                results[index] = done
            elif isinstance(done, BaseException):
                raise done
            else:
                results[index] = Submitted(done[0], done[1])
                last = max(last, done[1])
        # the next round (and the next batch) must see these writes
        await self.caught_up(last, required=False)
        return rest

    async def _write(self, decided: Plan, submission: Submission) -> tuple[Plan, int]:
        decided = await self._with_secrets(decided)
        return decided, await self._publish(decided.writes, submission.request_id, submission.trace)

    async def _with_secrets(self, decided: Plan) -> Plan:
        """The plan with the key pairs its jobs' ssh plugins need (job_secrets.py), sealed to the node
        agents when admission has their key."""
        secrets = {}
        for job in jobs_needing_keys(decided):
            try:
                pair = await generate_key_pair(f"lahar job {job.meta.key}", keygen=self.config.ssh_keygen)
            except KeyGenerationError as exc:
                log.error("cannot generate an ssh key pair", job=job.meta.key, error=str(exc))
                raise Unavailable(f"cannot generate the ssh key pair of Job {job.meta.key}: {exc}") from exc
            secrets[job.meta.key] = job_secret(job, pair, self.secrets_recipient)
            if self.secrets_recipient is None:
                log.warning("ssh key pair written unsealed (no secrets key)", job=job.meta.key)
        return with_secrets(decided, secrets) if secrets else decided

    async def _publish(self, writes: Sequence[Write], request_id: str, context: Context | None = None) -> int:
        """Append the writes (atomically when several); returns the sequence of the last one. The events
        start (or join) their job's trace from `context`, by default the current span (the request's)."""
        now = self.clock()
        trace = trace_fields(context)
        ids = [derived_event_id(request_id, index) for index in range(len(writes))]
        for event_id, w in zip(ids, writes, strict=True):  # folded back without decoding them again
            own_writes.remember(self.state.awaiting_fold, event_id, w.emit, STORED_OBJECT_EVENTS)
        items = [
            BatchItem(
                Envelope.create(
                    w.emit.type,
                    time=now,
                    producer=self.core.name,
                    correlation_id=w.correlation_id,
                    payload=w.emit.payload,
                    id=event_id,
                    causation_id=request_id,
                    **trace,
                ),
                event_subject(w.kind, w.namespace, w.name, w.emit.type, self.core.name),
                w.expected_last_subject_seq,
                guard_subject(w.kind, w.namespace, w.name, self.core.name),
            )
            for event_id, w in zip(ids, writes, strict=True)
        ]
        if len(items) == 1:
            item = items[0]
            ack = await self.bus.publish(
                item.envelope,
                item.subject,
                expected_last_subject_seq=item.expected_last_subject_seq,
                guard=item.guard,
            )
            return ack.seq
        try:
            return (await self.bus.publish_batch(items)).last_seq
        except DuplicateBatch:
            # this request's events are stored already (a retry after a lost reply)
            return await self.bus.last_seq(EVENTS_STREAM)
