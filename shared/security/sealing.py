"""Sealing a secret to one recipient: what keeps the ssh plugin's private keys out of the readable log.

A sealed box (contracts.payloads.SealedSecret) is made with a one-time X25519 key pair of the sender and
the recipient's public key: their shared secret, through HKDF-SHA256 (salt: both public keys; info: the
construction's name), is an AES-256-GCM key used once. The associated data is the identity of what the
secret belongs to (`secret_identity`: the job's namespace, name, uid and the secret's name), so a box
copied onto another job's event does not open. The box names the recipient's key by its fingerprint
(`key_id`), so a box sealed to another key is refused saying so, before any decryption is tried.

Pure apart from the randomness of `seal` (a fresh ephemeral key and nonce, which a test may pass in).
Reading and writing key files is secret_keys.py's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from contracts.payloads import JobSecretCreated, SealedSecret

ALGORITHM = "X25519-HKDF-SHA256-AES256GCM"
_INFO = b"lahar sealed secret v1 " + ALGORITHM.encode()
_NONCE_BYTES = 12
_RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


class SealError(ValueError):
    """A sealed box that cannot be opened: another key, a tampered box, or another object's box."""


def raw_public(key: X25519PublicKey) -> bytes:
    return key.public_bytes(*_RAW)


def key_id(key: X25519PublicKey) -> str:
    """The fingerprint of a recipient's public key: sha256 of its raw bytes, the first 16 in hex."""
    return "sha256:" + hashlib.sha256(raw_public(key)).hexdigest()[:32]


def secret_identity(namespace: str, job: str, uid: str, secret: str) -> bytes:
    """The associated data binding a job's secret to that job incarnation (NUL never occurs in a name)."""
    return "\0".join(("JobSecretCreated", namespace, job, uid, secret)).encode()


def seal(
    recipient: X25519PublicKey,
    plaintext: bytes,
    associated: bytes,
    *,
    ephemeral: X25519PrivateKey | None = None,
    nonce: bytes | None = None,
) -> SealedSecret:
    """`plaintext` sealed to `recipient`, bound to `associated`."""
    ephemeral = ephemeral or X25519PrivateKey.generate()
    nonce = nonce if nonce is not None else os.urandom(_NONCE_BYTES)
    sender = ephemeral.public_key()
    key = _derive(ephemeral.exchange(recipient), raw_public(sender), raw_public(recipient))
    return SealedSecret(
        algorithm=ALGORITHM,
        key_id=key_id(recipient),
        ephemeral_key=_b64(raw_public(sender)),
        nonce=_b64(nonce),
        ciphertext=_b64(AESGCM(key).encrypt(nonce, plaintext, associated)),
    )


def open_sealed(private: X25519PrivateKey, box: SealedSecret, associated: bytes) -> bytes:
    """The plaintext of a box sealed to `private`'s public key for `associated`; SealError saying why not."""
    if box.algorithm != ALGORITHM:
        raise SealError(f"sealed with {box.algorithm!r}, this reader knows only {ALGORITHM}")
    recipient = private.public_key()
    if box.key_id != key_id(recipient):
        raise SealError(
            f"sealed to key {box.key_id}, this reader holds key {key_id(recipient)} "
            "(a key from another run of the stack?)"
        )
    try:
        sender_raw = _unb64(box.ephemeral_key, "ephemeral_key")
        sender = X25519PublicKey.from_public_bytes(sender_raw)
        nonce = _unb64(box.nonce, "nonce")
        ciphertext = _unb64(box.ciphertext, "ciphertext")
        key = _derive(private.exchange(sender), sender_raw, raw_public(recipient))
        return AESGCM(key).decrypt(nonce, ciphertext, associated)
    except InvalidTag as exc:
        reason = "authentication failed: the box was tampered with, or sealed for another object"
        raise SealError(reason) from exc
    except ValueError as exc:  # a malformed key, nonce or field
        raise SealError(f"malformed box: {exc}") from exc


def seal_data(recipient: X25519PublicKey, data: Mapping[str, str], associated: bytes) -> SealedSecret:
    """A secret's data (file name -> text) sealed as one JSON object."""
    return seal(recipient, json.dumps(dict(data), sort_keys=True).encode(), associated)


def open_data(private: X25519PrivateKey, box: SealedSecret, associated: bytes) -> dict[str, str]:
    """The data `seal_data` sealed; SealError if it does not open or is not a JSON object of texts."""
    plaintext = open_sealed(private, box, associated)
    try:
        data = json.loads(plaintext)
    except ValueError as exc:
        raise SealError(f"the opened data is not JSON: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise SealError("the opened data is not an object of file name -> text")
    return data


def _derive(shared: bytes, sender: bytes, recipient: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=sender + recipient, info=_INFO).derive(shared)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _unb64(text: str, field: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"{field}: not base64 ({exc})") from exc


def seal_job_secret(
    recipient: X25519PublicKey, namespace: str, job: str, uid: str, name: str, data: Mapping[str, str]
) -> JobSecretCreated:
    """A job's JobSecretCreated with its data sealed to `recipient` for this job incarnation."""
    box = seal_data(recipient, data, secret_identity(namespace, job, uid, name))
    return JobSecretCreated(name=name, uid=uid, sealed=box)


def open_job_secret(
    private: X25519PrivateKey | None, namespace: str, job: str, secret: JobSecretCreated
) -> dict[str, str]:
    """The data of a job's secret (`namespace`/`job`: its event's subject): opened when sealed, as it is
    when written in plain text (an open stack, an old event); SealError when it cannot be opened."""
    if secret.sealed is None:
        return dict(secret.data)
    if private is None:
        raise SealError(f"sealed to key {secret.sealed.key_id}, and this reader has no secrets key")
    return open_data(private, secret.sealed, secret_identity(namespace, job, secret.uid, secret.name))
