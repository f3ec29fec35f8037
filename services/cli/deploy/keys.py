"""`lahar deploy keys`: every credential a compose deployment needs, written to one directory that the
compose file mounts (deploy/compose/README.md). Made once per deployment, on the operator's machine;
nothing secret is ever checked in.

    <out>/creds/<user>.nk     each user's nkey seed (0600), one per lahar service of the compose file,
                              `admin` and `provisioner`
    <out>/nats/auth.conf      the nats-server `accounts` block every server of the cluster includes
    <out>/tls/                a CA (ca.pem; its key ca.key stays here, mounted nowhere) and the
                              certificates of the NATS servers (nats.pem, nats.key), of etcd's client
                              port (etcd.*) and of its peers (etcd-peer.*), valid for the servers' host
                              names as the compose file names them
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from services.cli.stack.stack_tls import StackTls, issue_tls
from shared.security.credentials import User, new_user, server_accounts, write_private
from shared.security.permissions import Identity

CREDS = "creds"
NATS_AUTH = Path("nats") / "auth.conf"


@dataclass(frozen=True, slots=True)
class DeploymentKeys:
    out: Path
    users: tuple[str, ...]
    tls: StackTls

    @property
    def auth_conf(self) -> Path:
        return self.out / NATS_AUTH


class KeysExistError(FileExistsError):
    """The directory already holds a deployment's keys: replacing them locks every running process out."""


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
        for stale in creds.glob("*.nk"):  # a user the topology no longer has keeps no key
            stale.unlink()
    for user in users:
        write_private(creds / f"{user.identity.user}.nk", user.file_text())
    # the server configuration holds public keys only, but it lists every user: not for everyone
    write_private(out / NATS_AUTH, server_accounts(users))
    tls = issue_tls(out, hosts)
    return DeploymentKeys(out, tuple(user.identity.user for user in users), tls)
