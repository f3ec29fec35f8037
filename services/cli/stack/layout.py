"""Where a local stack keeps its state, and the description of a running stack (`stack.json`).

The supervisor records every process it runs with its supervision state (`phase`): starting (spawned,
not yet healthy), running (healthy since it was spawned), restarting (it exited and is being brought
back). `lahar status` combines that with a health probe of its own (status.py)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shared.security.permissions import Identity
from shared.security.secret_keys import SecretsKeyFiles

STATE_FILE = "stack.json"

# What the supervisor is doing about a process (recorded in stack.json).
STARTING = "starting"
RUNNING = "running"
RESTARTING = "restarting"

NATS = "nats-server"
ETCD = "etcd"
CREDS_DIR = "creds"  # every user's nkey seed, mode 0600 (services/cli/stack/identities.py)
# what a service does with job secrets (docs/security.md, "Secrets"): the key file it gets
SEALS_SECRETS = "seal"  # admission: the node agents' public key
OPENS_SECRETS = "open"  # a node agent: their private key


def creds_path(home: Path, user: str) -> Path:
    """Where `lahar up` writes a user's credentials (its nkey seed)."""
    return home / CREDS_DIR / f"{user}.nk"


def lahar_home(explicit: str | None = None) -> Path:
    """`--home`, else $LAHAR_HOME, else ~/.lahar: one local stack per home directory."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get("LAHAR_HOME")
    return Path(env).expanduser().resolve() if env else Path.home() / ".lahar"


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """How the supervisor starts one service process."""

    name: str
    module: str
    args: tuple[str, ...] = ()
    identity: Identity | None = None  # its user on the bus (shared/security/permissions.py)
    secrets: str = ""  # SEALS_SECRETS, OPENS_SECRETS or "": no secrets key

    def secrets_args(self, keys: SecretsKeyFiles | None) -> tuple[str, ...]:
        """The secrets key file the service gets (none on an open stack: `keys` None)."""
        if keys is None or not self.secrets:
            return ()
        if self.secrets == SEALS_SECRETS:
            return ("--secrets-public-key", str(keys.public))
        return ("--secrets-key", str(keys.private))

    def command(
        self,
        nats_url: str,
        etcd: str,
        metrics_port: int,
        *,
        creds: str = "",
        etcd_password_file: str = "",
        extra: tuple[str, ...] = (),
    ) -> list[str]:
        # its etcd user has the process's name, like its user on the bus (services/cli/stack/etcd_users.py)
        etcd_auth = ("--etcd-user", self.name, "--etcd-password-file", etcd_password_file)
        return [
            sys.executable,
            "-m",
            self.module,
            "--nats-url",
            nats_url,
            "--etcd-endpoint",
            etcd,
            "--metrics-port",
            str(metrics_port),
            *(("--nats-creds", creds) if creds else ()),
            *(etcd_auth if etcd_password_file else ()),
            *self.args,
            *extra,
        ]


@dataclass(slots=True)
class RunningService:
    name: str
    pid: int
    metrics_port: int
    log: str
    restarts: int = 0
    phase: str = STARTING

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/healthz"


@dataclass(slots=True)
class RunningServer:
    """nats-server or etcd: restarted on the same ports and data directory when it exits."""

    name: str
    pid: int
    url: str  # what clients connect to
    health_url: str
    log: str
    restarts: int = 0
    phase: str = RUNNING


@dataclass(slots=True)
class StackState:
    supervisor_pid: int
    home: str
    ha: bool = False  # three NATS servers and three etcd members (`lahar up --ha`)
    nats_url: str = ""  # every NATS server's URL, comma-separated
    etcd_endpoint: str = ""  # every etcd member's host:port, comma-separated
    admin_creds: str = ""  # the operator's credentials file; empty: NATS runs without authentication
    admin_etcd_password: str = ""  # the operator's etcd password file; empty: etcd without authentication
    tls_ca: str = ""  # the CA file NATS's and etcd's certificates chain to; empty: both plain TCP
    servers: list[RunningServer] = field(default_factory=list)
    services: list[RunningService] = field(default_factory=list)
    ready: bool = False
    waiting: str = ""  # while starting: what the stack still waits for before it can bind
    error: str = ""

    def server(self, name: str) -> RunningServer | None:
        return next((s for s in self.servers if s.name == name), None)

    @property
    def nats_pid(self) -> int:
        server = self.server(NATS)
        return server.pid if server is not None else 0

    @property
    def etcd_pid(self) -> int:
        server = self.server(ETCD)
        return server.pid if server is not None else 0

    @property
    def server_pids(self) -> list[int]:
        return [server.pid for server in self.servers if server.pid]

    def write(self, home: Path) -> None:
        tmp = home / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(home / STATE_FILE)

    @classmethod
    def read(cls, home: Path) -> StackState | None:
        try:
            raw = json.loads((home / STATE_FILE).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        services = [RunningService(**s) for s in raw.pop("services", [])]
        servers = [RunningServer(**s) for s in raw.pop("servers", [])]
        return cls(services=services, servers=servers, **raw)


def process_alive(pid: int) -> bool:
    """The process exists and has not exited: an exited child its parent has not reaped yet (a zombie)
    still answers kill(pid, 0), so where /proc tells, a zombie counts as gone."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (or the process just went): kill(pid, 0) is all there is
    # "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ")"
    return stat.rpartition(")")[2].split()[:1] == ["Z"]
