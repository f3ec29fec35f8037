"""The local stack's users on the bus: `lahar up` makes an nkey per user (every service process, the
operator's `admin`, and the `provisioner` that creates the streams), writes each seed to
<home>/creds/<user>.nk (mode 0600) and the nats-server configuration listing their public keys with their
permissions (shared/security/permissions.py) to <home>/nats/auth.conf. Every start makes fresh keys:
restarting the stack rotates every credential, and a key taken from an earlier run is worthless.

The configuration holds only the `accounts` block (the services' account LAHAR, the clients' account
CLIENTS), so a clustered server's own configuration can `include` the same file and every server of a
cluster admits the same users. Tenants added with `lahar tenant add` are kept in it (tenants.py); the
stack's servers load it through <home>/nats/server.conf, which also names each server so that a reload
(after a tenant is added or removed) is accepted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from services.cli.stack.layout import CREDS_DIR, ServiceSpec, creds_path
from services.cli.stack.tenants import AUTH_CONF, TENANT_CREDS_PREFIX, save_stack_users, write_auth_conf
from shared.security.credentials import User, new_user, read_credentials, write_private
from shared.security.permissions import ADMIN, PROVISIONER, Identity
from shared.server_cluster import NATS_CLUSTER_NAME
from shared.servers import SERVER_NAME_ENV

SIM_AGENT = "sim"  # the agent id of the stack's hollow nodes (the node agent's default sim prefix)


SERVER_CONF = "server.conf"


@dataclass(frozen=True, slots=True)
class StackCredentials:
    conf: Path  # the accounts block, which `lahar tenant add` rewrites (tenants.py)
    files: dict[str, Path]  # user -> credentials file
    server_conf: Path  # what every nats-server loads: its name and the accounts block

    @property
    def server_args(self) -> tuple[str, ...]:
        return ("--config", str(self.server_conf))

    @property
    def admin(self) -> Path:
        return self.files[ADMIN]

    def of(self, user: str) -> str:
        path = self.files.get(user)
        return "" if path is None else str(path)

    @property
    def operator_keys(self) -> tuple[str, ...]:
        """The public keys admission treats as the operator's (the admin's)."""
        return (read_credentials(self.admin).public_key,)

    @property
    def provisioner(self) -> str:
        """The credentials of the only user that may create or change streams."""
        return str(self.files[PROVISIONER])


def stack_identities(specs: Sequence[ServiceSpec]) -> list[Identity]:
    services = [spec.identity for spec in specs if spec.identity is not None]
    return [*services, Identity(ADMIN, ADMIN), Identity(PROVISIONER, PROVISIONER)]


def server_conf(home: Path, *, ha: bool, tls: tuple[Path, Path] | None = None) -> Path:
    """The file nats-server is started with. A reload (SIGHUP, after `lahar tenant add`) takes the server's
    name, the cluster's name and TLS from the file alone, not from the command line the server was started
    with, and refuses to reload when they differ ("config reload not supported for ServerName"; for TLS
    "old=true, new=false"): every such setting the stack's servers run with belongs here, and TLS only
    here (the --tls flag alone makes every reload fail, tests/integration/test_tenant_reload.py). Each
    server's name is in its environment (shared/servers.py). tls: the servers' certificate and key, when
    they serve clients over TLS."""
    lines = [f"server_name: ${SERVER_NAME_ENV}"]
    if ha:
        lines.append(f"cluster {{ name: {NATS_CLUSTER_NAME} }}")
    if tls is not None:
        lines.append(f'tls {{ cert_file: "{tls[0]}", key_file: "{tls[1]}" }}')
    lines.append(f'include "{AUTH_CONF}"')
    path = home / "nats" / SERVER_CONF
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def issue_credentials(
    home: Path, specs: Sequence[ServiceSpec], *, ha: bool = False, tls: tuple[Path, Path] | None = None
) -> StackCredentials:
    """Fresh keys for every user of the stack, their seed files, and the server's configuration."""
    creds_dir = home / CREDS_DIR
    creds_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(creds_dir, 0o700)  # mkdir's mode is masked by the umask, and an older directory kept its own
    users: list[User] = [new_user(identity) for identity in stack_identities(specs)]
    for stale in creds_dir.glob("*.nk"):  # an earlier run's users (other replicas): their keys are void
        if not stale.name.startswith(TENANT_CREDS_PREFIX):  # tenants keep theirs (tenants.py)
            stale.unlink()
    files = {}
    for user in users:
        path = creds_path(home, user.identity.user)
        write_private(path, user.file_text())
        files[user.identity.user] = path
    save_stack_users(home, users)  # so `lahar tenant add` can rewrite the configuration
    conf = write_auth_conf(home, users)  # with the tenants added on this home earlier
    return StackCredentials(conf, files, server_conf(home, ha=ha, tls=tls))
