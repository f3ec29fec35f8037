"""`lahar up --ha`: the command lines of the clustered servers, and what the services are told."""

from __future__ import annotations

from pathlib import Path

import yaml

from services.binder.service import BinderConfig
from services.cli.stack.layout import ServiceSpec
from services.cli.stack.stack_servers import StackServers
from shared.config import env_name, flag_name, load_config
from shared.server_cluster import (
    ETCD_ELECTION_TIMEOUT_MS,
    ETCD_HEARTBEAT_MS,
    etcd_cluster,
    nats_cluster,
)

ROOT = Path(__file__).resolve().parents[3]


def value(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_each_nats_server_routes_to_the_two_others_in_one_named_cluster(tmp_path: Path) -> None:
    members = nats_cluster(tmp_path)
    commands = [m._command() for m in members]
    cluster_urls = [value(c, "--cluster") for c in commands]
    for member, command in zip(members, commands, strict=True):
        routes = set(value(command, "--routes").split(","))
        assert routes == set(cluster_urls) - {value(command, "--cluster")}
        assert value(command, "--cluster_name") == "lahar"
        assert value(command, "--store_dir") == str(member.data_dir)
        assert "--jetstream" in command
    ports = [p for m in members for p in (m.port, m.http_port, m.cluster_port)]
    assert len(set(ports)) == 9  # every member its own three ports
    assert len({value(c, "--server_name") for c in commands}) == 3
    assert [m.name for m in members] == ["nats-server-1", "nats-server-2", "nats-server-3"]
    # status asks whether the member is current (plain /healthz), not only whether JetStream is on
    assert all(m.health_url.endswith("/healthz") for m in members)


def test_each_etcd_member_knows_the_whole_cluster_and_restarts_as_an_existing_member(tmp_path: Path) -> None:
    members = etcd_cluster(tmp_path)
    commands = [m._command() for m in members]
    (initial,) = {value(c, "--initial-cluster") for c in commands}  # the same for every member
    assert initial.split(",") == [f"{m.member}=http://127.0.0.1:{m.peer_port}" for m in members]
    assert all(value(c, "--initial-advertise-peer-urls") in initial for c in commands)
    assert {value(c, "--initial-cluster-state") for c in commands} == {"new"}
    assert value(commands[0], "--heartbeat-interval") == str(ETCD_HEARTBEAT_MS)
    assert value(commands[0], "--election-timeout") == str(ETCD_ELECTION_TIMEOUT_MS)
    (members[0].data_dir / "member").mkdir(parents=True)  # what etcd writes once it has joined
    assert value(members[0]._command(), "--initial-cluster-state") == "existing"
    assert value(members[1]._command(), "--initial-cluster-state") == "new"


def test_services_get_every_server_and_the_stream_replicas_the_compose_topology_sets(tmp_path: Path) -> None:
    servers = StackServers(nats_cluster(tmp_path), etcd_cluster(tmp_path), stream_replicas=3)
    command = ServiceSpec("binder", "services.binder").command(
        servers.nats_url, servers.etcd_endpoint, 9100, extra=servers.service_args()
    )
    config = load_config(BinderConfig, command[3:])
    assert config.stream_replicas == 3
    assert len(config.nats_url.split(",")) == 3 and len(config.etcd_endpoints) == 3
    # the very setting deploy/compose gives every service
    assert flag_name("stream_replicas") in servers.service_args()
    compose = yaml.safe_load((ROOT / "deploy" / "compose" / "docker-compose.yaml").read_text())
    assert compose["x-lahar-env"][env_name("stream_replicas")] == str(servers.stream_replicas)


def test_the_default_stack_tells_services_nothing_more() -> None:
    assert StackServers([], [], stream_replicas=1).service_args() == ()
