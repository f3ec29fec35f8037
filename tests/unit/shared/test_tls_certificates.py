"""The local CA and the certificates it signs (shared/security/tls.py): chains, names, key files, and a
client context that trusts this CA and nothing else (a real TLS handshake, in memory)."""

from __future__ import annotations

import ipaddress
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID

from shared.security.tls import KeyPair, TlsError, client_context, issue, new_ca, read_ca, write_pair


def sans(pair: KeyPair) -> tuple[set[str], set[str]]:
    """(IP addresses, DNS names) the certificate is valid for."""
    ext = pair.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    ips = {str(ip) for ip in ext.get_values_for_type(x509.IPAddress)}
    return ips, set(ext.get_values_for_type(x509.DNSName))


def test_a_leaf_chains_to_its_ca_and_not_to_another() -> None:
    ca, other = new_ca(), new_ca()
    leaf = issue(ca, "lahar nats")
    leaf.certificate.verify_directly_issued_by(ca.certificate)  # raises when the signature is not ca's
    with pytest.raises(InvalidSignature):  # the same subject name, another key
        leaf.certificate.verify_directly_issued_by(other.certificate)
    constraints = ca.certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca and constraints.path_length == 0  # signs leaves, no intermediate CA
    assert not leaf.certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usages = leaf.certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    # a route and a peer connection present the same certificate as client and as server
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert leaf.certificate.not_valid_after_utc <= ca.certificate.not_valid_after_utc


def test_a_server_certificate_names_loopback_and_the_names_the_caller_gives() -> None:
    ca = new_ca()
    ips, names = sans(issue(ca, "lahar etcd"))
    assert ips == {"127.0.0.1", "::1"} and names == {"localhost"}
    ips, names = sans(issue(ca, "lahar nats", ["nats-1", "NATS-2.lahar.svc", "10.0.0.7", "127.0.0.1"]))
    assert ips == {"127.0.0.1", "::1", "10.0.0.7"}
    assert names == {"localhost", "nats-1", "nats-2.lahar.svc"}
    assert all(ipaddress.ip_address(ip) for ip in ips)


def test_a_bad_name_is_refused_naming_every_one() -> None:
    with pytest.raises(TlsError) as refused:
        issue(new_ca(), "lahar nats", ["good", "bad name", "-dash", "x" * 64])
    message = str(refused.value)
    assert "'bad name'" in message and "'-dash'" in message and repr("x" * 64) in message
    assert "'good'" not in message


def test_keys_are_written_for_the_owner_only_and_certificates_for_all(tmp_path: Path) -> None:
    pair = issue(new_ca(), "lahar nats")
    write_pair(pair, tmp_path / "nats.pem", tmp_path / "nats.key")
    assert stat.S_IMODE((tmp_path / "nats.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "nats.pem").stat().st_mode) == 0o644
    assert (tmp_path / "nats.key").read_bytes() == pair.key_pem
    write_pair(issue(new_ca(), "lahar nats"), tmp_path / "nats.pem", tmp_path / "nats.key")  # replaced
    assert (tmp_path / "nats.key").read_bytes() != pair.key_pem


def _handshake(client: ssl.SSLContext, server: ssl.SSLContext, hostname: str) -> None:
    """A TLS handshake between the two contexts over memory buffers; raises ssl.SSLError if it fails."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname=hostname)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(10):
        for name, end in (("c", c), ("s", s)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("the handshake did not finish")


def _server_context(pair: KeyPair, tmp_path: Path) -> ssl.SSLContext:
    write_pair(pair, tmp_path / "server.pem", tmp_path / "server.key")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.pem", tmp_path / "server.key")
    return context


def test_the_client_context_trusts_this_ca_for_the_names_in_the_certificate_only(tmp_path: Path) -> None:
    ca = new_ca()
    write_pair(ca, tmp_path / "ca.pem", tmp_path / "ca.key")
    client = client_context(tmp_path / "ca.pem")
    _handshake(client, _server_context(issue(ca, "lahar nats", ["nats-1"]), tmp_path), "127.0.0.1")
    _handshake(client, _server_context(issue(ca, "lahar nats", ["nats-1"]), tmp_path), "nats-1")
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        _handshake(client, _server_context(issue(ca, "lahar nats"), tmp_path), "elsewhere")
    stranger = new_ca()  # a certificate from another CA, valid for the very same names
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
        _handshake(client, _server_context(issue(stranger, "lahar nats"), tmp_path), "127.0.0.1")


def test_a_missing_or_empty_ca_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(TlsError, match=r"nowhere\.pem: cannot read it"):
        read_ca(tmp_path / "nowhere.pem")
    (tmp_path / "empty.pem").write_text("not a certificate\n")
    with pytest.raises(TlsError, match=r"empty\.pem: holds no PEM certificate"):
        client_context(tmp_path / "empty.pem")
