"""A stack's nats-server takes a tenant added while it runs: `lahar tenant add` rewrites the accounts and
signals the server, which reloads them only if the file it was started with carries what a reload reads
from the file alone: its name, and TLS when it serves TLS (given on the command line instead, TLS makes
every reload fail)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import signal
import ssl
import time
from pathlib import Path

import nats
import nats.errors
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from services.cli.stack.identities import issue_credentials
from services.cli.stack.supervisor import service_specs
from services.cli.stack.tenants import TenantRecord, save_tenant, write_auth_conf
from shared.security.credentials import Credentials, new_user
from shared.security.permissions import TENANT, Identity
from shared.servers import NatsServer

RELOAD_TIMEOUT_S = 10.0


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lahar test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "nats.pem", directory / "nats.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


async def connects(url: str, credentials: Credentials, context: ssl.SSLContext | None) -> bool:
    try:
        nc = await nats.connect(url, allow_reconnect=False, tls=context, **credentials.connect_options())
    except (nats.errors.Error, OSError):  # refused: an authorization violation, or the connection cut
        return False
    await nc.close()
    return True


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
async def test_a_tenant_added_while_the_server_runs_is_let_in_after_a_reload(
    tmp_path: Path, tls: bool
) -> None:
    home = tmp_path / "home"
    files = self_signed(tmp_path) if tls else None
    issued = issue_credentials(home, service_specs(home, 4, "host-a", 1), tls=files)
    # TLS in the file, not on the command line: a reload compares the --tls flag's setting with the file's
    # (none) and refuses ("config reload not supported for TLS: old=true, new=false")
    server = NatsServer.start_in(home / "nats", extra_args=issued.server_args)
    try:
        context = ssl.create_default_context(cafile=str(files[0])) if files is not None else None
        tenant = new_user(Identity("team-a", TENANT, namespaces=("team-a",)))
        credentials = Credentials(tenant.seed, tenant.public_key, tenant.account)
        assert not await connects(server.url, credentials, context)
        save_tenant(home, TenantRecord("team-a", (tenant.public_key,), ("team-a",)))
        write_auth_conf(home)
        os.kill(server.pid, signal.SIGHUP)
        deadline = time.monotonic() + RELOAD_TIMEOUT_S
        while not await connects(server.url, credentials, context):
            log = server.log_path.read_text()
            assert "Failed to reload" not in log, log[-2000:]
            assert time.monotonic() < deadline, "the tenant was not let in"
            await asyncio.sleep(0.1)
    finally:
        server.stop()
