"""etcd authentication on the stack `lahar up` runs (on by default, docs/security.md): a client without
credentials can neither read nor write; each service's user is kept to its own keys; the operator reads
the read model and writes nothing; the stack runs a job to Completed with every service authenticated."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import grpc
import pytest
from aetcd import rpc
from e2e.conftest import Stack, start_stack, stop_stack

from services.cli.stack.etcd_users import ROOT_PASSWORD_FILE, etcd_password_path
from shared.security.etcd_roles import ROOT
from shared.security.tls import read_ca
from shared.store.etcd import Etcd, EtcdError
from shared.store.etcd_auth import EtcdAuthError, EtcdCredentials
from shared.store.etcd_provision import auth_enabled

pytestmark = pytest.mark.timeout(300)


def _endpoint(stack: Stack) -> tuple[str, int]:
    host, _, port = stack.state.etcd_endpoint.split(",")[0].rpartition(":")
    return host, int(port)


async def _as(stack: Stack, user: str) -> Etcd:
    path = stack.home / "creds" / ROOT_PASSWORD_FILE if user == ROOT else etcd_password_path(stack.home, user)
    return await Etcd.connect(
        *_endpoint(stack), tls_ca=stack.state.tls_ca, credentials=EtcdCredentials.from_file(user, path)
    )


def test_every_etcd_password_is_private_and_the_status_names_the_admins(stack: Stack) -> None:
    creds = stack.home / "creds"
    files = sorted(p.name for p in creds.glob("*.etcd"))
    assert "admin.etcd" in files and "binder.etcd" in files and "scheduler-0.etcd" in files
    for name in [*files, ROOT_PASSWORD_FILE]:
        assert stat.S_IMODE((creds / name).stat().st_mode) == 0o600, name
    status = json.loads(stack.lahar("status", "-o", "json").stdout)
    assert status["admin_etcd_password"] == str(creds / "admin.etcd")


async def test_a_client_without_credentials_reads_and_writes_nothing(stack: Stack) -> None:
    host, port = _endpoint(stack)
    tls = grpc.ssl_channel_credentials(root_certificates=read_ca(stack.state.tls_ca))
    channel = grpc.aio.secure_channel(f"{host}:{port}", tls)
    try:
        kv = rpc.KVStub(channel)
        objects = rpc.RangeRequest(key=b"/lahar/objects/", range_end=b"/lahar/objects0")
        with pytest.raises(grpc.aio.AioRpcError, match="user name is empty"):
            await kv.Range(objects, timeout=10)
        with pytest.raises(grpc.aio.AioRpcError, match="user name is empty"):
            await kv.Put(rpc.PutRequest(key=b"/lahar/election/binder", value=b"me"), timeout=10)
    finally:
        await channel.close()


async def test_the_operator_reads_the_read_model_and_writes_nothing(stack: Stack) -> None:
    admin = await _as(stack, "admin")
    try:
        nodes, _ = await admin.get_prefix(b"/lahar/objects/node/")
        assert nodes, "the binder wrote the nodes"
        with pytest.raises(EtcdError, match="permission denied"):
            await admin.put(nodes[0].key, b"forged")
        with pytest.raises(EtcdError, match="permission denied"):
            await admin.get_prefix(b"/lahar/checkpoints/")
    finally:
        await admin.close()


async def test_a_scheduler_cannot_write_the_read_model_or_the_binders_keys(stack: Stack) -> None:
    scheduler = await _as(stack, "scheduler-0")
    try:
        for key in (
            b"/lahar/objects/node/_/forged",
            b"/lahar/checkpoints/binder/head",
            b"/lahar/election/binder",
        ):
            with pytest.raises(EtcdError, match="permission denied"):
                await scheduler.put(key, b"forged")
        members, _ = await scheduler.get_prefix(b"/lahar/members/scheduler/")
        assert b"/lahar/members/scheduler/scheduler-0" in {kv.key for kv in members}
    finally:
        await scheduler.close()


async def test_authentication_is_on_and_root_holds_it(stack: Stack) -> None:
    root = await _as(stack, ROOT)
    try:
        assert await auth_enabled(root)
        users = await root.auth("UserList", rpc.AuthUserListRequest())
        assert {"root", "admin", "admission", "binder", "scheduler-0", "node-agent"} <= set(users.users)
    finally:
        await root.close()


def test_a_job_runs_to_completion_with_etcd_authentication_on(stack: Stack) -> None:
    applied = stack.lahar("apply", "-f", "examples/gang-job.yaml")
    assert applied.returncode == 0, applied.stderr
    waited = stack.lahar("wait", "job", "gang-demo", "--for", "Completed", "--timeout", "120s")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    got = stack.lahar("get", "pods", "-n", "default")
    assert got.returncode == 0 and "gang-demo" in got.stdout, got.stdout + got.stderr


async def test_lahar_up_again_over_the_same_home_rotates_the_passwords(tmp_path: Path) -> None:
    """etcd keeps its users in its data directory: a second `lahar up` finds authentication on, provisions
    as root with the kept password, and gives every user a new one; `--no-auth` then opens etcd again."""
    home = tmp_path
    first = start_stack(home)
    try:
        old_admin = (home / "creds" / "admin.etcd").read_text()
    finally:
        stop_stack(first.supervisor)
    second = start_stack(home)  # ready: every service authenticated with its new password
    try:
        host, port = _endpoint(second)
        with pytest.raises(EtcdAuthError):
            await Etcd.connect(
                host,
                port,
                tls_ca=second.state.tls_ca,
                credentials=EtcdCredentials("admin", old_admin.strip()),
            )
        admin = await _as(second, "admin")
        await admin.close()
    finally:
        stop_stack(second.supervisor)
    opened = start_stack(home, "--no-auth")
    try:
        host, port = _endpoint(opened)
        plain = await Etcd.connect(host, port)  # no TLS, no user: open, as before
        try:
            nodes, _ = await plain.get_prefix(b"/lahar/objects/node/")
            assert nodes
        finally:
            await plain.close()
    finally:
        stop_stack(opened.supervisor)
