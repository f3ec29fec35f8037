"""`lahar deploy keys`: the users of a compose deployment come from its compose file, every lahar
service there finds its credentials file, and keys are written owner-only and never silently replaced."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from services.cli.deploy.identities import (
    TopologyError,
    compose_identities,
    server_hosts,
    service_identity,
)
from services.cli.deploy.keys import KeysExistError, write_deployment_keys
from services.cli.main import main
from shared.security.credentials import read_credentials
from shared.security.permissions import ADMIN, PROVISIONER, Identity

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = ROOT / "deploy" / "compose" / "docker-compose.yaml"
CREDS_MOUNT = "/run/lahar/creds/"


def topology() -> dict:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_producer_tokens_follow_the_command_as_on_lahar_up() -> None:
    assert service_identity("scheduler-2", ["services.scheduler", "--replica-id", "sched-b"]) == Identity(
        "scheduler-2", "scheduler", "sched-b"
    )
    assert service_identity("na", ["services.node_agent", "--agent-id=rack7"]) == Identity(
        "na", "node-agent", "node-agent.rack7"
    )
    assert service_identity("binder", ["services.binder"]) == Identity("binder", "binder", "binder")
    assert service_identity("p", ["services.cli.deploy.provision"]) is None


def test_every_service_whose_user_cannot_be_derived_is_named() -> None:
    broken = {
        "services": {
            "s": {"build": ".", "command": ["services.scheduler"]},
            "n": {"build": ".", "command": ["services.node_agent", "--node-name", "x"]},
            "w": {"build": ".", "command": ["services.nothing"]},
            "nats": {"image": "nats"},
        }
    }
    with pytest.raises(TopologyError) as refused:
        compose_identities(broken)
    message = str(refused.value)
    for name in ("services.s.command", "services.n.command", "services.w.command[0]"):
        assert name in message


def test_every_lahar_service_of_the_compose_file_names_its_own_users_file(tmp_path: Path) -> None:
    compose = topology()
    made = write_deployment_keys(tmp_path / "secrets", compose_identities(compose))
    users = set(made.users)
    assert {ADMIN, PROVISIONER} <= users
    for name, service in compose["services"].items():
        if "build" not in service:
            continue
        creds = service["environment"]["LAHAR_NATS_CREDS"]
        assert creds.startswith(CREDS_MOUNT), name
        user = creds.removeprefix(CREDS_MOUNT).removesuffix(".nk")
        assert user in users, f"{name} names {creds}, which `lahar deploy keys` does not make"
        read_credentials(made.out / "creds" / f"{user}.nk")  # a readable seed
    # every scheduler replica and node agent writes under a token of its own
    own = [i.producer for i in compose_identities(compose) if i.role in ("scheduler", "node-agent")]
    assert len(own) == 6 and len(set(own)) == 6


def test_keys_are_owner_only_and_not_replaced_unless_asked(tmp_path: Path) -> None:
    out = tmp_path / "secrets"
    first = write_deployment_keys(out, [Identity(ADMIN, ADMIN)])
    certificates = [out / "tls" / name for name in ("ca.pem", "nats.pem", "etcd.pem", "etcd-peer.pem")]
    assert all(c.exists() for c in certificates)
    for path in [out, *(p for p in out.rglob("*") if p not in certificates)]:  # certificates are public
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is readable by others: {oct(mode)}"
    seed = (out / "creds" / "admin.nk").read_text()
    with pytest.raises(KeysExistError):
        write_deployment_keys(out, [Identity(ADMIN, ADMIN)])
    assert (out / "creds" / "admin.nk").read_text() == seed
    write_deployment_keys(out, [Identity(ADMIN, ADMIN)], replace=True)
    assert (out / "creds" / "admin.nk").read_text() != seed
    assert first.auth_conf.read_text().count("nkey") == 1


def test_the_command_writes_the_keys_and_refuses_to_overwrite_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "secrets"
    assert main(["deploy", "keys", "--compose", str(COMPOSE), "--out", str(out)]) == 0
    assert (out / "nats" / "auth.conf").exists()
    assert main(["deploy", "keys", "--compose", str(COMPOSE), "--out", str(out)]) == 1
    assert "--replace" in capsys.readouterr().err


def test_the_servers_certificates_name_the_hosts_of_the_compose_file(tmp_path: Path) -> None:
    compose = topology()
    made = write_deployment_keys(tmp_path / "secrets", compose_identities(compose), server_hosts(compose))
    hosts = server_hosts(compose)
    assert sorted(hosts) == ["etcd-1", "etcd-2", "etcd-3", "nats-1", "nats-2", "nats-3"]
    for files in (made.tls.nats, made.tls.etcd, made.tls.etcd_peer):
        cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert set(hosts) <= set(names.get_values_for_type(x509.DNSName))
