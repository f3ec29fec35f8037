"""The tenant registry's requests are input like any other: every bad field is named, nothing partial
is registered, and the sizes that end up in every server's configuration are bounded."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.core.tenants import MAX_KEYS, MAX_SCOPES, Tenant, decide_apply

KEY_A = "U" + "A" * 55
KEY_B = "U" + "B" * 55
GOOD: dict[str, Any] = {"name": "team-a", "public_keys": [KEY_A], "namespaces": ["team-a"], "queues": ["qa"]}


@pytest.mark.parametrize(
    ("change", "path", "says"),
    [
        ({"name": "Team_A"}, "name", ""),
        ({"name": None}, "name", "expected a string"),
        ({"public_keys": "UAAA"}, "public_keys", "expected a list of strings"),
        ({"public_keys": []}, "public_keys", "at least one key"),
        ({"public_keys": ["not-a-key"]}, "public_keys[0]", "not an nkey user key"),
        (
            {"public_keys": [f"U{i:055d}".replace("0", "A") for i in range(MAX_KEYS + 1)]},
            "public_keys",
            "at most",
        ),
        ({"namespaces": []}, "namespaces", "at least one namespace"),
        ({"namespaces": ["ok", "Not/Ok"]}, "namespaces[1]", ""),
        ({"namespaces": [f"ns-{i}" for i in range(MAX_SCOPES + 1)]}, "namespaces", f"at most {MAX_SCOPES}"),
        ({"queues": []}, "queues", "leave it out"),
        ({"queues": [1, 2]}, "queues", "expected a list of strings"),
        ({"queues": [f"q-{i}" for i in range(MAX_SCOPES + 1)]}, "queues", f"at most {MAX_SCOPES}"),
    ],
)
def test_a_bad_field_is_named_and_nothing_is_registered(change: dict[str, Any], path: str, says: str) -> None:
    decided = decide_apply({**GOOD, **change}, {})
    assert decided.event is None
    assert any(e.path == path and says in e.message for e in decided.errors), decided.errors


def test_a_key_another_tenant_holds_is_refused_and_the_good_request_registers() -> None:
    held = {"team-b": Tenant("team-b", (KEY_B,), ("team-b",))}
    refused = decide_apply({**GOOD, "public_keys": [KEY_B]}, held)
    assert refused.event is None and "held by tenant 'team-b'" in refused.errors[0].message
    registered = decide_apply(GOOD, held)
    assert (registered.event, registered.action, registered.errors) == ("TenantApplied", "created", ())
