"""Where a local stack keeps its state, and the description of a running stack (`stack.json`)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATE_FILE = "stack.json"


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

    def command(self, nats_url: str, etcd: str, metrics_port: int) -> list[str]:
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
            *self.args,
        ]


@dataclass(slots=True)
class RunningService:
    name: str
    pid: int
    metrics_port: int
    log: str
    restarts: int = 0


@dataclass(slots=True)
class StackState:
    supervisor_pid: int
    home: str
    nats_url: str = ""
    nats_pid: int = 0
    etcd_endpoint: str = ""
    etcd_pid: int = 0
    services: list[RunningService] = field(default_factory=list)
    ready: bool = False
    waiting: str = ""  # while starting: what the stack still waits for before it can bind
    error: str = ""

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
        return cls(services=services, **raw)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
