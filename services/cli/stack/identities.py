"""The local stack's users on the bus: `lahar up` makes an nkey per user (every service process, the
operator's `admin`, and the `provisioner` that creates the streams), writes each seed to
<home>/creds/<user>.nk (mode 0600) and the nats-server configuration listing their public keys with their
permissions (shared/security/permissions.py) to <home>/nats/auth.conf. Every start makes fresh keys:
restarting the stack rotates every credential, and a key taken from an earlier run is worthless.

The configuration holds only the `accounts` block (the services' account LAHAR, the clients' account
CLIENTS), so a clustered server's own configuration can `include` the same file and every server of a
cluster admits the same users.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from services.cli.stack.layout import CREDS_DIR, ServiceSpec, creds_path
from shared.security.credentials import User, new_user, server_accounts, write_private
from shared.security.permissions import ADMIN, PROVISIONER, Identity

SIM_AGENT = "sim"  # the agent id of the stack's hollow nodes (the node agent's default sim prefix)
AUTH_CONF = "auth.conf"


@dataclass(frozen=True, slots=True)
class StackCredentials:
    conf: Path  # the nats-server configuration file (the authorization block)
    files: dict[str, Path]  # user -> credentials file

    @property
    def server_args(self) -> tuple[str, ...]:
        return ("--config", str(self.conf))

    @property
    def admin(self) -> Path:
        return self.files[ADMIN]

    def of(self, user: str) -> str:
        path = self.files.get(user)
        return "" if path is None else str(path)

    @property
    def provisioner(self) -> str:
        """The credentials of the only user that may create or change streams."""
        return str(self.files[PROVISIONER])


def stack_identities(specs: Sequence[ServiceSpec]) -> list[Identity]:
    services = [spec.identity for spec in specs if spec.identity is not None]
    return [*services, Identity(ADMIN, ADMIN), Identity(PROVISIONER, PROVISIONER)]


def issue_credentials(home: Path, specs: Sequence[ServiceSpec]) -> StackCredentials:
    """Fresh keys for every user of the stack, their seed files, and the server's configuration."""
    creds_dir = home / CREDS_DIR
    creds_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(creds_dir, 0o700)  # mkdir's mode is masked by the umask, and an older directory kept its own
    users: list[User] = [new_user(identity) for identity in stack_identities(specs)]
    for stale in creds_dir.glob("*.nk"):  # an earlier run's users (other replicas): their keys are void
        stale.unlink()
    files = {}
    for user in users:
        path = creds_path(home, user.identity.user)
        write_private(path, user.file_text())
        files[user.identity.user] = path
    conf = home / "nats" / AUTH_CONF
    conf.parent.mkdir(parents=True, exist_ok=True)
    tmp = conf.with_name(AUTH_CONF + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.write_text(server_accounts(users))
    tmp.replace(conf)
    return StackCredentials(conf, files)
