"""Who is asking, and whether they may: admission's authorization, a pure function of the caller, the
requests and the cluster context (which holds the tenant registry).

The caller comes from the connection, never from what the caller wrote: on the API, the public key the
server puts in `Nats-Request-Info` (the clients' account imports the API with `share: true`, and the
server overwrites a header of that name the caller sent); on the intake stream, the tenant named by the
subject's last token, which the server lets only that tenant's users publish (a subject without it can
only come from the operator).

- The operator (its key is one of admission's `operator_keys`) may do everything. On an open bus (no
  operator keys configured and no `Nats-Request-Info`, as in tests and `lahar up --no-auth`) everyone is.
- A controller: an API request without `Nats-Request-Info` on a secured bus comes from inside the
  services' account, where only the job-controller may publish on the API (shared/security/
  permissions.py); it makes and deletes the Jobs of CronJobs and JobFlows, and may do only that: create
  and delete Jobs, in any namespace (the CronJob or JobTemplate they come from was authorized as its
  author's).
- A tenant (a registered key) may create, update, delete and command Jobs, Pods and PodGroups in its
  namespaces only, submit them only to the queues it may use (the queue they are defaulted to counts),
  and never touch cluster-scoped kinds (Queue, PriorityClass, HyperNode, Node), queue commands or the
  tenant registry.
- Anyone else is refused.

A refusal is `Forbidden`, listing every offending request with the rule it broke; the whole request
(every document of a manifest) is refused, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from contracts.errors import FieldError
from contracts.objects import CLUSTER_SCOPED, ApiObject, Command, Job, Pod, PodGroup
from contracts.objects_flow import CronJob, JobTemplate
from contracts.parse_fields import join_path
from services.admission.core.context import DEFAULT_QUEUE, ClusterContext
from services.admission.core.decide import COMMAND, CREATE, DELETE, Request
from services.admission.core.implicit_podgroup import GROUP_NAME, QUEUE_NAME
from services.admission.core.tenants import Tenant, tenant_of_key

OPERATOR = "operator"
CONTROLLER = "controller"
TENANT = "tenant"
UNKNOWN = "unknown"
_OPERATORS_ONLY = "queues, priority classes, hypernodes, nodes and tenants are the operator's"


class Forbidden(Exception):
    """The caller may not make this request; nothing was written. errors name each rule broken."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(str(e) for e in errors))


@dataclass(frozen=True, slots=True)
class Caller:
    """Who made a request: the operator, a registered tenant, or someone admission does not know
    (`who` says how they were identified, for the refusal)."""

    kind: str
    tenant: Tenant | None = None
    who: str = ""

    @property
    def is_operator(self) -> bool:
        return self.kind == OPERATOR


@dataclass(frozen=True, slots=True)
class ApiPrincipal:
    """An API request's caller as the connection says: the key in Nats-Request-Info (None: no header)."""

    key: str | None
    operator_keys: frozenset[str]

    def resolve(self, context: ClusterContext) -> Caller:
        if self.key is None:
            # no header: not through the clients' account; only an open bus has no operator keys
            if not self.operator_keys:
                return Caller(OPERATOR)
            return Caller(CONTROLLER, who="a controller (inside the services' account)")
        if self.key in self.operator_keys:
            return Caller(OPERATOR, who=self.key)
        tenant = tenant_of_key(context.tenants, self.key)
        if tenant is not None:
            return Caller(TENANT, tenant, self.key)
        return Caller(UNKNOWN, who=f"key {self.key}")


@dataclass(frozen=True, slots=True)
class IntakePrincipal:
    """An intake message's publisher: the tenant its subject names (None: the operator's subject)."""

    tenant: str | None

    def resolve(self, context: ClusterContext) -> Caller:
        if self.tenant is None:
            return Caller(OPERATOR)
        tenant = context.tenants.get(self.tenant)
        if tenant is None:
            return Caller(UNKNOWN, who=f"tenant {self.tenant!r} (not registered)")
        return Caller(TENANT, tenant, self.tenant)


Principal = ApiPrincipal | IntakePrincipal


def not_known(caller: Caller, document: str = "request") -> FieldError:
    return FieldError(document, "", f"{caller.who} is neither the operator nor a registered tenant")


def operator_only(caller: Caller, what: str, document: str = "request") -> list[FieldError]:
    """Refusals for a caller that is not the operator, on something only the operator may do."""
    if caller.is_operator:
        return []
    if caller.tenant is None:
        return [not_known(caller, document)]
    return [FieldError(document, "", f"tenant {caller.tenant.name!r} may not {what}: {_OPERATORS_ONLY}")]


def authorize(caller: Caller, requests: Iterable[Request], context: ClusterContext) -> list[FieldError]:
    """Every rule the requests break for this caller ([] when all are allowed)."""
    if caller.is_operator:
        return []
    if caller.kind == CONTROLLER:
        return [error for request in requests for error in _controller_errors(request)]
    tenant = caller.tenant
    if tenant is None:
        return [not_known(caller)]
    errors: list[FieldError] = []
    for request in requests:
        errors.extend(_request_errors(tenant, request, context))
    return errors


def authorized(
    build: Callable[[ClusterContext], Sequence[Request]], principal: Principal
) -> Callable[[ClusterContext], Sequence[Request]]:
    """build, refusing (Forbidden) what the principal may not do, decided in the same context."""

    def checked(context: ClusterContext) -> Sequence[Request]:
        caller = principal.resolve(context)
        if not caller.is_operator and caller.tenant is None and caller.kind != CONTROLLER:
            raise Forbidden([not_known(caller)])  # before build: it may read what they may not see
        requests = build(context)
        errors = authorize(caller, requests, context)
        if errors:
            raise Forbidden(errors)
        return requests

    return checked


def controllers_only(
    build: Callable[[ClusterContext], Sequence[Request]], principal: Principal
) -> Callable[[ClusterContext], Sequence[Request]]:
    """build, refused (Forbidden) unless the caller is a controller or the operator: objects in the
    codec's encoding skip the manifest parser's checks, which the objects a controller sends passed
    already (in the CronJob or JobTemplate they come from)."""

    def checked(context: ClusterContext) -> Sequence[Request]:
        caller = principal.resolve(context)
        if caller.kind not in (OPERATOR, CONTROLLER):
            who = caller.who or (f"tenant {caller.tenant.name!r}" if caller.tenant else "the caller")
            raise Forbidden([FieldError("request", "", f"{who} may not create objects this way: apply them")])
        return build(context)

    return checked


def _controller_errors(request: Request) -> list[FieldError]:
    """A controller creates and deletes Jobs, nothing else."""
    kind = request.kind if request.operation == DELETE else getattr(request.object, "kind", "")
    if kind == "Job" and request.operation in (CREATE, DELETE):
        return []
    document = request.document or f"{kind or 'request'} {request.name}".strip()
    message = f"a controller may only create and delete Jobs, not {request.operation} a {kind}"
    return [FieldError(document, "", message)]


def _request_errors(tenant: Tenant, request: Request, context: ClusterContext) -> list[FieldError]:
    if request.operation == DELETE:
        document = request.document or f"{request.kind} {request.namespace}/{request.name}"
        return _scope_errors(tenant, request.kind, request.namespace, document, "delete")
    obj = request.object
    if obj is None:
        return []
    document = request.document or f"{obj.kind} {obj.meta.key}"
    if request.operation == COMMAND and isinstance(obj, Command):
        target = obj.target
        kind = target.kind if target is not None else ""
        return _scope_errors(tenant, kind, obj.meta.namespace, document, "command")
    errors = _scope_errors(tenant, obj.kind, obj.meta.namespace, document, "write")
    if not errors:
        errors.extend(_queue_errors(tenant, obj, context, document))
    return errors


def _scope_errors(tenant: Tenant, kind: str, namespace: str, document: str, verb: str) -> list[FieldError]:
    if kind in CLUSTER_SCOPED:
        what = f"{verb} a {kind}" if verb != "command" else f"command a {kind}"
        return [FieldError(document, "kind", f"tenant {tenant.name!r} may not {what}: {_OPERATORS_ONLY}")]
    if namespace not in tenant.namespaces:
        message = (
            f"tenant {tenant.name!r} may not {verb} in namespace {namespace!r} "
            f"(its namespaces: {', '.join(tenant.namespaces)})"
        )
        return [FieldError(document, "metadata.namespace", message)]
    return []


def _queue_errors(tenant: Tenant, obj: ApiObject, context: ClusterContext, document: str) -> list[FieldError]:
    found = submitted_queue(obj, context)
    if found is None:
        return []
    queue, path = found
    if tenant.may_use(queue):
        return []
    allowed = ", ".join(tenant.queues or ())
    message = f"tenant {tenant.name!r} may not submit to queue {queue!r} (its queues: {allowed})"
    return [FieldError(document, path, message)]


def submitted_queue(obj: ApiObject, context: ClusterContext) -> tuple[str, str] | None:
    """The queue an object is submitted to once defaulted, with the field that names it (None: an object
    that goes to no queue by itself, such as a pod joining an existing group, checked with its group)."""
    namespace_default = context.namespace_queues.get(obj.meta.namespace, DEFAULT_QUEUE)
    if isinstance(obj, Job):
        return obj.queue or DEFAULT_QUEUE, "spec.queue"
    if isinstance(obj, JobTemplate):  # the jobs a JobFlow makes of it go to its queue
        return obj.spec.queue or DEFAULT_QUEUE, "spec.queue"
    if isinstance(obj, CronJob):
        return obj.job_template.queue or DEFAULT_QUEUE, "spec.jobTemplate.spec.queue"
    if isinstance(obj, PodGroup):
        queue = obj.queue or DEFAULT_QUEUE
        return (namespace_default if queue == DEFAULT_QUEUE else queue), "spec.queue"
    if isinstance(obj, Pod):
        annotations = obj.meta.annotations
        group = annotations.get(GROUP_NAME)
        if group:
            existing = context.podgroups.get(f"{obj.meta.namespace}/{group}")
            if existing is None:
                return None  # its group is in the same request (checked there) or the pod is refused
            return existing.queue or DEFAULT_QUEUE, join_path("metadata.annotations", GROUP_NAME)
        return annotations.get(QUEUE_NAME) or namespace_default, join_path("metadata.annotations", QUEUE_NAME)
    return None
