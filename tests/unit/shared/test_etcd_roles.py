"""The etcd roles: each service's role covers the keys its code uses (computed by the same classes), and
no service role may write what another service writes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, cast

import pytest

from contracts.read_model_kinds import KINDS_BY_WRITER
from services.cli.stack.identities import stack_identities
from services.cli.stack.supervisor import service_specs
from shared.security.etcd_roles import (
    EtcdRole,
    KeyRange,
    admin_role,
    service_role,
    stack_roles,
    tenant_role,
)
from shared.security.permissions import ADMIN, Identity
from shared.store.checkpoint import CheckpointStore
from shared.store.election import Election
from shared.store.etcd_ops import REVISION_PROBE_KEY, prefix_end
from shared.store.membership import SCHEDULER_GROUP, Membership
from shared.store.read_model import OBJECTS_PREFIX, ReadModel, scope

NO_ETCD = cast(Any, None)  # the key builders below never touch their client
IDENTITIES = stack_identities(service_specs(Path("/nonexistent"), 3, "", 2, standbys=True))
ROLES = stack_roles(IDENTITIES)
SERVICES = [i for i in IDENTITIES if i.user in ROLES and i.user != ADMIN]


def _writes_of(identity: Identity) -> list[bytes]:
    """Keys the service's code writes, built by that code's own classes."""
    producer = identity.producer
    store = CheckpointStore(NO_ETCD, producer)
    keys = [store.root + b"head", store.data_prefix + b"1/00000000"]
    if producer in KINDS_BY_WRITER:
        keys.append(Election(NO_ETCD, producer).key)
        model = ReadModel(NO_ETCD)
        keys += [model.key(kind, "ns1", "x") for kind in KINDS_BY_WRITER[producer]]
    if identity.role == "scheduler":
        keys.append(Membership(NO_ETCD, SCHEDULER_GROUP).prefix + producer.encode())
    return keys


@pytest.mark.parametrize("identity", SERVICES, ids=lambda i: i.user)
def test_each_service_may_do_what_its_code_does(identity: Identity) -> None:
    role = ROLES[identity.user]
    assert role.may_read(REVISION_PROBE_KEY)
    for key in _writes_of(identity):
        assert role.may_write(key), key
    store = CheckpointStore(NO_ETCD, identity.producer)
    assert role.may_read(store.root, prefix_end(store.root))  # load() reads the whole checkpoint
    if identity.producer in KINDS_BY_WRITER:
        election = Election(NO_ETCD, identity.producer).key
        assert role.may_read(election, prefix_end(election))  # the campaign watches it as a prefix
        for kind in KINDS_BY_WRITER[identity.producer]:
            assert role.may_read(scope(kind), prefix_end(scope(kind)))  # listed whole on a new term
    if identity.role == "scheduler":
        ring = Membership(NO_ETCD, SCHEDULER_GROUP).prefix
        assert role.may_read(ring, prefix_end(ring))


@pytest.mark.parametrize(("one", "other"), list(itertools.permutations(SERVICES, 2)), ids=str)
def test_no_service_writes_another_services_keys(one: Identity, other: Identity) -> None:
    if one.producer == other.producer:  # a leader and its standby share their role
        assert ROLES[one.user] == ROLES[other.user]
        return
    role = ROLES[one.user]
    for key in _writes_of(other):
        assert not role.may_write(key), (one.user, key)


def test_a_scheduler_writes_no_read_model_and_reads_no_checkpoint_but_its_own() -> None:
    role = ROLES["scheduler-0"]
    objects = OBJECTS_PREFIX.encode()
    assert not role.may_read(objects, prefix_end(objects))
    assert not role.may_write(ReadModel(NO_ETCD).key("pod", "ns1", "p"))
    assert not role.may_read(CheckpointStore(NO_ETCD, "binder").root + b"head")


def test_the_admin_reads_the_read_model_and_writes_nothing() -> None:
    role = admin_role()
    objects = OBJECTS_PREFIX.encode()
    assert role.may_read(objects, prefix_end(objects))
    assert role.readwrite == ()
    assert not role.may_read(CheckpointStore(NO_ETCD, "binder").root + b"head")
    assert ROLES[ADMIN] == role


def test_a_tenant_reads_its_namespaces_and_the_cluster_kinds_only() -> None:
    role = tenant_role("team-a", ["ns1", "ns2"])
    model = ReadModel(NO_ETCD)
    for ns in ("ns1", "ns2"):
        for kind in ("job", "podgroup", "pod"):
            assert role.may_read(scope(kind, ns), prefix_end(scope(kind, ns)))
            assert not role.may_write(model.key(kind, ns, "x"))
    assert not role.may_read(model.key("job", "ns3", "x"))
    assert not role.may_read(scope("job"), prefix_end(scope("job")))  # not every namespace at once
    assert role.may_read(model.key("queue", None, "default"))
    assert role.may_read(model.key("node", None, "n1"))
    assert not role.may_read(model.key("priorityclass", None, "high"))
    assert role.readwrite == ()


def test_a_tenant_namespace_that_looks_like_a_prefix_of_another_is_kept_apart() -> None:
    role = tenant_role("team-a", ["ns"])
    assert not role.may_read(ReadModel(NO_ETCD).key("job", "ns2", "x"))


def test_bad_tenant_arguments_are_all_named() -> None:
    with pytest.raises(ValueError) as bad:
        tenant_role("admin", [], cluster_kinds=["pod", "widget"])
    message = str(bad.value)
    for part in ("name:", "namespaces:", "'pod'", "'widget'"):
        assert part in message


def test_service_role_refuses_a_client_identity() -> None:
    with pytest.raises(ValueError, match="not a service"):
        service_role(Identity(ADMIN, ADMIN))


@pytest.mark.parametrize(
    ("outer", "key", "end", "covered"),
    [
        (KeyRange.prefix("/a/"), b"/a/x", b"", True),
        (KeyRange.prefix("/a/"), b"/a/", prefix_end(b"/a/"), True),
        (KeyRange.prefix("/a/"), b"/a", b"", False),
        (KeyRange.prefix("/a/"), b"/a/", b"/b", False),
        (KeyRange(b"/k"), b"/k", b"", True),
        (KeyRange(b"/k"), b"/k", prefix_end(b"/k"), False),
    ],
)
def test_key_range_coverage(outer: KeyRange, key: bytes, end: bytes, covered: bool) -> None:
    assert outer.covers(key, end) is covered


def test_roles_are_named_after_producers() -> None:
    assert ROLES["binder-2"].name == "binder"
    assert ROLES["scheduler-1"].name == "scheduler-1"
    assert isinstance(ROLES["node-agent"], EtcdRole)
