"""Sealing job secrets to the node agents (shared/security/sealing.py) and their key files
(shared/security/secret_keys.py): only the recipient's key opens a box, only for the object it was sealed
for, and anything changed in it is refused with a reason."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from contracts.payloads import JobSecretCreated, SealedSecret
from services.admission.service import AdmissionConfig
from services.node_agent.config import NodeAgentConfig
from shared.config import ConfigError
from shared.security.sealing import (
    ALGORITHM,
    SealError,
    key_id,
    open_data,
    open_job_secret,
    open_sealed,
    seal,
    seal_data,
    seal_job_secret,
    secret_identity,
)
from shared.security.secret_keys import (
    SecretsKeyError,
    issue_secrets_keys,
    load_private_key,
    load_public_key,
)

IDENTITY = secret_identity("default", "mpi", "uid-1", "mpi-ssh")
PAIR = {"id_rsa": "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n", "id_rsa.pub": "ssh-rsa AAAA lahar"}


@pytest.fixture
def agents() -> X25519PrivateKey:
    return X25519PrivateKey.generate()


def flipped(text: str, index: int = 0) -> str:
    """The base64 field with one bit of its bytes flipped."""
    raw = bytearray(base64.b64decode(text))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def test_a_sealed_box_opens_with_the_recipients_key_and_names_that_key(agents: X25519PrivateKey) -> None:
    box = seal(agents.public_key(), b"the secret", IDENTITY)
    assert box.algorithm == ALGORITHM and box.key_id == key_id(agents.public_key())
    assert b"the secret" not in msgspec.json.encode(box)
    assert open_sealed(agents, box, IDENTITY) == b"the secret"
    # a fresh ephemeral key and nonce each time: the same secret never seals to the same box
    assert seal(agents.public_key(), b"the secret", IDENTITY).ciphertext != box.ciphertext


def test_another_key_is_refused_naming_both_keys(agents: X25519PrivateKey) -> None:
    box = seal(agents.public_key(), b"the secret", IDENTITY)
    other = X25519PrivateKey.generate()
    refused = f"sealed to key {box.key_id}, this reader holds key {key_id(other.public_key())}"
    with pytest.raises(SealError, match=refused):
        open_sealed(other, box, IDENTITY)
    # even with the key id forged to the reader's: the key agreement differs, the tag does not verify
    with pytest.raises(SealError, match="authentication failed"):
        open_sealed(other, replace_key_id(box, key_id(other.public_key())), IDENTITY)


def replace_key_id(box: SealedSecret, key: str) -> SealedSecret:
    return msgspec.structs.replace(box, key_id=key)


@pytest.mark.parametrize("field", ["ciphertext", "nonce", "ephemeral_key"])
def test_a_tampered_box_is_refused(agents: X25519PrivateKey, field: str) -> None:
    box = seal(agents.public_key(), b"the secret", IDENTITY)
    tampered = msgspec.structs.replace(box, **{field: flipped(getattr(box, field))})
    with pytest.raises(SealError, match="authentication failed"):
        open_sealed(agents, tampered, IDENTITY)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("algorithm", "RSA-OAEP", "sealed with 'RSA-OAEP'"),
        ("nonce", "not base64!", "malformed box: nonce: not base64"),
        ("ephemeral_key", base64.b64encode(b"short").decode(), "malformed box"),
    ],
)
def test_a_malformed_box_is_refused_with_its_reason(
    agents: X25519PrivateKey, field: str, value: str, reason: str
) -> None:
    box = msgspec.structs.replace(seal(agents.public_key(), b"x", IDENTITY), **{field: value})
    with pytest.raises(SealError, match=reason):
        open_sealed(agents, box, IDENTITY)


@pytest.mark.parametrize(
    "other",
    [
        secret_identity("team-b", "mpi", "uid-1", "mpi-ssh"),  # another namespace
        secret_identity("default", "other", "uid-1", "mpi-ssh"),  # another job
        secret_identity("default", "mpi", "uid-2", "mpi-ssh"),  # another incarnation of the job
        secret_identity("default", "mpi", "uid-1", "other-ssh"),  # another secret
    ],
)
def test_a_box_opens_only_for_the_object_it_was_sealed_for(agents: X25519PrivateKey, other: bytes) -> None:
    box = seal(agents.public_key(), b"the secret", IDENTITY)
    with pytest.raises(SealError, match="authentication failed"):
        open_sealed(agents, box, other)


def test_a_jobs_secret_round_trips_and_cannot_be_replayed_onto_another_job(agents: X25519PrivateKey) -> None:
    secret = seal_job_secret(agents.public_key(), "default", "mpi", "uid-1", "mpi-ssh", PAIR)
    assert secret.data == {} and secret.sealed is not None
    encoded = msgspec.json.encode(secret)
    assert b"PRIVATE KEY" not in encoded and b"MIIE" not in encoded
    assert open_job_secret(agents, "default", "mpi", secret) == PAIR
    with pytest.raises(SealError, match="authentication failed"):
        open_job_secret(agents, "default", "other", secret)  # the same payload on another job's subject
    with pytest.raises(SealError, match="authentication failed"):
        open_job_secret(agents, "default", "mpi", msgspec.structs.replace(secret, uid="uid-2"))
    with pytest.raises(SealError, match="this reader has no secrets key"):
        open_job_secret(None, "default", "mpi", secret)


def test_a_plain_secret_is_read_as_it_is_with_or_without_a_key(agents: X25519PrivateKey) -> None:
    plain = JobSecretCreated(name="mpi-ssh", uid="uid-1", data=PAIR)
    assert open_job_secret(agents, "default", "mpi", plain) == PAIR
    assert open_job_secret(None, "default", "mpi", plain) == PAIR


def test_opened_data_must_be_an_object_of_texts(agents: X25519PrivateKey) -> None:
    assert open_data(agents, seal_data(agents.public_key(), PAIR, IDENTITY), IDENTITY) == PAIR
    with pytest.raises(SealError, match="not an object of file name -> text"):
        open_data(agents, seal(agents.public_key(), b'{"id_rsa": 1}', IDENTITY), IDENTITY)
    with pytest.raises(SealError, match="not JSON"):
        open_data(agents, seal(agents.public_key(), b"\xff", IDENTITY), IDENTITY)


# --- key files -----------------------------------------------------------------------------------------


def test_issued_keys_are_owner_only_and_load_as_a_matching_pair(tmp_path: Path) -> None:
    files = issue_secrets_keys(tmp_path / "creds")
    for path in (files.private, files.public):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    private, public = load_private_key(files.private), load_public_key(files.public)
    assert key_id(private.public_key()) == key_id(public)
    assert open_sealed(private, seal(public, b"x", IDENTITY), IDENTITY) == b"x"
    # a new run's pair is another key: boxes sealed to the old one no longer open
    again = issue_secrets_keys(tmp_path / "creds")
    assert key_id(load_public_key(again.public)) != key_id(public)


def test_a_bad_key_file_is_refused_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    with pytest.raises(SecretsKeyError, match=f"{missing}: cannot read"):
        load_private_key(missing)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    with pytest.raises(SecretsKeyError, match=f"{garbage}: not a public key in PEM"):
        load_public_key(garbage)
    ed25519 = tmp_path / "ed25519.pem"
    pem = Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    ed25519.write_bytes(pem)
    with pytest.raises(SecretsKeyError, match="expected an X25519 private key, got"):
        load_private_key(ed25519)
    files = issue_secrets_keys(tmp_path / "creds")
    with pytest.raises(SecretsKeyError, match="not an unencrypted private key in PEM"):
        load_private_key(files.public)  # the public file where the private one belongs


def test_a_bad_key_file_in_a_configuration_is_a_problem_naming_the_setting(tmp_path: Path) -> None:
    files = issue_secrets_keys(tmp_path / "creds")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    assert AdmissionConfig(secrets_public_key=str(files.public)).secrets_public_key == str(files.public)
    assert NodeAgentConfig(runtime="sim", secrets_key=str(files.private)).secrets_key == str(files.private)
    with pytest.raises(ConfigError) as refused:
        AdmissionConfig(secrets_public_key=str(garbage))
    assert [p.split(": not a")[0] for p in refused.value.problems] == [f"secrets_public_key: {garbage}"]
    with pytest.raises(ConfigError) as refused:
        NodeAgentConfig(runtime="sim", secrets_key=str(files.public))  # the public file for the private
    assert [p.split(": not an")[0] for p in refused.value.problems] == [f"secrets_key: {files.public}"]
