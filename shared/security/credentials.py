"""Credentials on the bus: nkey users (an Ed25519 key pair per user; the server holds the public key, the
user its seed), their seed files, the options a NATS client connects with, and the nats-server
`authorization` block that lists every user with its permissions (shared/security/permissions.py).

A credentials file holds one nkey seed (`SU...`), nothing else, readable by its owner only (mode 0600):
nats-py reads it at each (re)connect and signs the server's nonce with it, so the seed never crosses the
wire. The user's inbox prefix is derived from its public key, so it needs no configuration of its own.
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

from shared.security.permissions import Identity, Permissions, inbox_prefix, permissions


class CredentialsError(ValueError):
    """A credentials file that cannot be read or holds no user seed; the message names the file."""


@dataclass(frozen=True, slots=True)
class User:
    """An identity with its key pair: public key for the server's configuration, seed for the user."""

    identity: Identity
    public_key: str
    seed: str

    @property
    def permissions(self) -> Permissions:
        return permissions(self.identity, self.public_key)


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


def write_seed(path: Path, seed: str) -> None:
    """Write a seed file readable by its owner only: created 0600 (never world-readable for a moment),
    replaced atomically so a process reading it at reconnect never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):  # left by a writer that died halfway
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(seed + "\n")
    tmp.replace(path)


def public_key_of(creds: str | Path) -> str:
    """The public key of the seed in a credentials file; CredentialsError if it holds none."""
    path = Path(creds)
    try:
        seed = path.read_bytes().strip()
    except OSError as exc:
        raise CredentialsError(f"credentials file {path}: cannot read it ({exc.strerror})") from exc
    try:
        return _public_key(seed)
    except Exception as exc:  # nkeys raises its own error types, and binascii's for bad base32
        raise CredentialsError(f"credentials file {path}: not an nkey user seed") from exc


def connect_options(creds: str | Path | None) -> dict[str, Any]:
    """The nats-py connect() options for a credentials file (none: an open server, no options)."""
    if not creds:
        return {}
    return {"nkeys_seed": str(creds), "inbox_prefix": inbox_prefix(public_key_of(creds))}


def authorization_block(users: Iterable[User]) -> str:
    """The nats-server `authorization` block listing every user with its permissions. JSON values are
    valid in NATS's configuration syntax, so every subject is quoted exactly as it is written."""
    entries = []
    for user in users:
        grant = user.permissions
        permissions_conf: dict[str, Any] = {
            "publish": {"allow": list(grant.publish)},
            "subscribe": {"allow": list(grant.subscribe)},
        }
        if grant.allow_responses:
            permissions_conf["allow_responses"] = True
        entry = {"nkey": user.public_key, "permissions": permissions_conf}
        entries.append(f"    # {user.identity.user} ({user.identity.role})\n    {json.dumps(entry)}")
    return "authorization {\n  users = [\n" + "\n".join(entries) + "\n  ]\n}\n"
