"""The node agents' secrets key pair on disk: what `lahar up` makes and the services read.

One X25519 key pair per stack run: admission reads the public key (`--secrets-public-key`) and seals
every job secret to it (shared/security/sealing.py); node agents read the private key (`--secrets-key`)
and open them. Both are PEM files written owner-only (0600), like the bus credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from shared.security.credentials import write_private

PRIVATE_FILE = "secrets-key.pem"  # the node agents'
PUBLIC_FILE = "secrets-key.pub.pem"  # admission's


class SecretsKeyError(ValueError):
    """A secrets key file that is missing or holds no X25519 key of the expected kind."""


@dataclass(frozen=True, slots=True)
class SecretsKeyFiles:
    private: Path
    public: Path


def issue_secrets_keys(directory: Path) -> SecretsKeyFiles:
    """A fresh key pair written to `directory` (replacing an earlier run's: secrets sealed to it no
    longer open, docs/security.md)."""
    private = X25519PrivateKey.generate()
    files = SecretsKeyFiles(directory / PRIVATE_FILE, directory / PUBLIC_FILE)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    write_private(files.private, pem.decode())
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    write_private(files.public, public.decode())
    return files


def load_private_key(path: str | Path) -> X25519PrivateKey:
    """The X25519 private key in a PEM file; SecretsKeyError naming the file and what is wrong."""
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except OSError as exc:
        raise SecretsKeyError(f"{path}: cannot read the secrets key: {exc.strerror or exc}") from exc
    except (ValueError, TypeError) as exc:
        raise SecretsKeyError(f"{path}: not an unencrypted private key in PEM: {exc}") from exc
    if not isinstance(key, X25519PrivateKey):
        raise SecretsKeyError(f"{path}: expected an X25519 private key, got {type(key).__name__}")
    return key


def load_public_key(path: str | Path) -> X25519PublicKey:
    """The X25519 public key in a PEM file; SecretsKeyError naming the file and what is wrong."""
    try:
        key = serialization.load_pem_public_key(Path(path).read_bytes())
    except OSError as exc:
        raise SecretsKeyError(f"{path}: cannot read the secrets public key: {exc.strerror or exc}") from exc
    except (ValueError, TypeError) as exc:
        raise SecretsKeyError(f"{path}: not a public key in PEM: {exc}") from exc
    if not isinstance(key, X25519PublicKey):
        raise SecretsKeyError(f"{path}: expected an X25519 public key, got {type(key).__name__}")
    return key


def key_file_problems(field: str, path: str, load: Callable[[str], object]) -> list[str]:
    """A configuration's problem line for a key file `load` cannot read as its key (none if unset)."""
    if not path:
        return []
    try:
        load(path)
    except SecretsKeyError as exc:
        return [f"{field}: {exc}"]
    return []
