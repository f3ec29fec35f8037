"""The local stack's supervisor: owns nats-server, etcd and every service process.

It makes the bus's credentials first (identities.py: an nkey per service process, the operator's admin,
the provisioner, and the node agents' key pair that admission seals job secrets to; `--no-auth` leaves
the bus open and the secrets unsealed) and a CA with the servers' certificates (stack_tls.py;
`--no-tls` or `--no-auth`: plain TCP), starts nats-server with their permissions and creates the streams
as the provisioner. It starts the servers and services in dependency order on free loopback
ports, waits until each reports healthy and then until
the stack can bind on every node (readiness.py), and records the stack in `stack.json`. Whatever exits
while the stack is meant to run is reaped and started again, after a backoff (backoff.py): a service on
the same metrics port while that is free (it resumes from its checkpoint and the log), nats-server and
etcd on the same ports and data directories (server_keeper.py). stack.json says what it is doing about
each process (starting, running, restarting), for `lahar status`. On SIGTERM/SIGINT it stops them in
reverse order (SIGTERM to each process group, SIGKILL after a grace period) before removing the record.
Everything it starts, it stops, by PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contracts.events import ADMISSION, DESCHEDULER, NODE_AGENT, SCHEDULER
from services.cli.stack.backoff import restart_delay
from services.cli.stack.etcd_users import StackEtcdUsers, open_stack_etcd, provision_stack_etcd
from services.cli.stack.identities import SIM_AGENT, StackCredentials, issue_credentials
from services.cli.stack.layout import (
    CREDS_DIR,
    OPENS_SECRETS,
    RESTARTING,
    RUNNING,
    SEALS_SECRETS,
    STARTING,
    RunningService,
    ServiceSpec,
    StackState,
)
from services.cli.stack.readiness import waiting_for
from services.cli.stack.server_keeper import ServerKeeper, record_of
from services.cli.stack.stack_servers import StackServers, start_servers
from services.cli.stack.stack_tls import issue_tls
from services.node_agent.runtime.leftovers import stop_leftover_pods
from shared.security.permissions import Identity
from shared.security.secret_keys import SecretsKeyFiles, issue_secrets_keys
from shared.servers import free_port

STOP_GRACE_S = 10.0
HEALTH_TIMEOUT_S = 60.0
HEALTH_POLL_S = 0.1
BINDABLE_TIMEOUT_S = 300.0  # from healthy processes to every node bindable (10,000 nodes take seconds)


# The single-writer services: one leader each, elected in etcd; --standbys runs a second instance of each.
ELECTED = (
    ("queue-controller", "services.queue_controller"),
    ("job-controller", "services.job_controller"),
    ("binder", "services.binder"),
)
STANDBY_SUFFIX = "-2"
AGENT_DATA_DIR = Path("data") / "node-agent"  # under the home: the process runtime's pods


def service_specs(
    home: Path,
    sim_nodes: int,
    node_name: str,
    replicas: int,
    *,
    standbys: bool = False,
    scheduler_conf: str = "",
    node_flags: tuple[str, ...] = (),
    hollow: bool | None = None,
    descheduler_args: tuple[str, ...] = (),
) -> list[ServiceSpec]:
    """Every service process of the stack, in start order. With standbys, a second instance of each
    leader-elected service (named <service>-2) campaigns in the same election: started after the first,
    it follows the log as a hot standby and takes over when the leader resigns or its lease expires.
    `node_flags` go to the node agent as they are (node size and labels, a nodes file); `hollow` (default:
    whether sim_nodes > 0) runs the sim runtime. `descheduler_args` (its policy file first, and the flags
    it takes), when given, add the descheduler."""
    hollow = bool(sim_nodes) if hollow is None else hollow
    # the agent id names its producer token, so its user may publish only under it
    agent_id = SIM_AGENT if hollow else node_name
    agent_dir = ("--data-dir", str(home / AGENT_DATA_DIR), "--agent-id", agent_id)
    if hollow:
        sim = ("--runtime", "sim", "--sim-nodes", str(sim_nodes))
        agent_args: tuple[str, ...] = (*sim, *_hollow_flags(node_flags), *agent_dir)
    else:
        agent_args = ("--runtime", "process", "--node-name", node_name, *node_flags, *agent_dir)
    agent = ServiceSpec(
        "node-agent",
        "services.node_agent",
        agent_args,
        Identity("node-agent", NODE_AGENT, f"{NODE_AGENT}.{agent_id}"),
        secrets=OPENS_SECRETS,
    )
    # every replica runs the same volcano-scheduler.conf (the user's, else Volcano's default)
    conf_args = ("--scheduler-conf-file", scheduler_conf) if scheduler_conf else ()
    schedulers = [
        ServiceSpec(
            f"scheduler-{i}",
            "services.scheduler",
            ("--replica-id", f"scheduler-{i}", *conf_args),
            Identity(f"scheduler-{i}", SCHEDULER, f"scheduler-{i}"),
        )
        for i in range(replicas)
    ]
    instances = [""] + ([STANDBY_SUFFIX] if standbys else [])
    elected = [
        # the process's stack name is its candidate name, so the election key says which one leads
        # every instance writes under the service's producer token (its core's name)
        ServiceSpec(
            f"{name}{suffix}",
            module,
            ("--instance-id", f"{name}{suffix}"),
            Identity(f"{name}{suffix}", name, name),
        )
        for suffix in instances
        for name, module in ELECTED
    ]
    admission = ServiceSpec(
        "admission",
        "services.admission",
        identity=Identity(ADMISSION, ADMISSION, ADMISSION),
        secrets=SEALS_SECRETS,
    )
    deschedulers = [
        ServiceSpec(
            DESCHEDULER,
            "services.descheduler",
            descheduler_args,
            Identity(DESCHEDULER, DESCHEDULER, DESCHEDULER),
        )
    ]
    return [admission, *elected, *schedulers, agent, *(deschedulers if descheduler_args else [])]


def _hollow_flags(node_flags: tuple[str, ...]) -> tuple[str, ...]:
    """Of the node flags, those hollow nodes take (labels, the nodes file): their size is the sim
    runtime's, not this machine's."""
    taken = ("--node-labels", "--sim-nodes-file")
    pairs = zip(node_flags[::2], node_flags[1::2], strict=True)
    return tuple(part for flag, value in pairs if flag in taken for part in (flag, value))


def port_bindable(port: int) -> bool:
    """Whether a server could listen on the loopback port now (as the services do, with SO_REUSEADDR)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def service_healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1.0) as response:
            return response.status == 200
    except (OSError, http.client.HTTPException):  # nothing there, or something that is not our HTTP server
        return False


def service_health(port: int) -> dict[str, Any] | None:
    """The service's /healthz document (whether it is ok or not), None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1.0) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:  # 503: unhealthy, with the document saying why
        with contextlib.suppress(ValueError):
            return json.loads(exc.read())
        return None
    except (OSError, ValueError, http.client.HTTPException):
        return None


class Supervisor:
    def __init__(
        self,
        home: Path,
        specs: list[ServiceSpec],
        on_ready: Callable[[StackState], None] | None = None,
        *,
        ha: bool = False,
        secure: bool = True,
        tls: bool = True,
    ) -> None:
        self.secure = secure  # identities on the bus (docs/security.md); False: nats-server open to all
        self.tls = tls  # NATS and etcd over TLS with a CA made at start (docs/security.md)
        self.on_ready = on_ready
        self.home = home
        self.specs = specs
        self.ha = ha  # clusters of three NATS servers and three etcd members instead of one of each
        self.state = StackState(supervisor_pid=os.getpid(), home=str(home), ha=ha)
        self.servers: StackServers | None = None
        self.processes: dict[str, asyncio.subprocess.Process] = {}
        self.etcd_users: StackEtcdUsers | None = None  # every service's etcd password file
        self.spawned_at: dict[str, float] = {}
        self.stopping = asyncio.Event()
        self.credentials: StackCredentials | None = None
        self.secrets_keys: SecretsKeyFiles | None = None  # the node agents' job-secrets key pair

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        server_keepers: list[asyncio.Task[None]] = []
        try:
            await self._start()
        except Exception as exc:  # the error goes to stack.json so `lahar up` can show it
            self.state.error = str(exc)
            self.state.write(self.home)
            await self._stop()
            return 1
        if self.on_ready is not None:
            self.on_ready(self.state)
        servers = self.servers.all if self.servers is not None else []
        server_keepers = [
            asyncio.create_task(ServerKeeper(server, record, self._changed, self.stopping).run())
            for server, record in zip(servers, self.state.servers, strict=True)
        ]
        keepers = [asyncio.create_task(self._keep_alive(spec)) for spec in self.specs]
        await self.stopping.wait()
        for keeper in keepers:
            keeper.cancel()
        # a server keeper is never cancelled: it may be starting its server, which must finish first
        await asyncio.gather(*keepers, *server_keepers, return_exceptions=True)
        await self._stop()
        return 0

    def _changed(self) -> None:
        self.state.write(self.home)

    def _record(self, name: str) -> RunningService:
        return next(s for s in self.state.services if s.name == name)

    async def _keep_alive(self, spec: ServiceSpec) -> None:
        """Restart the service whenever it exits while the stack is meant to run."""
        delay_s = 0.0
        while not self.stopping.is_set():
            process = self.processes[spec.name]
            record = self._record(spec.name)
            if record.phase != RUNNING:
                await self._watch_until_healthy(process, record)
            code = await process.wait()
            if self.stopping.is_set():
                return
            delay_s = restart_delay(delay_s, time.monotonic() - self.spawned_at[spec.name])
            record.phase = RESTARTING
            record.restarts += 1
            self.state.write(self.home)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), delay_s)
            if self.stopping.is_set():
                return
            with Path(record.log).open("ab") as log:
                log.write(f"--- lahar: {spec.name} exited with {code}; restarting\n".encode())
            # the same port when it can be had (what scrapes it keeps working); a loopback port is in the
            # ephemeral range, so an outbound connection may hold it as its source port meanwhile
            port = record.metrics_port if port_bindable(record.metrics_port) else free_port()
            await self._launch(spec, self.home / "logs", port=port, phase=RESTARTING)

    async def _watch_until_healthy(self, process: asyncio.subprocess.Process, record: RunningService) -> None:
        """Mark the service running once it answers its health check (a restarted service may wait a
        while for a server that is down); return early if it exits first."""
        while not await asyncio.to_thread(service_healthy, record.metrics_port):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), HEALTH_POLL_S)
            if process.returncode is not None:
                return
        record.phase = RUNNING
        self.state.write(self.home)

    async def _start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.state.write(self.home)
        # a fresh CA and server certificates at every start, like the keys
        tls = issue_tls(self.home) if self.tls else None
        self.state.tls_ca = str(tls.ca) if tls is not None else ""
        if self.secure:
            # a fresh key per user at every start (docs/security.md): the server loads their public keys,
            # and its certificate from the same file, so that `lahar tenant add` can reload it
            nats_tls = (tls.nats.cert, tls.nats.key) if tls is not None else None
            self.credentials = issue_credentials(self.home, self.specs, ha=self.ha, tls=nats_tls)
            self.state.admin_creds = str(self.credentials.admin)
            # and a fresh key pair the ssh plugin's secrets are sealed to (docs/security.md, "Secrets")
            self.secrets_keys = issue_secrets_keys(self.home / CREDS_DIR)
        self.servers = servers = await start_servers(
            self.home, ha=self.ha, credentials=self.credentials, tls=tls
        )
        self.state.nats_url = servers.nats_url
        self.state.etcd_endpoint = servers.etcd_endpoint
        # etcd's users, a role each limited to its own keys (etcd_users.py, docs/security.md): once, on
        # the cluster, before any service starts; --no-auth turns etcd's authentication off again
        etcd_endpoints = [server.endpoint for server in servers.etcd]
        if self.secure:
            self.etcd_users = await provision_stack_etcd(
                self.home, self.specs, etcd_endpoints, servers.tls_ca or None
            )
            self.state.admin_etcd_password = str(self.etcd_users.admin)
        else:
            await open_stack_etcd(self.home, etcd_endpoints, servers.tls_ca or None)
        self.state.servers = [record_of(server) for server in servers.all]
        self.state.write(self.home)
        logs = self.home / "logs"
        logs.mkdir(exist_ok=True)
        for spec in self.specs:
            await self._spawn(spec, logs)
        await self._until_bindable()
        self.state.ready = True
        self.state.waiting = ""
        self.state.write(self.home)

    async def _until_bindable(self) -> None:
        """Wait until every node is registered and known Ready to the binder and every scheduler."""
        deadline = time.monotonic() + BINDABLE_TIMEOUT_S
        while True:
            healths = {
                s.name: await asyncio.to_thread(service_health, s.metrics_port) for s in self.state.services
            }
            waiting = waiting_for(healths)
            if not waiting:
                return
            if waiting != self.state.waiting:
                self.state.waiting = waiting
                self.state.write(self.home)
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the stack could not bind within {BINDABLE_TIMEOUT_S:.0f}s: waiting for {waiting}"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), 0.1)
            if self.stopping.is_set():
                raise RuntimeError("stopped while starting")

    async def _launch(
        self, spec: ServiceSpec, logs: Path, port: int = 0, phase: str = STARTING
    ) -> asyncio.subprocess.Process:
        """Start the service's process and record it (in `phase`) without waiting for it."""
        port = port or free_port()
        log_path = logs / f"{spec.name}.log"
        creds = self.credentials.of(spec.name) if self.credentials is not None else ""
        extra = self.servers.service_args() if self.servers is not None else ()
        if self.credentials is not None and spec.identity is not None and spec.identity.role == ADMISSION:
            # the operator's key: admission authorizes every request by its caller's (docs/security.md)
            extra = (*extra, "--operator-keys", ",".join(self.credentials.operator_keys))
        extra = (*extra, *spec.secrets_args(self.secrets_keys))
        etcd_password = self.etcd_users.of(spec.name) if self.etcd_users is not None else ""
        command = spec.command(
            self.state.nats_url,
            self.state.etcd_endpoint,
            port,
            creds=creds,
            etcd_password_file=etcd_password,
            extra=extra,
        )
        with log_path.open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        self.processes[spec.name] = process
        self.spawned_at[spec.name] = time.monotonic()
        record = next((s for s in self.state.services if s.name == spec.name), None)
        if record is None:
            record = RunningService(spec.name, process.pid, port, str(log_path), phase=phase)
            self.state.services.append(record)
        else:
            record.pid, record.phase = process.pid, phase
        self.state.write(self.home)
        return process

    async def _spawn(self, spec: ServiceSpec, logs: Path) -> None:
        """Start the service and wait until it is healthy (while the stack comes up: a service that
        cannot start is an error `lahar up` reports)."""
        process = await self._launch(spec, logs)
        record = self._record(spec.name)
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while not await asyncio.to_thread(service_healthy, record.metrics_port):
            if process.returncode is not None:
                raise RuntimeError(f"{spec.name} exited with code {process.returncode}; see {record.log}")
            if time.monotonic() > deadline:
                late = f"{spec.name} not healthy within {HEALTH_TIMEOUT_S:.0f}s; see {record.log}"
                raise RuntimeError(late)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), HEALTH_POLL_S)
        record.phase = RUNNING
        self.state.write(self.home)

    async def _stop(self) -> None:
        for name in reversed(list(self.processes)):
            await _terminate(self.processes[name])
        # the node agent leaves its pods running for a restarted agent to adopt; nothing will now
        await asyncio.to_thread(stop_leftover_pods, self.home / AGENT_DATA_DIR)
        for server in reversed(self.servers.all if self.servers is not None else []):
            await server.astop()
        with contextlib.suppress(FileNotFoundError):
            (self.home / "stack.json").unlink()


async def _terminate(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), STOP_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
