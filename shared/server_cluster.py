"""Three-member clusters of nats-server and etcd on loopback: the local stack's HA topology (`lahar up --ha`).

Every member has fixed ports chosen once for the whole cluster (the peers' addresses are part of each
member's command line), its own data directory and log, and is restarted like a single server (same ports,
same data): a restarted nats-server routes to its peers again and catches up its streams, a restarted etcd
member finds its membership in its data directory and catches up from the leader. A cluster is launched
whole and then waited for, because no member can be healthy before a majority of them runs.

With TLS (docs/security.md) the members' own traffic is encrypted and authenticated both ways: a NATS
route and an etcd peer connection each present the member's certificate and verify the other's against
the CA, so nobody without a certificate from it can join the cluster or listen in.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from shared.security.tls import TlsFiles
from shared.servers import SERVER_NAME_ENV, EtcdServer, NatsServer, ServerError, free_port, http_ok

CLUSTER_SIZE = 3  # tolerates the loss of one member; streams get as many replicas
NATS_CLUSTER_NAME = "lahar"
ETCD_CLUSTER_TOKEN = "lahar"
# etcd's raft timers, lowered from 100 ms / 1000 ms for loopback: after its leader dies a member waits
# one to two election timeouts before it campaigns, and meanwhile no lease can be renewed. With the
# defaults that silence (1-2 s) nears the 2 s lease of lahar's elected services, whose leaders would step
# down when etcd's leader dies; at 500 ms it is 0.5-1 s. The heartbeat keeps the defaults' ratio (a tenth
# of the timeout), and a loopback round trip is far below both.
ETCD_HEARTBEAT_MS = 50
ETCD_ELECTION_TIMEOUT_MS = 500
ROUTE_TLS_TIMEOUT_S = 5  # a route's TLS handshake (nats-server's default of 2 s is tight on a busy machine)
MEMBER_CONF = "member.conf"


def _distinct_ports(count: int) -> list[int]:
    """count free loopback ports, no two the same (each found free by binding port 0)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


class ClusteredNats(NatsServer):
    """One nats-server of a JetStream cluster, routing to every other member. Its TLS, when it has any, is
    in its configuration file (member_conf), never on the command line."""

    tls_in_config = True

    def __init__(
        self,
        base_dir: Path,
        *,
        index: int,
        port: int,
        http_port: int,
        cluster_port: int,
        route_ports: Sequence[int],
        extra_args: Sequence[str] = (),
        tls: TlsFiles | None = None,
        include: Path | None = None,
    ) -> None:
        self.name = f"nats-server-{index}"
        routes = ",".join(f"nats://127.0.0.1:{p}" for p in route_ports if p != cluster_port)
        cluster = ["--cluster", f"nats://127.0.0.1:{cluster_port}", "--routes", routes]
        # the routes' TLS can only be configured in a file, which then includes the given configuration
        # (the bus's accounts) since nats-server reads one file
        self.conf = base_dir / MEMBER_CONF
        self.include = include
        conf = ["--config", str(self.conf)]
        super().__init__(
            base_dir,
            extra_args=[*extra_args, *conf, *cluster, "--cluster_name", NATS_CLUSTER_NAME],
            tls=tls,
        )
        self.port, self.http_port, self.cluster_port = port, http_port, cluster_port

    def _spawn(self) -> None:
        self.conf.parent.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(member_conf(self.conf.parent, self.tls, self.include))
        super()._spawn()

    def _pick_ports(self) -> None:
        pass  # chosen for the whole cluster at once: the peers route to them

    def _healthy(self) -> bool:
        # Started: JetStream is on. Whether the member is current (a meta leader known, every stream
        # caught up) is what health_url asks, which no member answers before a majority runs.
        return http_ok(f"{self.monitor_url}/healthz?js-enabled-only=true")

    @property
    def health_url(self) -> str:
        # Plain /healthz: JetStream enabled, a meta leader known, and every stream and consumer this
        # server holds a replica of current; a member cut off from its peers or still catching up fails it.
        return f"{self.monitor_url}/healthz"


def member_conf(conf_dir: Path, tls: TlsFiles | None, include: Path | None) -> str:
    """A clustered nats-server's configuration file: its name (from its environment), the cluster's name,
    the routes' TLS (each end verifying the other), the clients' TLS, and the included file (by a path
    relative to conf_dir, the only kind nats-server's include takes). A reload (SIGHUP, after `lahar
    tenant add`) rereads the name, the cluster's name and TLS from this file alone and refuses to run when
    they differ from what the server runs with, so every one of them is here, TLS only here."""
    lines = ["# written by lahar at every start of this member", f"server_name: ${SERVER_NAME_ENV}"]
    if tls is not None:
        files = f'cert_file: "{tls.cert}", key_file: "{tls.key}", ca_file: "{tls.ca}"'
        route_tls = f"tls {{ {files}, verify: true, timeout: {ROUTE_TLS_TIMEOUT_S} }}"
        lines.append(f"cluster {{ name: {NATS_CLUSTER_NAME}, {route_tls} }}")
        # clients verify the server; they are not asked for a certificate (their nkey authenticates them)
        lines.append(f'tls {{ cert_file: "{tls.cert}", key_file: "{tls.key}" }}')
    else:
        lines.append(f"cluster {{ name: {NATS_CLUSTER_NAME} }}")
    if include is not None:
        lines.append(f'include "{os.path.relpath(include, conf_dir)}"')
    return "\n".join(lines) + "\n"


class EtcdMember(EtcdServer):
    """One member of an etcd cluster on loopback."""

    def __init__(
        self,
        base_dir: Path,
        *,
        index: int,
        port: int,
        peer_port: int,
        initial_cluster: str,
        metrics_port: int = 0,
        tls: TlsFiles | None = None,
        peer_tls: TlsFiles | None = None,
    ) -> None:
        self.name = f"etcd-{index}"
        self.index = index
        timers = [
            "--heartbeat-interval",
            str(ETCD_HEARTBEAT_MS),
            "--election-timeout",
            str(ETCD_ELECTION_TIMEOUT_MS),
        ]
        super().__init__(base_dir, extra_args=timers, tls=tls, peer_tls=peer_tls)
        self.port, self.peer_port, self.initial_cluster = port, peer_port, initial_cluster
        self.metrics_port = metrics_port

    def _pick_ports(self) -> None:
        pass  # chosen for the whole cluster at once: every member's peer URL is in initial_cluster

    @property
    def member(self) -> str:
        return f"lahar-etcd-{self.index}"

    def _cluster_args(self) -> list[str]:
        # A member that has a data directory already belongs to the cluster: it restarts as an existing
        # member (etcd then takes the membership from its data and ignores the initial cluster).
        state = "existing" if (self.data_dir / "member").is_dir() else "new"
        return [
            "--initial-cluster",
            self.initial_cluster,
            "--initial-cluster-state",
            state,
            "--initial-cluster-token",
            ETCD_CLUSTER_TOKEN,
        ]


def nats_cluster(
    home: Path, extra_args: Sequence[str] = (), *, tls: TlsFiles | None = None, include: Path | None = None
) -> list[ClusteredNats]:
    """The NATS members, in home/nats-server-<i>, on fresh ports (not started); extra_args go to every
    member, and every member's configuration includes `include` (e.g. the file listing the users of the
    bus). tls: clients and routes over TLS, with the same certificate on every member."""
    ports = _distinct_ports(3 * CLUSTER_SIZE)
    clients, monitors, routes = ports[0::3], ports[1::3], ports[2::3]
    return [
        ClusteredNats(
            home / f"nats-server-{i + 1}",
            index=i + 1,
            port=clients[i],
            http_port=monitors[i],
            cluster_port=routes[i],
            route_ports=routes,
            extra_args=extra_args,
            tls=tls,
            include=include,
        )
        for i in range(CLUSTER_SIZE)
    ]


def etcd_cluster(
    home: Path, *, tls: TlsFiles | None = None, peer_tls: TlsFiles | None = None
) -> list[EtcdMember]:
    """The etcd members, in home/etcd-<i>, on fresh ports (not started). tls: clients over https (health
    and metrics then on a plain loopback port of their own); peer_tls: peers over https, verifying each
    other (by default the client-facing files)."""
    per_member = 3 if tls is not None else 2  # a metrics port of its own with TLS only
    ports = _distinct_ports(per_member * CLUSTER_SIZE)
    clients, peers = ports[0::per_member], ports[1::per_member]
    metrics = ports[2::per_member] if tls is not None else [0] * CLUSTER_SIZE
    peer_scheme = "https" if (peer_tls or tls) is not None else "http"
    initial = ",".join(
        f"lahar-etcd-{i + 1}={peer_scheme}://127.0.0.1:{peers[i]}" for i in range(CLUSTER_SIZE)
    )
    return [
        EtcdMember(
            home / f"etcd-{i + 1}",
            index=i + 1,
            port=clients[i],
            peer_port=peers[i],
            initial_cluster=initial,
            metrics_port=metrics[i],
            tls=tls,
            peer_tls=peer_tls,
        )
        for i in range(CLUSTER_SIZE)
    ]


def start_cluster(members: Sequence[NatsServer | EtcdServer]) -> None:
    """Launch every member, then wait until each is healthy; on a failure stop them all and raise."""
    try:
        for member in members:
            member.base_dir.mkdir(parents=True, exist_ok=True)
            member.launch()
        for member in members:
            member.wait_healthy()
    except ServerError:
        for member in members:
            member.stop()
        raise


async def astart_cluster(members: Sequence[NatsServer | EtcdServer]) -> None:
    await asyncio.to_thread(start_cluster, members)
