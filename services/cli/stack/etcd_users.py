"""The local stack's users in etcd: `lahar up` makes a random password per service process and for the
operator's `admin` (the same user names as on the bus, identities.py), writes each to
<home>/creds/<user>.etcd (mode 0600, the password alone on its first line), and provisions the cluster:
a role per service limited to its own key ranges (shared/security/etcd_roles.py), the users, then
authentication on (shared/store/etcd_provision.py). Every start makes new passwords, as it makes new
nkeys: a password copied out of an earlier run stops working.

etcd keeps its users in its data directory, which outlives a run, so root's password is made once per
home and kept in <home>/creds/etcd-root.password: a later `lahar up` (or the supervisor after restarting
etcd, which needs nothing) finds authentication on and provisions as root with it. `lahar up --no-auth`
turns authentication off again with it.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from services.cli.stack.identities import stack_identities
from services.cli.stack.layout import CREDS_DIR, ServiceSpec
from services.cli.stack.tenants import TENANT_CREDS_PREFIX, TenantRecord, load_tenants
from shared.security.credentials import write_private
from shared.security.etcd_roles import stack_roles, tenant_role
from shared.security.permissions import ADMIN
from shared.store.etcd_auth import EtcdAuthError
from shared.store.etcd_provision import EtcdUser, disable, provision, remove_user, users_of

ROOT_PASSWORD_FILE = "etcd-root.password"
PASSWORD_SUFFIX = ".etcd"


def etcd_password_path(home: Path, user: str) -> Path:
    """Where `lahar up` writes a user's etcd password."""
    return home / CREDS_DIR / f"{user}{PASSWORD_SUFFIX}"


@dataclass(frozen=True, slots=True)
class StackEtcdUsers:
    files: dict[str, Path]  # user -> its password file

    def of(self, user: str) -> str:
        path = self.files.get(user)
        return "" if path is None else str(path)

    @property
    def admin(self) -> Path:
        return self.files[ADMIN]


def _new_password() -> str:
    return secrets.token_urlsafe(24)


def _root_password(home: Path) -> str:
    path = home / CREDS_DIR / ROOT_PASSWORD_FILE
    if path.is_file():
        return path.read_text().strip()
    password = _new_password()
    write_private(path, password + "\n")
    return password


async def provision_stack_etcd(
    home: Path, specs: Sequence[ServiceSpec], endpoints: Sequence[tuple[str, int]], tls_ca: str | None
) -> StackEtcdUsers:
    """New passwords for every user, written to their files, provisioned on the cluster."""
    roles = stack_roles(stack_identities(specs))
    root = _root_password(home)
    for stale in (home / CREDS_DIR).glob(f"*{PASSWORD_SUFFIX}"):  # an earlier run's users
        if not stale.name.startswith(TENANT_CREDS_PREFIX):  # tenants keep theirs (tenant_cmd.py)
            stale.unlink()
    passwords = {user: _new_password() for user in roles}
    files = {}
    for user, password in passwords.items():
        files[user] = etcd_password_path(home, user)
        write_private(files[user], password + "\n")
    # tenants added on this home earlier keep their users and passwords (etcd keeps its users too)
    saved = (_saved_tenant_user(home, record) for record in load_tenants(home))
    tenants = [tenant for tenant in saved if tenant is not None]
    try:
        await provision(
            endpoints, root_password=root, users=[*users_of(roles, passwords), *tenants], tls_ca=tls_ca
        )
    except EtcdAuthError as exc:
        raise EtcdAuthError(
            f"{exc} (etcd in {home} has authentication on, and {home / CREDS_DIR / ROOT_PASSWORD_FILE} "
            "is not its root password: remove the etcd data directory to start afresh)"
        ) from exc
    return StackEtcdUsers(files)


def tenant_etcd_user(name: str) -> str:
    """A tenant's etcd user (and role): prefixed, so that no tenant's name is a service's."""
    return f"{TENANT_CREDS_PREFIX}{name}"


def tenant_etcd_record(record: TenantRecord, password: str) -> EtcdUser:
    user = tenant_etcd_user(record.name)
    return EtcdUser(user, password, tenant_role(user, record.namespaces))


def _saved_tenant_user(home: Path, record: TenantRecord) -> EtcdUser | None:
    path = etcd_password_path(home, tenant_etcd_user(record.name))
    if not path.is_file():
        return None
    return tenant_etcd_record(record, path.read_text().splitlines()[0].strip())


async def add_tenant_etcd(
    home: Path, record: TenantRecord, endpoints: Sequence[tuple[str, int]], tls_ca: str | None
) -> str:
    """A new password for the tenant's etcd user, kept in <home>/creds/tenant-NAME.etcd, its role read-only
    on its namespaces (shared/security/etcd_roles.py); the password file's text, which names the user
    (a copy goes beside the tenant's credentials file wherever `-o` puts it)."""
    password = _new_password()
    user = tenant_etcd_record(record, password)
    text = f"{password}\nuser: {user.name}\n"
    write_private(etcd_password_path(home, user.name), text)
    await provision(endpoints, root_password=_root_password(home), users=[user], tls_ca=tls_ca)
    return text


async def remove_tenant_etcd(
    home: Path, name: str, endpoints: Sequence[tuple[str, int]], tls_ca: str | None
) -> None:
    user = tenant_etcd_user(name)
    await remove_user(endpoints, root_password=_root_password(home), user=user, tls_ca=tls_ca)
    etcd_password_path(home, user).unlink(missing_ok=True)


async def open_stack_etcd(home: Path, endpoints: Sequence[tuple[str, int]], tls_ca: str | None) -> None:
    """`--no-auth`: turn authentication off if an earlier run of this home turned it on."""
    root_file = home / CREDS_DIR / ROOT_PASSWORD_FILE
    if root_file.is_file():
        await disable(endpoints, root_password=root_file.read_text().strip(), tls_ca=tls_ca)
