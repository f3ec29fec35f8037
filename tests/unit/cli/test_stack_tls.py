"""What `lahar up` makes for TLS (services/cli/stack/stack_tls.py) and how the servers are told to use
it: NATS's client port and routes, etcd's client port and peers, health checks left on plain HTTP, and
every service given the CA."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from services.binder.service import BinderConfig
from services.cli.stack.layout import ServiceSpec
from services.cli.stack.stack_servers import StackServers
from services.cli.stack.stack_tls import StackTls, issue_tls
from shared.config import ConfigError, load_config
from shared.server_cluster import etcd_cluster, member_conf, nats_cluster
from shared.servers import EtcdServer, NatsServer


def value(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_every_start_makes_a_new_ca_and_the_servers_certificates_under_home_tls(tmp_path: Path) -> None:
    first = issue_tls(tmp_path)
    assert stat.S_IMODE((tmp_path / "tls").stat().st_mode) == 0o700
    ca = certificate(first.ca)
    for files in (first.nats, first.etcd, first.etcd_peer):
        assert files.ca == first.ca
        assert stat.S_IMODE(files.key.stat().st_mode) == 0o600, files.key
        certificate(files.cert).verify_directly_issued_by(ca)
    assert stat.S_IMODE((tmp_path / "tls" / "ca.key").stat().st_mode) == 0o600
    old_leaf = certificate(first.nats.cert)
    second = issue_tls(tmp_path)  # `lahar down && lahar up`: what was copied out of the first run is void
    with pytest.raises(InvalidSignature):
        old_leaf.verify_directly_issued_by(certificate(second.ca))


@pytest.fixture
def tls(tmp_path: Path) -> StackTls:
    return issue_tls(tmp_path)


def test_nats_takes_tls_clients_only_and_keeps_its_monitoring_port_plain(
    tmp_path: Path, tls: StackTls
) -> None:
    server = NatsServer(tmp_path / "nats", tls=tls.nats)
    server._pick_ports()
    command = server._command()
    assert "--tls" in command and "--tlsverify" not in command  # clients authenticate with their nkey
    assert value(command, "--tlscert") == str(tls.nats.cert)
    assert value(command, "--tlskey") == str(tls.nats.key)
    assert server.url == f"tls://127.0.0.1:{server.port}"
    assert server.health_url.startswith(f"http://127.0.0.1:{server.http_port}/")
    plain = NatsServer(tmp_path / "plain")
    assert "--tls" not in plain._command() and plain.url.startswith("nats://")


def test_etcd_serves_clients_over_https_and_health_on_a_plain_loopback_port(
    tmp_path: Path, tls: StackTls
) -> None:
    server = EtcdServer(tmp_path / "etcd", tls=tls.etcd)
    server._pick_ports()
    command = server._command()
    assert value(command, "--listen-client-urls") == f"https://127.0.0.1:{server.port}"
    assert value(command, "--advertise-client-urls") == server.url
    assert value(command, "--cert-file") == str(tls.etcd.cert)
    # with a trusted CA etcd would demand a certificate of every client
    assert "--trusted-ca-file" not in command and "--client-cert-auth" not in command
    assert value(command, "--listen-metrics-urls") == f"http://127.0.0.1:{server.metrics_port}"
    assert server.health_url == f"http://127.0.0.1:{server.metrics_port}/health"
    assert len({server.port, server.peer_port, server.metrics_port}) == 3
    plain = EtcdServer(tmp_path / "plain")
    plain._pick_ports()
    assert "--cert-file" not in plain._command() and plain.health_url == f"{plain.url}/health"


def test_the_etcd_members_verify_each_other_over_https(tmp_path: Path, tls: StackTls) -> None:
    members = etcd_cluster(tmp_path, tls=tls.etcd, peer_tls=tls.etcd_peer)
    commands = [m._command() for m in members]
    (initial,) = {value(c, "--initial-cluster") for c in commands}
    assert initial.split(",") == [f"{m.member}=https://127.0.0.1:{m.peer_port}" for m in members]
    for command in commands:
        assert value(command, "--peer-cert-file") == str(tls.etcd_peer.cert)
        assert value(command, "--peer-trusted-ca-file") == str(tls.ca)
        assert "--peer-client-cert-auth" in command
    ports = [p for m in members for p in (m.port, m.peer_port, m.metrics_port)]
    assert len(set(ports)) == 9
    assert all(m.health_url.startswith("http://127.0.0.1:") for m in members)


def test_the_nats_routes_verify_each_other_and_the_members_keep_the_users(
    tmp_path: Path, tls: StackTls
) -> None:
    auth = tmp_path / "nats" / "auth.conf"
    members = nats_cluster(tmp_path, tls=tls.nats, include=auth)
    for member in members:
        assert value(member._command(), "--config") == str(member.base_dir / "member.conf")
        # TLS in the file only: a reload (after `lahar tenant add`) refuses a server started with --tls
        assert "--tls" not in member._command() and member.url.startswith("tls://")
    text = member_conf(members[0].base_dir, tls.nats, auth)
    assert 'include "../nats/auth.conf"' in text  # nats-server takes relative includes only
    assert "cluster { name: lahar, tls {" in text and "verify: true" in text and str(tls.nats.cert) in text
    assert f'\ntls {{ cert_file: "{tls.nats.cert}"' in text  # the clients' port
    assert "server_name: $LAHAR_NATS_SERVER_NAME" in text  # a reload takes the name from the file
    assert "tls" not in member_conf(members[0].base_dir, None, auth)


def test_every_service_is_given_the_ca(tmp_path: Path, tls: StackTls) -> None:
    servers = StackServers([], [], stream_replicas=1, tls_ca=str(tls.ca))
    command = ServiceSpec("binder", "services.binder").command(
        "tls://127.0.0.1:4222", "127.0.0.1:2379", 9100, extra=servers.service_args()
    )
    assert load_config(BinderConfig, command[3:]).tls_ca == str(tls.ca)
    with pytest.raises(ConfigError, match=r"tls_ca: no such file '.*nowhere.pem'"):
        load_config(BinderConfig, [*command[3:], "--tls-ca", str(tmp_path / "nowhere.pem")])
