"""Local nats-server and etcd processes (shared/server_process.py has what they share: ports, health
checks, start, stop, restart and reaping by PID). With TLS a server takes TLS only and its health
endpoint stays plain HTTP on loopback."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from shared.security.tls import TlsFiles
from shared.server_process import LOOPBACK, ServerError, ServerProcess, find_binary, free_port, http_ok

# re-exported: the tests and the stack import them with the servers
__all__ = [
    "LOOPBACK",
    "ConfiguredNats",
    "EtcdServer",
    "NatsServer",
    "ServerError",
    "find_binary",
    "free_port",
    "http_ok",
]

SERVER_NAME_ENV = "LAHAR_NATS_SERVER_NAME"  # nats-server's name, in its environment


class NatsServer(ServerProcess):
    """nats-server with JetStream (file store under the data dir) and the HTTP monitoring port.

    With TLS the client port takes TLS connections only (a plain client is refused) and clients verify
    the server's certificate; clients are not asked for one (their nkey authenticates them). The
    monitoring port stays plain HTTP on loopback, for health checks."""

    name = "nats-server"
    binary_name = "nats-server"

    http_port: int = 0
    # whether its configuration file (--config) carries the TLS block rather than the command line: a
    # reload (SIGHUP, after `lahar tenant add`) rereads TLS from the file alone and refuses to run when the
    # server was started with --tls ("old=true, new=false")
    tls_in_config: bool = False

    @property
    def url(self) -> str:
        # tls:// tells any client that this server takes TLS only (nats-py would upgrade a nats:// one too)
        return f"{'tls' if self.tls is not None else 'nats'}://{self.host}:{self.port}"

    @property
    def monitor_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def _pick_ports(self) -> None:
        self.port = free_port(self.host)
        self.http_port = free_port(self.host)

    def _command(self) -> list[str]:
        return [
            self._binary,
            "--addr",
            self.host,
            "--port",
            str(self.port),
            "--http_port",
            str(self.http_port),
            "--jetstream",
            "--store_dir",
            str(self.data_dir),
            "--server_name",
            f"lahar-{self.port}",
            *self._tls_args(),
            *self.extra_args,
        ]

    def _tls_args(self) -> list[str]:
        if self.tls is None or self.tls_in_config:
            return []
        # --tls, not --tlsverify: clients are not asked for a certificate, so no CA to check them with
        return ["--tls", "--tlscert", str(self.tls.cert), "--tlskey", str(self.tls.key)]

    @property
    def health_url(self) -> str:
        # A standalone server recovers its streams from the store before it reports JetStream enabled.
        return f"{self.monitor_url}/healthz?js-enabled-only=true"

    def _env(self) -> dict[str, str]:
        # its --server_name, for a configuration file to name it by (a reload takes the name from the
        # file only, services/cli/stack/identities.py)
        return {**os.environ, SERVER_NAME_ENV: f"lahar-{self.port}"}


ETCD_HISTORY = "1m"  # how long etcd keeps old revisions (watches may resume that far back)


class EtcdServer(ServerProcess):
    """A single-member etcd cluster on loopback.

    With TLS clients connect over https and verify the server's certificate (client certificates are not
    required); members talk to each other over https and each verifies the other's certificate with the
    CA (peer_tls, by default the client-facing files). Health and metrics are then served on a separate
    plain-HTTP loopback port, so health checks need no certificate."""

    name = "etcd"
    binary_name = "etcd"

    peer_port: int = 0
    metrics_port: int = 0  # with TLS only: the plain-HTTP /health and /metrics

    def __init__(
        self,
        base_dir: Path,
        *,
        extra_args: Sequence[str] = (),
        start_timeout_s: float = 30.0,
        stop_timeout_s: float = 15.0,
        tls: TlsFiles | None = None,
        peer_tls: TlsFiles | None = None,
    ) -> None:
        super().__init__(
            base_dir,
            extra_args=extra_args,
            start_timeout_s=start_timeout_s,
            stop_timeout_s=stop_timeout_s,
            tls=tls,
        )
        self.peer_tls = peer_tls if peer_tls is not None else tls

    @property
    def endpoint(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def _pick_ports(self) -> None:
        self.port = free_port(self.host)
        self.peer_port = free_port(self.host)
        if self.tls is not None:
            self.metrics_port = free_port(self.host)

    @property
    def member(self) -> str:
        """The member's name in its cluster."""
        return f"lahar-{self.port}"

    def _cluster_args(self) -> list[str]:
        """How the member finds its cluster: a single-member cluster of its own."""
        return ["--initial-cluster", f"{self.member}={self.peer_url}", "--initial-cluster-state", "new"]

    @property
    def peer_url(self) -> str:
        return f"{'https' if self.peer_tls is not None else 'http'}://{self.host}:{self.peer_port}"

    def _tls_args(self) -> list[str]:
        args = []
        if self.tls is not None:
            # no --trusted-ca-file: given one, etcd asks every client for a certificate (3.5, measured)
            # whatever --client-cert-auth says; clients verify the server, and authenticate otherwise
            args += ["--cert-file", str(self.tls.cert), "--key-file", str(self.tls.key)]
            args += ["--listen-metrics-urls", f"http://{self.host}:{self.metrics_port}"]
        if self.peer_tls is not None:
            peer = self.peer_tls
            args += ["--peer-cert-file", str(peer.cert), "--peer-key-file", str(peer.key)]
            args += ["--peer-trusted-ca-file", str(peer.ca), "--peer-client-cert-auth"]
        return args

    def _command(self) -> list[str]:
        return [
            self._binary,
            "--name",
            self.member,
            "--data-dir",
            str(self.data_dir),
            "--listen-client-urls",
            self.url,
            "--advertise-client-urls",
            self.url,
            "--listen-peer-urls",
            self.peer_url,
            "--initial-advertise-peer-urls",
            self.peer_url,
            *self._cluster_args(),
            # without compaction every revision of every key is kept: the read model and the checkpoints
            # rewrite keys all the time, and memory and the database grow without bound (a 40,000-pod
            # benchmark took etcd past 1.7 GB with five minutes of history)
            "--auto-compaction-mode",
            "periodic",
            "--auto-compaction-retention",
            ETCD_HISTORY,
            *self._tls_args(),
            *self.extra_args,
        ]

    @property
    def health_url(self) -> str:
        if self.tls is not None:
            return f"http://{self.host}:{self.metrics_port}/health"
        return f"{self.url}/health"


class ConfiguredNats(NatsServer):
    """A nats-server whose configuration file names its TLS certificate (tls_in_config), so that it can be
    reloaded: the local stack's server, whose users `lahar tenant add` changes."""

    tls_in_config = True
