"""The local stack's tenants on the bus: each tenant `lahar tenant add` made is kept in
<home>/tenants/<name>.json (its public keys, namespaces and queues; never its seed), and the nats-server
configuration <home>/nats/auth.conf lists them beside the stack's own users, whose public keys `lahar up`
records in <home>/nats/users.json. Adding or removing a tenant rewrites auth.conf and reloads every
nats-server of the stack (SIGHUP); the next `lahar up` on the same home keeps the tenants in it.

Admission's tenant registry (in the event log) says what a tenant may do; this says who the server lets
connect at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from services.cli.stack.layout import CREDS_DIR, StackState
from shared.security.credentials import User, server_accounts
from shared.security.permissions import TENANT, Identity

TENANTS_DIR = "tenants"
AUTH_CONF = "auth.conf"
USERS_FILE = "users.json"  # the stack's own users (public keys and identities; no seeds)
TENANT_CREDS_PREFIX = "tenant-"  # <home>/creds/tenant-<name>.nk: kept across `lahar up`


@dataclass(frozen=True, slots=True)
class TenantRecord:
    name: str
    public_keys: tuple[str, ...]
    namespaces: tuple[str, ...]
    queues: tuple[str, ...] | None = None  # None: every queue

    def users(self) -> list[User]:
        """Its users in the server's configuration: one per key (no seed: the tenant holds it)."""
        identity = Identity(self.name, TENANT, namespaces=self.namespaces)
        return [User(identity, key, "") for key in self.public_keys]


def tenant_creds_path(home: Path, name: str) -> Path:
    return home / CREDS_DIR / f"{TENANT_CREDS_PREFIX}{name}.nk"


def load_tenants(home: Path) -> list[TenantRecord]:
    records = []
    for path in sorted((home / TENANTS_DIR).glob("*.json")):
        raw = json.loads(path.read_text())
        queues = raw.get("queues")
        records.append(
            TenantRecord(
                raw["name"],
                tuple(raw["public_keys"]),
                tuple(raw["namespaces"]),
                None if queues is None else tuple(queues),
            )
        )
    return records


def save_tenant(home: Path, record: TenantRecord) -> None:
    _write(home / TENANTS_DIR / f"{record.name}.json", json.dumps(asdict(record), indent=2))


def forget_tenant(home: Path, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (home / TENANTS_DIR / f"{name}.json").unlink()


def save_stack_users(home: Path, users: Iterable[User]) -> None:
    entries = [{"identity": asdict(u.identity), "public_key": u.public_key} for u in users]
    _write(home / "nats" / USERS_FILE, json.dumps(entries, indent=2))


def _stack_users(home: Path) -> list[User]:
    entries = json.loads((home / "nats" / USERS_FILE).read_text())
    return [
        User(
            Identity(**{**e["identity"], "namespaces": tuple(e["identity"].get("namespaces", ()))}),
            e["public_key"],
            "",
        )
        for e in entries
    ]


def write_auth_conf(home: Path, users: Sequence[User] | None = None) -> Path:
    """The server's accounts block: the stack's users (given, or as `lahar up` recorded them) and every
    tenant's."""
    stack = list(users) if users is not None else _stack_users(home)
    tenants = [u for record in load_tenants(home) for u in record.users()]
    conf = home / "nats" / AUTH_CONF
    _write(conf, server_accounts([*stack, *tenants]))
    return conf


def reload_servers(state: StackState) -> list[str]:
    """Ask every nats-server of the stack to reload its configuration; the names of those that could not
    be signalled (not running)."""
    missed = []
    for server in state.servers:
        if not server.name.startswith("nats-server"):
            continue
        try:
            os.kill(server.pid, signal.SIGHUP)
        except (ProcessLookupError, PermissionError):
            missed.append(server.name)
    return missed


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.write_text(text)
    tmp.replace(path)
