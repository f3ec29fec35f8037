"""A client's side of etcd authentication: its user and password, the token etcd gives for them, and
which errors mean the token must be renewed (docs/security.md, "etcd").

etcd's Authenticate RPC returns a token the client sends as gRPC metadata `token` on every call. A
simple token (etcd's default) expires after --auth-token-ttl seconds without use (300 by default) and
when the user's password changes; a call with a token the server no longer knows fails with
UNAUTHENTICATED ("invalid auth token"), and one issued before the roles changed with "revision of auth
store is old". The client then authenticates again, once, and repeats the call (shared/store/etcd.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc
from aetcd import rpc

from shared.security.permissions import ADMIN


class EtcdAuthError(RuntimeError):
    """The credentials could not be read, or etcd refused them."""


@dataclass(frozen=True, slots=True)
class EtcdCredentials:
    user: str
    password: str = ""

    def __repr__(self) -> str:  # never log the password
        return f"EtcdCredentials(user={self.user!r})"

    @classmethod
    def from_file(cls, user: str, password_file: str | Path) -> EtcdCredentials:
        """The user with the password in password_file (its first line; the file `lahar up` writes)."""
        try:
            password = Path(password_file).read_text().splitlines()[0].strip()
        except (OSError, IndexError) as exc:
            raise EtcdAuthError(f"etcd password file {str(password_file)!r} for {user!r}: {exc}") from exc
        if not user or not password:
            raise EtcdAuthError(f"etcd credentials: empty user or password (file {str(password_file)!r})")
        return cls(user, password)


def client_etcd_credentials(
    nats_creds: str | None, user: str | None, password_file: str | None
) -> EtcdCredentials | None:
    """The etcd user a client authenticates as: the password file given (user: `admin` unless named),
    else the `<user>.etcd` file beside a `<user>.nk` credentials file (`lahar up` writes both, so the
    operator's NATS credentials lead to its etcd password), else none."""
    if password_file:
        return EtcdCredentials.from_file(user or ADMIN, password_file)
    if nats_creds and nats_creds.endswith(".nk"):
        beside = Path(nats_creds).with_suffix(".etcd")
        if beside.is_file():
            return EtcdCredentials.from_file(user or named_user(beside) or beside.stem, beside)
    return None


def named_user(password_file: Path) -> str | None:
    """The etcd user a password file names on a later `user: NAME` line (a tenant's, whose file may be
    written anywhere by `lahar tenant add -o`), None if it names none."""
    try:
        lines = password_file.read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == "user" and value.strip():
            return value.strip()
    return None


async def authenticate(channel: grpc.aio.Channel, credentials: EtcdCredentials, timeout_s: float) -> str:
    """A fresh token for the user (raises the gRPC error as it is when etcd cannot be reached, and
    EtcdAuthError when it refuses the user or password)."""
    request = rpc.AuthenticateRequest(name=credentials.user, password=credentials.password)
    try:
        reply = await rpc.AuthStub(channel).Authenticate(request, timeout=timeout_s)
    except grpc.aio.AioRpcError as exc:
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            raise
        raise EtcdAuthError(f"etcd refused user {credentials.user!r}: {exc.details()}") from exc
    return str(reply.token)


def token_refused(exc: grpc.aio.AioRpcError) -> bool:
    """The call failed because of its token (expired, unknown, or older than the roles): authenticate
    again and repeat it."""
    details = exc.details() or ""
    return exc.code() == grpc.StatusCode.UNAUTHENTICATED or "auth store is old" in details
