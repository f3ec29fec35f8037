"""`lahar deploy keys`: every credential a compose deployment needs, written to one directory that the
compose file mounts (deploy/compose/README.md). Made once per deployment, on the operator's machine;
nothing secret is ever checked in. Each container mounts only its own files.

    <out>/creds/<user>.nk       each user's nkey seed (0600): every lahar service of the compose file,
                                `admin` and `provisioner`
    <out>/creds/<user>.etcd     each service's and admin's etcd password (0600; a `user:` line names the
                                etcd user), and etcd-root.password, which only the provisioner mounts
    <out>/creds/secrets-key*.pem  the node agents' key pair the ssh plugin's secrets are sealed to
                                (admission mounts the public half, node agents the private one)
    <out>/creds/identities.json the users and their roles, for the provisioner to make their etcd roles
    <out>/operator.env          LAHAR_OPERATOR_KEYS: the admin's public key, which admission authorizes
                                as the operator
    <out>/nats/auth.conf        the nats-server `accounts` block every server of the cluster includes
    <out>/tls/                  a CA (ca.pem; its key ca.key stays here, mounted nowhere) and the
                                certificates of the NATS servers (nats.pem, nats.key), of etcd's client
                                port (etcd.*) and of its peers (etcd-peer.*), valid for the servers' host
                                names as the compose file names them
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from services.cli.stack.stack_tls import StackTls, issue_tls
from shared.security.credentials import User, new_user, server_accounts, write_private
from shared.security.etcd_roles import stack_roles
from shared.security.permissions import ADMIN, Identity
from shared.security.secret_keys import issue_secrets_keys

CREDS = "creds"
NATS_AUTH = Path("nats") / "auth.conf"
IDENTITIES = "identities.json"
ETCD_ROOT_PASSWORD = "etcd-root.password"
OPERATOR_ENV = "operator.env"


@dataclass(frozen=True, slots=True)
class DeploymentKeys:
    out: Path
    users: tuple[str, ...]
    tls: StackTls

    @property
    def auth_conf(self) -> Path:
        return self.out / NATS_AUTH

    @property
    def creds(self) -> Path:
        return self.out / CREDS


class KeysExistError(FileExistsError):
    """The directory already holds a deployment's keys: replacing them locks every running process out."""


def etcd_password_text(user: str) -> str:
    return f"{secrets.token_urlsafe(24)}\nuser: {user}\n"


def write_identities(path: Path, identities: Sequence[Identity]) -> None:
    write_private(path, json.dumps([asdict(i) for i in identities], indent=1) + "\n")


def read_identities(path: Path) -> list[Identity]:
    return [
        Identity(**{**raw, "namespaces": tuple(raw["namespaces"])}) for raw in json.loads(path.read_text())
    ]


def write_deployment_keys(
    out: Path, identities: list[Identity], hosts: Sequence[str] = (), *, replace: bool = False
) -> DeploymentKeys:
    """Fresh keys for every user, and certificates for the servers named `hosts`, in `out` (0700).
    Refuses to replace existing keys unless `replace`."""
    creds = out / CREDS
    if not replace and (creds.exists() or (out / NATS_AUTH).exists()):
        raise KeysExistError(
            f"{out} already holds a deployment's keys; --replace makes new ones (every running process "
            "then needs the new files and a restart)"
        )
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(out, 0o700)
    users: list[User] = [new_user(identity) for identity in identities]
    if creds.exists():
        for stale in [*creds.glob("*.nk"), *creds.glob("*.etcd")]:  # users the topology no longer has
            stale.unlink()
    for user in users:
        write_private(creds / f"{user.identity.user}.nk", user.file_text())
    for name in stack_roles(identities):  # every service and admin is an etcd user too
        write_private(creds / f"{name}.etcd", etcd_password_text(name))
    # root's password stays as it was: etcd keeps its users in its data, which outlives new keys
    if not (creds / ETCD_ROOT_PASSWORD).exists():
        write_private(creds / ETCD_ROOT_PASSWORD, secrets.token_urlsafe(24) + "\n")
    write_identities(creds / IDENTITIES, identities)
    issue_secrets_keys(creds)
    admin = next(user for user in users if user.identity.role == ADMIN)
    write_private(out / OPERATOR_ENV, f"LAHAR_OPERATOR_KEYS={admin.public_key}\n")
    # the server configuration holds public keys only, but it lists every user: not for everyone
    write_private(out / NATS_AUTH, server_accounts(users))
    tls = issue_tls(out, hosts)
    return DeploymentKeys(out, tuple(user.identity.user for user in users), tls)
