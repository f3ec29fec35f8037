"""The tenant registry's API calls, the operator's only (`lahar tenant add|list|remove`):

- `lahar.api.tenant.apply`: {"name", "public_keys": [...], "namespaces": [...], "queues": [...] | null}
  registers a tenant or replaces what it is (TenantApplied); null or no queues: every queue.
- `lahar.api.tenant.delete`: {"name"} removes it (TenantDeleted): its keys are refused from then on.
- `lahar.api.tenant.list`: {} answers {"tenants": [{name, public_keys, namespaces, queues}]}.

The answers are the API's (api.py), with objects of kind Tenant; a caller other than the operator gets
`forbidden`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.admission.core.authorize import Caller, Forbidden, Principal, operator_only
from services.admission.core.context import ClusterContext
from services.admission.core.tenants import TenantChange, decide_apply, decide_delete
from services.admission.intake import Invalid
from services.admission.port import AdmissionPort

TENANT_VERBS = ("tenant.apply", "tenant.delete", "tenant.list")
_WHAT = {"tenant.apply": "register tenants", "tenant.delete": "remove tenants", "tenant.list": "list tenants"}


def _checked(verb: str, caller: Caller) -> None:
    errors = operator_only(caller, _WHAT[verb])
    if errors:
        raise Forbidden(errors)


async def answer_tenant(
    port: AdmissionPort,
    verb: str,
    body: Mapping[str, Any],
    principal: Principal,
    request_id: str,
    dry_run: bool,
) -> dict[str, Any]:
    """The answer to one registry call; raises Forbidden, Invalid, Unavailable or Conflict."""
    if verb == "tenant.list":
        context = port.context()
        _checked(verb, principal.resolve(context))
        tenants = [t.to_dict() for _, t in sorted(context.tenants.items())]
        return _answer(dry_run, 0, tenants=tenants)

    def decide(context: ClusterContext) -> TenantChange:
        _checked(verb, principal.resolve(context))
        tenants = context.tenants
        return decide_apply(body, tenants) if verb == "tenant.apply" else decide_delete(body, tenants)

    change, seq = await port.submit_tenant(decide, request_id, dry_run=dry_run)
    if change.errors:
        raise Invalid(change.errors)
    objects = [{"kind": "Tenant", "namespace": "", "name": change.name, "action": change.action}]
    return _answer(dry_run, seq, objects=objects)


def _answer(dry_run: bool, seq: int, **fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "accepted": True,
        "code": "ok",
        "dry_run": dry_run,
        "objects": [],
        "errors": [],
        "seq": seq,
    }
    answer.update(fields)
    return answer
