"""A local certificate authority and the certificates it signs, for TLS on NATS and etcd (docs/security.md).

The functional core: make a CA (an ECDSA P-256 key and a self-signed certificate), and leaf
certificates it signs for servers, with the addresses they answer on as subject alternative names
(always 127.0.0.1, ::1 and localhost, plus whatever the caller names: a compose deployment's service
host names). Every leaf may act as a TLS server and as a TLS client, because a NATS route and an etcd peer
connection are both at once: each end presents its certificate and verifies the other's with the CA.

`write_pair` is the only function that touches the disk (keys created 0600, certificates 0644), and
`client_context` builds the `ssl.SSLContext` a client verifies its server with.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from shared.security.credentials import write_private

LOCAL_NAMES = ("127.0.0.1", "::1", "localhost")  # what every server certificate answers to
CA_VALID_DAYS = 3650
LEAF_VALID_DAYS = 825  # a leaf is replaced at every `lahar up`; the bound only limits a stolen one
_CLOCK_SKEW = datetime.timedelta(minutes=5)  # backdated so a peer whose clock is a little behind accepts it


class TlsError(ValueError):
    """A certificate or key file is missing or unreadable, or a name is not a valid host name."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A private key and its certificate, PEM-encoded."""

    key_pem: bytes
    cert_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @property
    def private_key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise TlsError("expected an elliptic-curve private key")
        return key


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """Where a server's (or client's) certificate, its key and the CA that signed it are on disk."""

    cert: Path
    key: Path
    ca: Path


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "lahar"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def new_ca(common_name: str = "lahar local CA", *, valid_days: int = CA_VALID_DAYS) -> KeyPair:
    """A fresh certificate authority: may sign leaf certificates, nothing below them."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(_pem_key(key), cert.public_bytes(serialization.Encoding.PEM))


def subject_names(names: Sequence[str]) -> list[x509.GeneralName]:
    """The local names and the given ones as SAN entries (an address as an IP entry, else a DNS name),
    without duplicates; TlsError naming every name that is neither."""
    entries: list[x509.GeneralName] = []
    bad = []
    for name in [*LOCAL_NAMES, *names]:
        name = name.strip()
        entry: x509.GeneralName
        try:
            entry = x509.IPAddress(ipaddress.ip_address(name))
        except ValueError:
            if not _valid_dns_name(name):
                bad.append(name)
                continue
            entry = x509.DNSName(name.lower())
        if entry not in entries:
            entries.append(entry)
    if bad:
        raise TlsError(f"not an IP address or a host name: {', '.join(repr(b) for b in bad)}")
    return entries


def _valid_dns_name(name: str) -> bool:
    labels = name.rstrip(".").split(".")
    return (
        0 < len(name) <= 253
        and all(0 < len(label) <= 63 for label in labels)
        and all(label.replace("-", "").replace("_", "").isalnum() and label.isascii() for label in labels)
        and not any(label.startswith("-") or label.endswith("-") for label in labels)
    )


def issue(
    ca: KeyPair, common_name: str, names: Sequence[str] = (), *, valid_days: int = LEAF_VALID_DAYS
) -> KeyPair:
    """A leaf certificate signed by ca for common_name, valid for the local names and `names`, usable
    both as a server's and as a client's (routes and peers are both)."""
    key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = ca.certificate
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(min(now + datetime.timedelta(days=valid_days), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(subject_names(names)), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.private_key.public_key()), critical=False
        )
        .sign(ca.private_key, hashes.SHA256())
    )
    return KeyPair(_pem_key(key), cert.public_bytes(serialization.Encoding.PEM))


def write_pair(pair: KeyPair, cert_path: Path, key_path: Path) -> None:
    """The key 0600 (created with that mode, replaced atomically), the certificate 0644."""
    write_private(key_path, pair.key_pem.decode())
    tmp = cert_path.with_name(cert_path.name + ".tmp")
    tmp.write_bytes(pair.cert_pem)
    os.chmod(tmp, 0o644)
    tmp.replace(cert_path)


def read_ca(path: str | Path) -> bytes:
    """The PEM bytes of a CA file; TlsError naming the file when it is missing or holds no certificate."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TlsError(f"TLS CA file {path}: cannot read it ({exc.strerror or exc})") from exc
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise TlsError(f"TLS CA file {path}: holds no PEM certificate")
    return data


class _NatsPyEofNoise(logging.Filter):
    """nats-py upgrades its plain stream to TLS after asyncio's StreamReaderProtocol was told of the
    connection, so the protocol believes the stream plain and asks to keep it half-open at EOF; asyncio
    then logs a warning every time the server closes a TLS connection (at every close and reconnect).
    It is harmless (the connection closes as it should) and only noise in every service's log and on
    every CLI command's stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("returning true from eof_received() has no effect")


_EOF_NOISE = _NatsPyEofNoise()


def client_context(
    ca: str | Path, cert: str | Path | None = None, key: str | Path | None = None
) -> ssl.SSLContext:
    """The SSLContext of a client that trusts only the CA in `ca` (and checks the server's name or
    address), presenting cert/key when given (for a server that verifies its clients)."""
    logging.getLogger("asyncio").addFilter(_EOF_NOISE)  # once: a logger keeps one copy of a filter
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=read_ca(ca).decode())
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert is not None:
        try:
            context.load_cert_chain(str(cert), None if key is None else str(key))
        except (OSError, ssl.SSLError) as exc:
            raise TlsError(f"TLS client certificate {cert}: cannot load it ({exc})") from exc
    return context
