"""etcd authentication against a real etcd: provisioned with the stack's roles, every service user does
what its code does through the same classes (checkpoints, election, read model, the scheduler ring),
and nothing of another service's; clients without a token are refused; an expired token is renewed."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from aetcd import rpc

from services.cli.stack.identities import stack_identities
from services.cli.stack.supervisor import service_specs
from shared.security.etcd_roles import ROOT, EtcdRole, stack_roles
from shared.security.permissions import Identity
from shared.servers import EtcdServer
from shared.store.checkpoint import CheckpointStore
from shared.store.election import Election
from shared.store.etcd import Etcd, EtcdError
from shared.store.etcd_auth import EtcdAuthError, EtcdCredentials
from shared.store.etcd_provision import auth_enabled, disable, provision, users_of
from shared.store.membership import SCHEDULER_GROUP, Membership
from shared.store.read_model import ReadModel
from tests.integration.conftest import ETCD_TEST_ARGS

TOKEN_TTL_S = 1  # etcd's simple tokens expire after this long without use


class AuthCluster:
    def __init__(self, server: EtcdServer, roles: dict[str, EtcdRole]) -> None:
        self.server = server
        self.roles = roles
        self.root_password = secrets.token_urlsafe(16)
        self.passwords = {user: secrets.token_urlsafe(16) for user in roles}

    async def provision(self) -> None:
        await provision(
            [self.server.endpoint],
            root_password=self.root_password,
            users=users_of(self.roles, self.passwords),
        )

    async def client(self, user: str) -> Etcd:
        password = self.root_password if user == ROOT else self.passwords[user]
        return await Etcd.connect(*self.server.endpoint, credentials=EtcdCredentials(user, password))


@pytest.fixture
def auth_etcd(tmp_path: Path) -> Iterator[EtcdServer]:
    args = (*ETCD_TEST_ARGS, "--auth-token-ttl", str(TOKEN_TTL_S))
    server = EtcdServer.start_in(tmp_path / "etcd", extra_args=args)
    yield server
    server.stop()


@pytest.fixture
async def cluster(auth_etcd: EtcdServer, tmp_path: Path) -> AsyncIterator[AuthCluster]:
    specs = service_specs(tmp_path, sim_nodes=2, node_name="", replicas=2, standbys=True)
    made = AuthCluster(auth_etcd, stack_roles(stack_identities(specs)))
    await made.provision()
    yield made


async def test_without_a_token_nothing_is_read_or_written(cluster: AuthCluster) -> None:
    channel = grpc.aio.insecure_channel(f"{cluster.server.host}:{cluster.server.port}")
    try:
        kv = rpc.KVStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as read:
            await kv.Range(rpc.RangeRequest(key=b"/lahar/objects/", range_end=b"/lahar/objects0"), timeout=5)
        with pytest.raises(grpc.aio.AioRpcError) as write:
            await kv.Put(rpc.PutRequest(key=b"/lahar/objects/node/_/n1", value=b"x"), timeout=5)
    finally:
        await channel.close()
    assert "user name is empty" in (read.value.details() or "")
    assert "user name is empty" in (write.value.details() or "")


async def test_a_wrong_password_is_refused(cluster: AuthCluster) -> None:
    with pytest.raises(EtcdAuthError, match="binder"):
        await Etcd.connect(*cluster.server.endpoint, credentials=EtcdCredentials("binder", "wrong"))


async def test_each_service_does_its_own_work(cluster: AuthCluster) -> None:
    # a controller: its checkpoint, its election, its read-model kinds fenced by its term
    for user, kind, namespace in (
        ("job-controller", "pod", "ns1"),
        ("queue-controller", "queue", None),
        ("binder", "node", None),
        ("binder-2", "node", None),  # the standby shares its leader's role
    ):
        etcd = await cluster.client(user)
        try:
            producer = cluster.roles[user].name
            store = CheckpointStore(etcd, producer)
            await store.delete()
            leadership = await Election(etcd, producer).campaign(user, ttl_s=5)
            model = ReadModel(etcd, fence=leadership.fence)
            assert await model.put(kind, namespace, "x", {"n": 1}, seq=len(user))
            assert [o.name for o in (await model.list(kind))[0]] == ["x"]
            await leadership.resign()
        finally:
            await etcd.close()
    # a scheduler replica: its registration on the ring, every member read; a checkpoint of its own
    scheduler = await cluster.client("scheduler-0")
    try:
        ring = Membership(scheduler, SCHEDULER_GROUP)
        registration = await ring.join("scheduler-0", ttl_s=5)
        assert "scheduler-0" in (await ring.members())[0]
        await registration.leave()
        await CheckpointStore(scheduler, "scheduler-0").delete()
    finally:
        await scheduler.close()
    # the operator reads the read model, and watches it
    admin = await cluster.client("admin")
    try:
        assert {o.name for o in (await ReadModel(admin).list("node"))[0]} == {"x"}
        revision = await admin.revision()
        changes = admin.watch_prefix(b"/lahar/objects/queue/", start_revision=revision + 1)
        writer = await cluster.client("queue-controller")
        try:
            await ReadModel(writer).put("queue", None, "q2", {"n": 2}, seq=100)
        finally:
            await writer.close()
        first = await asyncio.wait_for(anext(changes), 10)
        assert first.key == b"/lahar/objects/queue/_/q2"
        await changes.aclose()
    finally:
        await admin.close()


@pytest.mark.parametrize(
    ("user", "key"),
    [
        ("scheduler-0", b"/lahar/objects/pod/ns1/p1"),  # the read model is the controllers'
        ("scheduler-0", b"/lahar/checkpoints/binder/head"),
        ("scheduler-0", b"/lahar/members/scheduler/scheduler-1"),  # another replica's registration
        ("scheduler-0", b"/lahar/election/binder"),
        ("job-controller", b"/lahar/objects/node/_/n1"),  # the binder's kind
        ("binder", b"/lahar/checkpoints/job-controller/head"),
        ("admission", b"/lahar/objects/job/ns1/j1"),
        ("node-agent", b"/lahar/objects/node/_/n1"),
        ("admin", b"/lahar/objects/job/ns1/j1"),  # the operator reads only
        ("admin", b"/lahar/checkpoints/admission/head"),
    ],
)
async def test_no_service_writes_another_services_keys(cluster: AuthCluster, user: str, key: bytes) -> None:
    etcd = await cluster.client(user)
    try:
        with pytest.raises(EtcdError, match="permission denied"):
            await etcd.put(key, b"forged")
    finally:
        await etcd.close()


async def test_a_scheduler_cannot_read_checkpoints(cluster: AuthCluster) -> None:
    etcd = await cluster.client("scheduler-0")
    try:
        with pytest.raises(EtcdError, match="permission denied"):
            await CheckpointStore(etcd, "binder").load()
    finally:
        await etcd.close()


async def test_an_expired_token_is_renewed(cluster: AuthCluster) -> None:
    etcd = await cluster.client("binder")
    try:
        await etcd.put(b"/lahar/checkpoints/binder/probe", b"1")
        token = etcd._tokens[0]
        assert token is not None
        await _until_expired(cluster, token)
        # the next call is refused once, authenticates again and goes through
        await etcd.put(b"/lahar/checkpoints/binder/probe", b"2")
        assert etcd._tokens[0] not in (None, token)
        kv = await etcd.get(b"/lahar/checkpoints/binder/probe")
        assert kv is not None and kv.value == b"2"
        # a watch opened after the expiry carries the new token
        await _until_expired(cluster, str(etcd._tokens[0]))
        revision = await etcd.revision()
        changes = etcd.watch_prefix(b"/lahar/checkpoints/binder/", start_revision=revision + 1)
        writer = await cluster.client("binder")
        try:
            await writer.put(b"/lahar/checkpoints/binder/probe", b"3")
        finally:
            await writer.close()
        assert (await asyncio.wait_for(anext(changes), 10)).value == b"3"
        await changes.aclose()
    finally:
        await etcd.close()


async def _until_expired(cluster: AuthCluster, token: str) -> None:
    """Until etcd refuses the token. Each probe with it would renew it while valid, so the probes are
    spaced wider than its time to live."""
    channel = grpc.aio.insecure_channel(f"{cluster.server.host}:{cluster.server.port}")
    kv = rpc.KVStub(channel)
    try:
        for _ in range(20):
            await asyncio.sleep(TOKEN_TTL_S * 1.5)
            try:
                await kv.Range(
                    rpc.RangeRequest(key=b"\0", count_only=True), timeout=5, metadata=(("token", token),)
                )
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAUTHENTICATED, exc
                return
        raise AssertionError("the token never expired")
    finally:
        await channel.close()


async def test_provisioning_again_is_idempotent_and_rotates_passwords(cluster: AuthCluster) -> None:
    root = await cluster.client(ROOT)
    try:
        before = {
            r.name: await root.auth("RoleGet", rpc.AuthRoleGetRequest(role=r.name))
            for r in cluster.roles.values()
        }
    finally:
        await root.close()
    old = dict(cluster.passwords)
    cluster.passwords = {user: secrets.token_urlsafe(16) for user in cluster.roles}
    await cluster.provision()  # on a cluster with authentication on: as root, with its password
    root = await cluster.client(ROOT)
    try:
        assert await auth_enabled(root)
        after = {
            r.name: await root.auth("RoleGet", rpc.AuthRoleGetRequest(role=r.name))
            for r in cluster.roles.values()
        }
    finally:
        await root.close()
    assert after == before
    with pytest.raises(EtcdAuthError):
        await Etcd.connect(*cluster.server.endpoint, credentials=EtcdCredentials("binder", old["binder"]))
    etcd = await cluster.client("binder")  # the new password works
    try:
        await CheckpointStore(etcd, "binder").delete()
    finally:
        await etcd.close()


async def test_a_role_with_extra_permissions_is_trimmed(cluster: AuthCluster) -> None:
    root = await cluster.client(ROOT)
    try:
        extra = rpc.Permission(
            permType=rpc.Permission.READWRITE, key=b"/lahar/objects/", range_end=b"/lahar/objects0"
        )
        await root.auth(
            "RoleGrantPermission", rpc.AuthRoleGrantPermissionRequest(name="scheduler-0", perm=extra)
        )
    finally:
        await root.close()
    await cluster.provision()
    etcd = await cluster.client("scheduler-0")
    try:
        with pytest.raises(EtcdError, match="permission denied"):
            await etcd.put(b"/lahar/objects/pod/ns1/p1", b"forged")
    finally:
        await etcd.close()


async def test_the_wrong_root_password_cannot_provision_or_disable(cluster: AuthCluster) -> None:
    with pytest.raises(EtcdAuthError):
        await disable([cluster.server.endpoint], root_password="wrong")
    assert await disable([cluster.server.endpoint], root_password=cluster.root_password)
    plain = await Etcd.connect(*cluster.server.endpoint)  # open again, as --no-auth wants it
    try:
        await plain.put(b"/lahar/objects/node/_/n1", b"open")
    finally:
        await plain.close()


def test_tenant_identity_is_not_a_stack_user() -> None:
    roles = stack_roles([Identity("t1", "tenant", namespaces=("ns1",))])
    assert roles == {}
