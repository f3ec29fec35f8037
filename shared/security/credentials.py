"""Credentials on the bus: nkey users (an Ed25519 key pair per user; the server holds the public key, the
user its seed), their credentials files, the options a NATS client connects with, and the nats-server
`accounts` block that lists every user with its permissions (shared/security/permissions.py).

A credentials file, readable by its owner only (mode 0600), holds the user's nkey seed (`SU...`) and
comment lines naming the user, its role and its account:

    # lahar bus credentials
    # user: admin
    # role: admin
    # account: CLIENTS
    SUAB...

The client signs the server's nonce with the seed at each (re)connect, so the seed never crosses the
wire. The account says how the client reaches JetStream (clients through an API prefix) and its inbox
prefix; the public key, derived from the seed, makes the inbox its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys

from shared.security.permissions import (
    API_ROOT,
    CLIENT_INBOX_ROOT,
    CLIENT_JS_PREFIX,
    CLIENTS_ACCOUNT,
    JS_API,
    SERVICES_ACCOUNT,
    TENANT,
    Identity,
    Permissions,
    account_of,
    client_js_calls,
    client_services,
    inbox_prefix,
    js_api_prefix,
    permissions,
)

_HEADER = "# lahar bus credentials"
_ACCOUNTS = (SERVICES_ACCOUNT, CLIENTS_ACCOUNT)


class CredentialsError(ValueError):
    """A credentials file that cannot be read or holds no user seed; the message names the file."""


@dataclass(frozen=True, slots=True)
class User:
    """An identity with its key pair: public key for the server's configuration, seed for the user."""

    identity: Identity
    public_key: str
    seed: str

    @property
    def account(self) -> str:
        return account_of(self.identity.role)

    @property
    def permissions(self) -> Permissions:
        return permissions(self.identity, self.public_key)

    def file_text(self) -> str:
        i = self.identity
        lines = [_HEADER, f"# user: {i.user}", f"# role: {i.role}", f"# account: {self.account}"]
        if i.role == TENANT:  # what its producers need to know (contracts/intake.md)
            lines += [f"# tenant: {i.user}", f"# namespaces: {','.join(i.namespaces)}"]
        lines.append(self.seed)
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a client connects with, read from a credentials file."""

    seed: str
    public_key: str
    account: str

    def connect_options(self) -> dict[str, Any]:
        """nats-py connect() options: the seed to sign with and the user's own inbox prefix."""
        return {"nkeys_seed_str": self.seed, "inbox_prefix": inbox_prefix(self.account, self.public_key)}

    @property
    def js_api_prefix(self) -> str | None:
        return js_api_prefix(self.account)


def new_user(identity: Identity) -> User:
    seed = nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_USER)
    return User(identity, _public_key(seed), seed.decode())


def _public_key(seed: bytes) -> str:
    pair = nkeys.from_seed(bytearray(seed))
    try:
        key: bytes = pair.public_key
        return key.decode()
    finally:
        pair.wipe()


def write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only: created 0600 (never readable by others for a moment),
    replaced atomically so a process reading it never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):  # left by a writer that died halfway
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    tmp.replace(path)


def read_credentials(creds: str | Path) -> Credentials:
    """The seed and account of a credentials file; CredentialsError naming what is wrong."""
    path = Path(creds)
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialsError(f"credentials file {path}: cannot read it ({exc})") from exc
    seeds = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    account = SERVICES_ACCOUNT
    for line in lines:
        key, _, value = line.lstrip("# ").partition(":")
        if line.lstrip().startswith("#") and key.strip() == "account":
            account = value.strip()
    if account not in _ACCOUNTS:
        raise CredentialsError(f"credentials file {path}: unknown account {account!r}")
    if len(seeds) != 1:
        raise CredentialsError(f"credentials file {path}: expected one nkey user seed, found {len(seeds)}")
    try:
        public_key = _public_key(seeds[0].encode())
    except Exception as exc:  # nkeys raises its own error types, and binascii's for bad base32
        raise CredentialsError(f"credentials file {path}: not an nkey user seed") from exc
    return Credentials(seeds[0], public_key, account)


def _shared(subject: str) -> dict[str, bool]:
    return {"share": True} if subject == f"{API_ROOT}.>" else {}


def server_accounts(users: Iterable[User]) -> str:
    """The nats-server `accounts` block: LAHAR (JetStream, the services and the provisioner) exports to
    CLIENTS (the operator, tenants) exactly what clients may call, and CLIENTS imports it, the JetStream
    calls under CLIENT_JS_PREFIX. JSON values are valid in NATS's configuration syntax, so every subject
    is quoted exactly as it is written."""
    members: dict[str, list[str]] = {account: [] for account in _ACCOUNTS}
    for user in users:
        grant = user.permissions
        permissions_conf: dict[str, Any] = {
            "publish": {"allow": list(grant.publish)},
            "subscribe": {"allow": list(grant.subscribe)},
        }
        if grant.allow_responses:
            permissions_conf["allow_responses"] = True
        entry = json.dumps({"nkey": user.public_key, "permissions": permissions_conf})
        members[user.account].append(f"      # {user.identity.user} ({user.identity.role})\n      {entry}")
    services = client_services()
    calls = client_js_calls()
    exports = [
        *({"service": subject} for subject in services),
        *({"service": f"{JS_API}.{call}"} for call in calls),
        {"stream": f"{CLIENT_INBOX_ROOT}.>"},
    ]
    imports = [
        # share: the server tells admission who asked (Nats-Request-Info, which it writes itself, over
        # any header of that name the caller sent), so admission authorizes by the caller's key
        *(
            {"service": {"account": SERVICES_ACCOUNT, "subject": subject}, **_shared(subject)}
            for subject in services
        ),
        *(
            {
                "service": {"account": SERVICES_ACCOUNT, "subject": f"{JS_API}.{call}"},
                "to": f"{CLIENT_JS_PREFIX}.{call}",
            }
            for call in calls
        ),
        {"stream": {"account": SERVICES_ACCOUNT, "subject": f"{CLIENT_INBOX_ROOT}.>"}},
    ]

    def listing(items: Iterable[object]) -> str:
        return "\n".join(f"      {json.dumps(item)}" for item in items)

    return (
        "accounts {\n"
        f"  {SERVICES_ACCOUNT} {{\n    jetstream: enabled\n"
        f"    users = [\n" + "\n".join(members[SERVICES_ACCOUNT]) + "\n    ]\n"
        f"    exports = [\n{listing(exports)}\n    ]\n  }}\n"
        f"  {CLIENTS_ACCOUNT} {{\n"
        f"    users = [\n" + "\n".join(members[CLIENTS_ACCOUNT]) + "\n    ]\n"
        f"    imports = [\n{listing(imports)}\n    ]\n  }}\n"
        "}\n"
    )
