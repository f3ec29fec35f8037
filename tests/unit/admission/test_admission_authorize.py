"""Admission's authorization (core/authorize.py): who the caller is (operator, registered tenant, nobody
admission knows) and, for a tenant, every rule: its namespaces, its queues (the defaulted one counts),
no cluster-scoped kinds, no queue commands, all or none of a multi-document request. And the tenant
registry's own decisions (core/tenants.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from admission_manifests import command_doc, context, job_doc, parse, pod_doc, podgroup_doc, queue_doc

from contracts import payloads
from contracts.objects import Command
from services.admission.core.authorize import (
    CONTROLLER,
    OPERATOR,
    TENANT,
    UNKNOWN,
    ApiPrincipal,
    Caller,
    Forbidden,
    IntakePrincipal,
    authorize,
    authorized,
)
from services.admission.core.context import ClusterContext
from services.admission.core.decide import APPLY, COMMAND, DELETE, Request
from services.admission.core.implicit_podgroup import GROUP_NAME, QUEUE_NAME
from services.admission.core.tenants import Tenant, decide_apply, decide_delete, fold_tenant
from services.admission.intake import intake_parts
from shared.bus.subjects import ObjectRef, intake_subject, tenant_intake_subject

OPERATOR_KEY = "U" + "O" * 55
KEY_A, KEY_B = "U" + "A" * 55, "U" + "B" * 55
A = Tenant("a", (KEY_A,), ("a", "a-dev"), ("qa",))
B = Tenant("b", (KEY_B,), ("b",), None)  # every queue
GROUP = parse(podgroup_doc("group-qa", queue="qa") | {"metadata": {"name": "group-qa", "namespace": "a"}})
CONTEXT = replace(context(), podgroups={"a/group-qa": GROUP}, tenants={"a": A, "b": B})


def applying(doc: dict[str, Any], namespace: str = "") -> Request:
    obj = parse(doc)
    if namespace:
        obj = replace(obj, meta=replace(obj.meta, namespace=namespace))  # type: ignore[arg-type]
    return Request(APPLY, obj)


def command(action: str, kind: str, target: str, namespace: str) -> Request:
    obj = parse(command_doc(action, kind, target))
    assert isinstance(obj, Command)
    return Request(COMMAND, replace(obj, meta=replace(obj.meta, namespace=namespace)))


def paths(errors: list[Any]) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in errors]


TENANT_A = Caller(TENANT, A, KEY_A)


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (applying(job_doc("j", "a", queue="qa")), []),
        (applying(job_doc("j", "a-dev", queue="qa")), []),
        (applying(job_doc("j", "b", queue="qa")), [("metadata.namespace", "may not write in namespace 'b'")]),
        (applying(job_doc("j", "a", queue="qb")), [("spec.queue", "may not submit to queue 'qb'")]),
        # the queue a job is defaulted to counts
        (applying(job_doc("j", "a", queue="")), [("spec.queue", "may not submit to queue 'default'")]),
        (applying(podgroup_doc("pg", queue="qb"), "a"), [("spec.queue", "may not submit to queue 'qb'")]),
        (applying(podgroup_doc("pg", queue="qa"), "a"), []),
        (applying(pod_doc("p", {QUEUE_NAME: "qa"}), "a"), []),
        (
            applying(pod_doc("p"), "a"),
            [(f"metadata.annotations[{QUEUE_NAME}]", "may not submit to queue 'default'")],
        ),
        (applying(pod_doc("p", {GROUP_NAME: "group-qa"}), "a"), []),  # joins a group in its queue
        (applying(queue_doc("qz")), [("kind", "may not write a Queue")]),
        (Request(DELETE, kind="Job", namespace="a", name="j"), []),
        (
            Request(DELETE, kind="Job", namespace="b", name="j"),
            [("metadata.namespace", "may not delete in namespace 'b'")],
        ),
        (Request(DELETE, kind="Queue", name="qa"), [("kind", "may not delete a Queue")]),
        (Request(DELETE, kind="PriorityClass", name="high"), [("kind", "may not delete a PriorityClass")]),
        (command("AbortJob", "Job", "j", "a"), []),
        (command("AbortJob", "Job", "j", "b"), [("metadata.namespace", "may not command in namespace 'b'")]),
        (command("CloseQueue", "Queue", "qa", "a"), [("kind", "may not command a Queue")]),
    ],
)
def test_a_tenant_writes_only_in_its_namespaces_and_queues(
    request_: Request, expected: list[tuple[str, str]]
) -> None:
    found = paths(authorize(TENANT_A, [request_], CONTEXT))
    assert len(found) == len(expected), found
    for (path, message), (want_path, want) in zip(found, expected, strict=True):
        assert path == want_path and want in message and "tenant 'a'" in message


def test_a_tenant_without_a_queue_list_may_use_every_queue() -> None:
    caller = Caller(TENANT, B, KEY_B)
    assert (
        authorize(caller, [applying(job_doc("j", "b", queue="qa")), applying(job_doc("k", "b"))], CONTEXT)
        == []
    )


def test_every_offending_document_of_a_request_is_named_and_the_operator_may_do_it_all() -> None:
    requests = [
        applying(job_doc("ok", "a", queue="qa")),
        applying(job_doc("x", "b", queue="qa")),
        applying(queue_doc("qz")),
    ]
    errors = authorize(TENANT_A, requests, CONTEXT)
    assert [e.document for e in errors] == ["Job b/x", "Queue qz"]
    assert authorize(Caller(OPERATOR), requests, CONTEXT) == []
    unknown = authorize(Caller(UNKNOWN, who="key UX"), requests, CONTEXT)
    assert [e.message for e in unknown] == ["key UX is neither the operator nor a registered tenant"]


@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        (ApiPrincipal(None, frozenset()), OPERATOR),  # an open bus: no header, no operator keys
        (ApiPrincipal(None, frozenset({OPERATOR_KEY})), CONTROLLER),  # inside the services' account
        (ApiPrincipal(OPERATOR_KEY, frozenset({OPERATOR_KEY})), OPERATOR),
        (ApiPrincipal(KEY_A, frozenset({OPERATOR_KEY})), TENANT),
        (ApiPrincipal("U" + "Z" * 55, frozenset({OPERATOR_KEY})), UNKNOWN),
        (ApiPrincipal("U" + "Z" * 55, frozenset()), UNKNOWN),  # a key, but nobody said it is the operator
        (IntakePrincipal(None), OPERATOR),  # only the operator may publish the five-token subject
        (IntakePrincipal("a"), TENANT),
        (IntakePrincipal("gone"), UNKNOWN),
    ],
)
def test_the_caller_is_who_the_connection_says(
    principal: ApiPrincipal | IntakePrincipal, expected: str
) -> None:
    assert principal.resolve(CONTEXT).kind == expected


def test_an_authorized_build_refuses_before_anything_is_decided() -> None:
    built: list[ClusterContext] = []

    def build(ctx: ClusterContext) -> list[Request]:
        built.append(ctx)
        return [applying(job_doc("j", "b", queue="qa"))]

    with pytest.raises(Forbidden, match="may not write in namespace 'b'"):
        authorized(build, ApiPrincipal(KEY_A, frozenset({OPERATOR_KEY})))(CONTEXT)
    with pytest.raises(Forbidden, match="neither the operator"):
        authorized(build, ApiPrincipal("U" + "Z" * 55, frozenset({OPERATOR_KEY})))(CONTEXT)
    assert len(built) == 1  # an unknown caller's request is not even built
    assert authorized(build, IntakePrincipal(None))(CONTEXT) == build(CONTEXT)


def test_the_registry_registers_replaces_and_removes_tenants() -> None:
    body = {"name": "c", "public_keys": ["U" + "C" * 55], "namespaces": ["c"], "queues": None}
    created = decide_apply(body, CONTEXT.tenants)
    assert (created.action, created.event) == ("created", "TenantApplied")
    tenants = dict(CONTEXT.tenants)
    assert created.payload is not None
    fold_tenant(tenants, "TenantApplied", "c", created.payload)
    assert tenants["c"] == Tenant("c", ("U" + "C" * 55,), ("c",), None)
    assert decide_apply(body, tenants).action == "unchanged"
    rotated = decide_apply({**body, "public_keys": ["U" + "D" * 55]}, tenants)
    assert rotated.action == "configured"
    deleted = decide_delete({"name": "c"}, tenants)
    assert (deleted.action, deleted.event) == ("deleted", "TenantDeleted")
    fold_tenant(tenants, "TenantDeleted", "c", payloads.Empty())
    assert "c" not in tenants
    assert [e.message for e in decide_delete({"name": "c"}, tenants).errors] == ["tenant 'c' not found"]


def test_a_registry_request_names_every_bad_field() -> None:
    body = {"name": "Bad_Name", "public_keys": ["nope", KEY_B], "namespaces": [], "queues": []}
    found = {e.path for e in decide_apply(body, CONTEXT.tenants).errors}
    assert found == {"name", "public_keys[0]", "public_keys[1]", "namespaces", "queues"}


def test_an_intake_subject_names_its_object_and_the_publishing_tenant() -> None:
    job_a = ObjectRef("job", "a", "j")
    assert intake_parts(tenant_intake_subject("job", "a", "j", "a")) == (job_a, "a")
    assert intake_parts(intake_subject("job", "a", "j")) == (job_a, None)  # the operator's
    assert intake_parts(intake_subject("job", "a", "j") + ".a.more") == (None, None)
