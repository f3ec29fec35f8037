"""Admission's request/reply API on core NATS (queue group "admission", so instances share the load).

- `lahar.api.apply`: the body is manifest text, YAML or JSON, possibly several documents.
- `lahar.api.create`: a JSON object {"object": an object in contracts.codec's tagged encoding}, refused if
  it exists (kubectl create). The controllers' verb (the job-controller makes a CronJob's or JobFlow's
  jobs with it: core/authorize.py), and the operator's; the object is checked as an applied one is.
- `lahar.api.delete`: a JSON object {"kind", "namespace", "name"}.
- `lahar.api.command`: a JSON object {"action", "target_kind", "namespace", "name"}; actions suspend
  (AbortJob), resume (ResumeJob), restart (RestartJob), terminate (TerminateJob), complete (CompleteJob),
  open (OpenQueue), close (CloseQueue) or a Volcano action name; and "update" with "weight" for a Queue
  (vcctl queue operate -a update).

Headers, all optional: `Lahar-Dry-Run: true` decides without writing; `Lahar-Request-Id` makes a retried
request idempotent (event ids derive from it); `Lahar-Source` names the manifest in errors (a file name;
default "request"); `Lahar-Validate` (apply: strict, warn or ignore, kubectl's --validate) says whether
a field its kind's API does not know is an error (strict, the default), a warning or passed over;
`traceparent` makes the request's span a child of the caller's.

- `lahar.api.tenant.apply|delete|list`: the tenant registry, the operator's only (tenant_api.py).

Every request is authorized by its caller's key, which the server writes into `Nats-Request-Info`
(core/authorize.py): a tenant may act only in its namespaces and queues, the operator everywhere.

Every reply is JSON {"accepted", "code", "dry_run", "objects": [{kind, namespace, name, action}],
"errors": [{document, path, message}], "warnings": [the same], "seq"}; code is one of ok, invalid,
forbidden, conflict, unavailable, error. A refused request writes nothing. A reply lists as many errors
as fit the bus's max payload (core/rejection_size.py), so every request is answered, however much was
wrong with it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from opentelemetry.trace import SpanKind

from contracts.codec import DecodeError, decode_object
from contracts.errors import FieldError
from contracts.objects import API_VERSIONS, CLUSTER_SCOPED, Command, ObjectMeta, OwnerReference
from contracts.parse_fields import describe
from services.admission.context_core import Plan
from services.admission.core.authorize import ApiPrincipal, Forbidden, authorized, controllers_only
from services.admission.core.command_rules import ACTIONS_BY_KIND
from services.admission.core.context import ClusterContext
from services.admission.core.decide import COMMAND, CREATE, DELETE, UPDATE, Request
from services.admission.core.rejection_size import fit_errors
from services.admission.intake import HEADERS_ALLOWANCE, Conflict, Unavailable, too_large_to_write
from services.admission.manifests import Invalid, apply_requests, parse_manifests, validate_mode
from services.admission.port import AdmissionPort
from services.admission.tenant_api import TENANT_VERBS, answer_tenant
from shared.bus.errors import BusError
from shared.telemetry.tracing import JOB_ATTRIBUTE, extract_context

log = structlog.get_logger(__name__)

QUEUE_GROUP = "admission"
VERBS = ("apply", "create", "delete", "command", *TENANT_VERBS)
# the server's account of who sent a request crossing an account boundary (an import with share: true)
REQUEST_INFO_HEADER = "Nats-Request-Info"
DRY_RUN_HEADER = "Lahar-Dry-Run"
REQUEST_ID_HEADER = "Lahar-Request-Id"
SOURCE_HEADER = "Lahar-Source"
_MAX_SOURCE_CHARS = 200
REQUEST = "request"  # how a request body is named in errors
# friendly names of the Command actions (vcctl's verbs), each with the kind it acts on
ACTIONS: Mapping[str, tuple[str, str]] = {
    "suspend": ("AbortJob", "Job"),
    "abort": ("AbortJob", "Job"),
    "resume": ("ResumeJob", "Job"),
    "restart": ("RestartJob", "Job"),
    "terminate": ("TerminateJob", "Job"),
    "complete": ("CompleteJob", "Job"),
    "open": ("OpenQueue", "Queue"),
    "close": ("CloseQueue", "Queue"),
}
_KINDS = {kind.lower(): kind for kind in API_VERSIONS}


def _field(body: Mapping[str, Any], name: str, *, required: bool = True) -> str:
    value = body.get(name, "")
    if not isinstance(value, str) or (required and not value):
        raise Invalid([FieldError(REQUEST, name, f"expected a non-empty string, got {describe(value)}")])
    return value


def _json_object(data: bytes) -> Mapping[str, Any]:
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Invalid([FieldError(REQUEST, "", f"the request is not JSON: {exc}")]) from exc
    if not isinstance(body, dict):
        raise Invalid([FieldError(REQUEST, "", f"expected a JSON object, got {type(body).__name__}")])
    return body


def _kind(value: str, path: str) -> str:
    kind = _KINDS.get(value.lower())
    if kind is None:
        raise Invalid(
            [FieldError(REQUEST, path, f"expected one of {', '.join(API_VERSIONS)}, got {describe(value)}")]
        )
    return kind


def create_requests(body: Mapping[str, Any]) -> Callable[[ClusterContext], list[Request]]:
    encoded = body.get("object")
    if not isinstance(encoded, dict):
        raise Invalid([FieldError(REQUEST, "object", f"expected an encoded object, got {describe(encoded)}")])
    try:
        obj = decode_object(encoded)
    except (DecodeError, TypeError, ValueError) as exc:
        raise Invalid([FieldError(REQUEST, "object", f"not an object lahar can read: {exc}")]) from exc
    document = f"{obj.kind} {obj.meta.key}"
    return lambda _context: [Request(CREATE, obj, document=document)]


def delete_requests(body: Mapping[str, Any]) -> Callable[[ClusterContext], list[Request]]:
    kind = _kind(_field(body, "kind"), "kind")
    name = _field(body, "name")
    namespace = "" if kind in CLUSTER_SCOPED else _field(body, "namespace", required=False) or "default"
    return lambda _context: [Request(DELETE, kind=kind, namespace=namespace, name=name)]


def command_requests(body: Mapping[str, Any]) -> Callable[[ClusterContext], list[Request]]:
    action = _field(body, "action")
    name = _field(body, "name")
    namespace = _field(body, "namespace", required=False) or "default"
    if action == "update":
        return _queue_update(body, name)
    # a Volcano action name (AbortJob, OpenQueue, ...) names the kind it acts on too
    implied = next((kind for kind, actions in ACTIONS_BY_KIND.items() if action in actions), "")
    volcano, kind = ACTIONS.get(action.lower(), (action, implied))
    target = body.get("target_kind") or kind or "Job"
    if not isinstance(target, str):
        raise Invalid([FieldError(REQUEST, "target_kind", f"expected Job or Queue, got {describe(target)}")])
    target_kind = _kind(target, "target_kind")
    command = Command(
        meta=ObjectMeta("", namespace),
        action=volcano,
        target=OwnerReference(kind=target_kind, name=name, api_version=API_VERSIONS[target_kind]),
    )
    return lambda _context: [Request(COMMAND, command, document=f"Command on {target_kind} {name}")]


def _queue_update(body: Mapping[str, Any], name: str) -> Callable[[ClusterContext], list[Request]]:
    """vcctl queue operate -a update -w N: a merge patch of the queue's weight."""
    weight = body.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int) or weight <= 0:
        raise Invalid([FieldError(REQUEST, "weight", f"expected an integer > 0, got {describe(weight)}")])
    document = f"Queue {name}"

    def build(context: ClusterContext) -> list[Request]:
        queue = context.queues.get(name)
        if queue is None:
            raise Invalid([FieldError(document, "metadata.name", f"Queue {name!r} not found")])
        return [Request(UPDATE, replace(queue, weight=weight), document=document)]

    return build


def request_key(headers: Mapping[str, str]) -> str | None:
    """The caller's public key from the server's Nats-Request-Info header (None: no header; "" one that
    names no user, which no key matches)."""
    raw = next((v for k, v in headers.items() if k.lower() == REQUEST_INFO_HEADER.lower()), None)
    if raw is None:
        return None
    try:
        info = json.loads(raw)
    except (json.JSONDecodeError, TypeError):
        return ""
    user = info.get("user") if isinstance(info, dict) else None
    return user if isinstance(user, str) else ""


def reply(
    plan: Plan | None,
    *,
    code: str,
    dry_run: bool,
    seq: int = 0,
    errors: Sequence[FieldError] = (),
    warnings: Sequence[FieldError] = (),
    max_bytes: int | None = None,
    source: str = REQUEST,
) -> dict[str, Any]:
    """The reply; with max_bytes, it lists only as many errors (and warnings) as keep its JSON within
    that size, and says how many more there were as one of `source` (what the request's documents are
    named after)."""
    accepted = plan is not None and plan.accepted
    found = list(errors) or (list(plan.errors) if plan is not None else [])
    answer: dict[str, Any] = {
        "accepted": accepted,
        "code": code if not accepted else "ok",
        "dry_run": dry_run,
        "objects": [
            {"kind": o.kind, "namespace": o.namespace, "name": o.name, "action": o.action}
            for o in (plan.outcomes if plan is not None else ())
        ],
        "errors": _listed(found),
        "warnings": _listed(warnings),
        "seq": seq,
    }
    if max_bytes is not None and warnings:  # the errors are what a refused request needs: fitted last

        def size_warned(listed: Sequence[FieldError]) -> int:
            return len(json.dumps({**answer, "warnings": _listed(listed)}).encode())

        answer["warnings"] = _listed(fit_errors(warnings, size_warned, max_bytes, source))
    if max_bytes is not None and found:

        def size(listed: Sequence[FieldError]) -> int:
            return len(json.dumps({**answer, "errors": _listed(listed)}).encode())

        answer["errors"] = _listed(fit_errors(found, size, max_bytes, source))
    return answer


def _listed(errors: Sequence[FieldError]) -> list[dict[str, str]]:
    return [{"document": e.document, "path": e.path, "message": e.message} for e in errors]


def encode_reply(answer: Mapping[str, Any]) -> bytes:
    return json.dumps(answer).encode()


class ApiServer:
    def __init__(self, port: AdmissionPort) -> None:
        self.port = port
        self.serving = False
        self._inflight = 0

    @property
    def busy(self) -> bool:
        return self._inflight > 0

    async def run(self) -> None:
        nc = self.port.bus.nc
        subs: list[Subscription] = []
        for verb in VERBS:
            subs.append(await nc.subscribe(f"lahar.api.{verb}", queue=QUEUE_GROUP, cb=self._callback(verb)))
        self.serving = True
        log.info("serving the admission API", subjects=[s.subject for s in subs], queue_group=QUEUE_GROUP)
        try:
            await self.port.stopping.wait()
        finally:
            self.serving = False
            # stop taking requests, answer the ones received
            await asyncio.gather(*(sub.drain() for sub in subs), return_exceptions=True)

    def _callback(self, verb: str) -> Callable[[Msg], Any]:
        async def handle(msg: Msg) -> None:
            self._inflight += 1
            try:
                answer = await self.answer(verb, msg.data, dict(msg.headers or {}))
                if msg.reply:
                    await msg.respond(encode_reply(answer))
            except Exception as exc:  # a request must never take the subscription down
                log.exception("admission request failed", verb=verb)
                await self._answer_failure(msg, exc)
            finally:
                self._inflight -= 1
                self.port.progressed()

        return handle

    async def _answer_failure(self, msg: Msg, exc: Exception) -> None:
        """Tell the caller the request failed rather than let it wait for a reply that never comes."""
        if not msg.reply:
            return
        message = f"admission failed on this request: {type(exc).__name__}"
        answer = reply(None, code="error", dry_run=False, errors=[FieldError(REQUEST, "", message)])
        try:
            await msg.respond(encode_reply(answer))
        except Exception:
            log.exception("admission could not answer a request")

    async def answer(self, verb: str, data: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
        """The reply to one request, inside a span that the accepted events carry."""
        port = self.port
        dry_run = headers.get(DRY_RUN_HEADER, "").strip().lower() in ("1", "true", "yes")
        request_id = headers.get(REQUEST_ID_HEADER) or str(uuid.uuid4())
        started = time.perf_counter()
        with port.tracer.start_as_current_span(
            f"admission {verb}",
            context=extract_context(headers),
            kind=SpanKind.SERVER,
            attributes={"messaging.system": "nats", "lahar.request.id": request_id, "lahar.dry_run": dry_run},
        ) as span:
            source = headers.get(SOURCE_HEADER, "").strip()[:_MAX_SOURCE_CHARS]
            principal = ApiPrincipal(request_key(headers), port.operator_keys)
            answer = await self._decide(
                verb,
                data,
                headers,
                request_id,
                dry_run,
                source if source.isprintable() else "",
                principal,
            )
            span.set_attribute("lahar.admission.code", answer["code"])
            jobs = [o for o in answer["objects"] if o["kind"] == "Job"]
            if len(jobs) == 1:
                span.set_attribute(JOB_ATTRIBUTE, f"{jobs[0]['namespace']}/{jobs[0]['name']}")
        result = "accepted" if answer["accepted"] else {"ok": "rejected"}.get(answer["code"], answer["code"])
        port.metrics.requests.labels(verb, result).inc()
        port.metrics.duration.labels(verb).observe(time.perf_counter() - started)
        log.info(
            "admission request",
            verb=verb,
            request_id=request_id,
            code=answer["code"],
            caller=principal.key,
            objects=len(answer["objects"]),
            errors=len(answer["errors"]),
        )
        return answer

    async def _decide(
        self,
        verb: str,
        data: bytes,
        headers: Mapping[str, str],
        request_id: str,
        dry_run: bool,
        source: str,
        principal: ApiPrincipal,
    ) -> dict[str, Any]:
        limit = self.port.max_request_bytes
        room = self.port.bus.nc.max_payload - HEADERS_ALLOWANCE
        warnings: Sequence[FieldError] = ()
        try:
            if verb in TENANT_VERBS:
                if len(data) > limit:
                    raise Invalid([FieldError(REQUEST, "", f"the request is {len(data)} bytes")])
                body = _json_object(data) if data.strip() else {}
                return await answer_tenant(self.port, verb, body, principal, request_id, dry_run)
            build: Callable[[ClusterContext], Sequence[Request]]
            if verb == "apply":
                validate = validate_mode(headers, source or REQUEST)
                manifests = parse_manifests(data, source or REQUEST, limit, self.port.pod_caps, validate)
                warnings = manifests.warnings
                build = apply_requests(manifests.documents)
            elif len(data) > limit:
                message = f"the request is {len(data)} bytes, the limit is {limit}"
                raise Invalid([FieldError(REQUEST, "", message)])
            elif verb == "create":
                build = controllers_only(create_requests(_json_object(data)), principal)
            elif verb == "delete":
                build = delete_requests(_json_object(data))
            else:
                build = command_requests(_json_object(data))
            submitted = await self.port.submit(authorized(build, principal), request_id, dry_run=dry_run)
        except Forbidden as exc:  # checked before anything is decided: nothing was written
            return reply(None, code="forbidden", dry_run=dry_run, errors=exc.errors, max_bytes=room)
        except Invalid as exc:
            return reply(
                None,
                code="invalid",
                dry_run=dry_run,
                errors=exc.errors,
                max_bytes=room,
                source=source or REQUEST,
            )
        except Conflict as exc:
            return reply(None, code="conflict", dry_run=dry_run, errors=[FieldError(REQUEST, "", str(exc))])
        except (Unavailable, BusError) as exc:
            return reply(
                None, code="unavailable", dry_run=dry_run, errors=[FieldError(REQUEST, "", str(exc))]
            )
        except nats.errors.MaxPayloadError:
            error = too_large_to_write(source or REQUEST, self.port.bus.nc.max_payload)
            return reply(None, code="invalid", dry_run=dry_run, errors=[error])
        except Exception as exc:  # a bug: the caller still gets an answer, the log the traceback
            log.exception("admission could not decide a request", verb=verb, request_id=request_id)
            message = f"admission failed on this request: {type(exc).__name__}: {exc}"
            return reply(None, code="error", dry_run=dry_run, errors=[FieldError(REQUEST, "", message)])
        return reply(
            submitted.plan,
            code="invalid",
            dry_run=dry_run,
            seq=submitted.seq,
            warnings=warnings,
            max_bytes=room,
            source=source or REQUEST,
        )
