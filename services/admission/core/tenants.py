"""The tenant registry admission keeps (folded from TenantApplied / TenantDeleted) and the pure decision of
the operator's `tenant.apply` / `tenant.delete` requests.

A tenant is a name, the nkey public keys of its users (a request signed by one is the tenant's), the
namespaces it may write in, and the queues it may submit to (None: every queue). The registry is in the
event log, so every admission replica knows the same tenants and a restart keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contracts import payloads
from contracts.errors import FieldError
from contracts.names import dns_label_problem, dns_subdomain_problem
from contracts.parse_fields import describe

TENANT_KIND = "tenant"  # the subject kind of the registry's events
# an nkey user's public key: "U" and 55 more base32 characters
_USER_KEY = re.compile(r"^U[A-Z2-7]{55}$")
MAX_KEYS = 16  # keys a tenant holds at once (a rotation overlaps two or three)
# namespaces and queues a tenant is given: each is a permission line of every server's configuration
MAX_SCOPES = 256


@dataclass(frozen=True, slots=True)
class Tenant:
    name: str
    public_keys: tuple[str, ...]
    namespaces: tuple[str, ...]
    queues: tuple[str, ...] | None = None  # None: every queue

    def may_use(self, queue: str) -> bool:
        return self.queues is None or queue in self.queues

    def payload(self) -> payloads.TenantApplied:
        return payloads.TenantApplied(
            name=self.name, public_keys=self.public_keys, namespaces=self.namespaces, queues=self.queues
        )

    @classmethod
    def of(cls, applied: payloads.TenantApplied) -> Tenant:
        return cls(applied.name, applied.public_keys, applied.namespaces, applied.queues)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tenant:
        queues = data.get("queues")
        return cls(
            str(data["name"]),
            tuple(data["public_keys"]),
            tuple(data["namespaces"]),
            None if queues is None else tuple(queues),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "public_keys": list(self.public_keys),
            "namespaces": list(self.namespaces),
            "queues": None if self.queues is None else list(self.queues),
        }


def tenant_of_key(tenants: Mapping[str, Tenant], key: str) -> Tenant | None:
    return next((t for t in tenants.values() if key in t.public_keys), None)


def _strings(body: Mapping[str, Any], field: str, document: str, errors: list[FieldError]) -> tuple[str, ...]:
    value = body.get(field)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(FieldError(document, field, f"expected a list of strings, got {describe(value)}"))
        return ()
    return tuple(dict.fromkeys(value))  # in order, each once


def parse_tenant(
    body: Mapping[str, Any], tenants: Mapping[str, Tenant]
) -> tuple[Tenant | None, list[FieldError]]:
    """The tenant a `tenant.apply` body describes ({name, public_keys, namespaces, queues?}), or every
    problem with it: names must be DNS labels (namespaces) and subdomains (queues), keys nkey user keys
    that no other tenant holds."""
    errors: list[FieldError] = []
    name = body.get("name")
    document = f"Tenant {name}" if isinstance(name, str) and name else "request"
    if not isinstance(name, str) or dns_label_problem(name) is not None:
        problem = dns_label_problem(name) if isinstance(name, str) else None
        errors.append(FieldError(document, "name", problem or f"expected a string, got {describe(name)}"))
    keys = _strings(body, "public_keys", document, errors)
    namespaces = _strings(body, "namespaces", document, errors)
    raw_queues = body.get("queues")
    queues = None if raw_queues is None else _strings(body, "queues", document, errors)
    if not keys and "public_keys" in body and isinstance(body.get("public_keys"), list):
        errors.append(FieldError(document, "public_keys", "a tenant needs at least one key"))
    if len(keys) > MAX_KEYS:
        errors.append(FieldError(document, "public_keys", f"{len(keys)} keys; at most {MAX_KEYS}"))
    for index, key in enumerate(keys):
        if not _USER_KEY.match(key):
            errors.append(FieldError(document, f"public_keys[{index}]", f"{key!r} is not an nkey user key"))
        holder = tenant_of_key(tenants, key)
        if holder is not None and holder.name != name:
            errors.append(FieldError(document, f"public_keys[{index}]", f"held by tenant {holder.name!r}"))
    if not namespaces and isinstance(body.get("namespaces"), list):
        errors.append(FieldError(document, "namespaces", "a tenant needs at least one namespace"))
    for field, values in (("namespaces", namespaces), ("queues", queues or ())):
        if len(values) > MAX_SCOPES:
            errors.append(FieldError(document, field, f"{len(values)} given; at most {MAX_SCOPES}"))
    errors.extend(_names(namespaces, "namespaces", document, dns_label_problem))
    errors.extend(_names(queues or (), "queues", document, dns_subdomain_problem))
    if queues is not None and not queues and isinstance(raw_queues, list):
        errors.append(FieldError(document, "queues", "empty: leave it out (null) to allow every queue"))
    if errors or not isinstance(name, str):
        return None, errors
    return Tenant(name, keys, namespaces, queues), []


def _names(values: Sequence[str], field: str, document: str, check: Any) -> list[FieldError]:
    return [
        FieldError(document, f"{field}[{index}]", problem)
        for index, value in enumerate(values)
        if (problem := check(value)) is not None
    ]


def fold_tenant(tenants: dict[str, Tenant], event_type: str, name: str, payload: payloads.Payload) -> None:
    """Apply one registry event to the tenants (by name)."""
    if event_type == "TenantApplied" and isinstance(payload, payloads.TenantApplied):
        tenants[payload.name] = Tenant.of(payload)
    elif event_type == "TenantDeleted":
        tenants.pop(name, None)


@dataclass(frozen=True, slots=True)
class TenantChange:
    """What a registry request does: the event to append (None: nothing changes) and the outcome's
    action, or the errors that refuse it."""

    name: str
    action: str = ""  # created | configured | unchanged | deleted
    event: str | None = None
    payload: payloads.Payload | None = None
    errors: tuple[FieldError, ...] = ()


def decide_apply(body: Mapping[str, Any], tenants: Mapping[str, Tenant]) -> TenantChange:
    """tenant.apply: register a tenant or replace what it is (keys, namespaces, queues) whole; applying
    the same again changes nothing."""
    tenant, errors = parse_tenant(body, tenants)
    if tenant is None:
        return TenantChange(str(body.get("name", "")), errors=tuple(errors))
    current = tenants.get(tenant.name)
    if current == tenant:
        return TenantChange(tenant.name, "unchanged")
    action = "configured" if current is not None else "created"
    return TenantChange(tenant.name, action, "TenantApplied", tenant.payload())


def decide_delete(body: Mapping[str, Any], tenants: Mapping[str, Tenant]) -> TenantChange:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        return TenantChange(
            "", errors=(FieldError("request", "name", f"expected a name, got {describe(name)}"),)
        )
    if name not in tenants:
        return TenantChange(
            name, errors=(FieldError(f"Tenant {name}", "name", f"tenant {name!r} not found"),)
        )
    return TenantChange(name, "deleted", "TenantDeleted", payloads.Empty())
