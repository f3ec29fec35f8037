"""The servers under a local stack: one nats-server and one etcd, or with `--ha` a 3-server NATS cluster
(JetStream streams with 3 replicas) and a 3-member etcd cluster (shared/server_cluster.py).

Every service is given every server's address (comma-separated), so its clients can move to another
member when theirs dies. The HA stack creates the streams itself, with 3 replicas, before any service
starts: an R3 stream needs the JetStream cluster to have elected its meta leader and all three servers to
have joined, which this waits for; and the services are told the same replica count (`--stream-replicas`,
LAHAR_STREAM_REPLICAS in deploy/compose), so none of them finds the streams different from what it
would have created.

With identities on the bus (docs/security.md) every nats-server loads the same users, and only the
`provisioner` may create streams, so the stack creates them as that user whatever the topology. With
TLS (stack_tls.py) every server serves its clients and its peers over TLS, and every service is told the
CA to verify them with (`--tls-ca`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from services.cli.stack.identities import StackCredentials
from services.cli.stack.stack_tls import StackTls
from shared.bus.provision import create_streams_until_ready
from shared.server_cluster import CLUSTER_SIZE, astart_cluster, etcd_cluster, nats_cluster
from shared.servers import ConfiguredNats, EtcdServer, NatsServer, http_ok

Server = NatsServer | EtcdServer
CLUSTER_READY_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class StackServers:
    nats: list[NatsServer]
    etcd: list[EtcdServer]
    stream_replicas: int
    tls_ca: str = ""  # the CA file clients verify the servers with; empty: plain TCP

    @property
    def all(self) -> list[Server]:
        return [*self.nats, *self.etcd]

    @property
    def nats_url(self) -> str:
        return ",".join(server.url for server in self.nats)

    @property
    def etcd_endpoint(self) -> str:
        return ",".join(f"{server.host}:{server.port}" for server in self.etcd)

    def service_args(self) -> tuple[str, ...]:
        """What every service is told beyond the addresses: the streams' replica count, the TLS CA."""
        replicas = ("--stream-replicas", str(self.stream_replicas)) if self.stream_replicas > 1 else ()
        return (*replicas, *(("--tls-ca", self.tls_ca) if self.tls_ca else ()))


async def start_servers(
    home: Path, *, ha: bool, credentials: StackCredentials | None = None, tls: StackTls | None = None
) -> StackServers:
    """Start the stack's servers and return once services can use them. credentials: the bus's users
    (None: an open bus, whose services create the streams they use themselves); tls: the servers'
    certificates (None: plain TCP)."""
    provisioner = credentials.provisioner if credentials is not None else None
    tls_ca = str(tls.ca) if tls is not None else ""
    if not ha:
        nats_args = credentials.server_args if credentials is not None else ()
        nats_tls = tls.nats if tls is not None else None
        # with users, its configuration file (identities.server_conf) carries its TLS too: reloadable
        server_class = ConfiguredNats if credentials is not None else NatsServer
        nats = await server_class.astart_in(home / "nats", extra_args=nats_args, tls=nats_tls)
        try:
            if provisioner is not None:
                single = StackServers([nats], [], stream_replicas=1, tls_ca=tls_ca)
                await _create_streams(single, time.monotonic() + CLUSTER_READY_TIMEOUT_S, provisioner)
            etcd = await EtcdServer.astart_in(home / "etcd", tls=tls.etcd if tls is not None else None)
        except BaseException:
            await nats.astop()
            raise
        return StackServers([nats], [etcd], stream_replicas=1, tls_ca=tls_ca)
    # a member's configuration file includes the users (nats-server reads one file: its routes' TLS)
    nats_members = nats_cluster(
        home,
        include=credentials.conf if credentials is not None else None,
        tls=tls.nats if tls is not None else None,
    )
    etcd_members = etcd_cluster(
        home, tls=tls.etcd if tls is not None else None, peer_tls=tls.etcd_peer if tls is not None else None
    )
    servers = StackServers(
        list(nats_members), list(etcd_members), stream_replicas=CLUSTER_SIZE, tls_ca=tls_ca
    )
    try:
        await astart_cluster(nats_members)
        await astart_cluster(etcd_members)
        deadline = time.monotonic() + CLUSTER_READY_TIMEOUT_S
        await _create_streams(servers, deadline, provisioner)
        await _until_current(servers.all, deadline)
    except BaseException:
        for server in servers.all:
            await server.astop()
        raise
    return servers


async def _create_streams(servers: StackServers, deadline: float, creds: str | None) -> None:
    """Create every stream with the cluster's replica count (shared/bus/provision.py). creds: the
    provisioner's, on a secured bus."""
    await create_streams_until_ready(
        servers.nats_url.split(","),
        replicas=servers.stream_replicas,
        creds=creds,
        tls_ca=servers.tls_ca or None,
        deadline=deadline,
    )


async def _until_current(servers: list[Server], deadline: float) -> None:
    """Until every server passes its own health check (a NATS member: its streams current)."""
    while True:
        waiting = [s.name for s in servers if not await asyncio.to_thread(http_ok, s.health_url)]
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"servers not healthy in time: {', '.join(waiting)}")
        await asyncio.sleep(0.1)
