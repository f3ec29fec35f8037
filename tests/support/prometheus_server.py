"""A real Prometheus scraping a local stack, for the tests of ops/ (tests/e2e/test_dashboards_stack.py).

Started like the tests' nats-server and etcd (shared/server_process.py): a free loopback port, its own data
directory and log, stopped by PID. Its configuration is generated from the stack's state (stack.json):
one scrape job per service role (the service name without its replica number, as in compose and the
local variant of ops/prometheus/prometheus.yml, so the alerts' `job` selectors hold), etcd on its plain
metrics port, and the rule files ops/prometheus/prometheus.yml loads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from services.cli.stack.layout import ETCD, StackState
from shared.server_process import ServerProcess, free_port

OPS_PROMETHEUS = Path(__file__).resolve().parents[2] / "ops" / "prometheus"
CONFIG_FILE = "prometheus.yml"


def configured_rule_files(directory: Path = OPS_PROMETHEUS) -> list[Path]:
    """The rule files prometheus.yml loads (its entries may be globs, relative to its directory)."""
    config = yaml.safe_load((directory / CONFIG_FILE).read_text())
    return [path for entry in config.get("rule_files", []) for path in sorted(directory.glob(entry))]


def role(service: str) -> str:
    """scheduler-0 -> scheduler: replicas of a role share its job label."""
    return re.sub(r"-\d+$", "", service)


def scrape_config(state: StackState, rules: list[Path], interval_s: float) -> dict[str, Any]:
    jobs: dict[str, list[str]] = {}
    for service in state.services:
        jobs.setdefault(role(service.name), []).append(f"127.0.0.1:{service.metrics_port}")
    # every etcd member serves /metrics over plain HTTP on its health port, whatever its client port speaks
    members = [s for s in state.servers if re.fullmatch(rf"{ETCD}(-\d+)?", s.name)]
    if members:
        jobs["etcd"] = [urlsplit(s.health_url).netloc for s in members]
    interval = f"{round(interval_s * 1000)}ms"
    return {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,
            "evaluation_interval": interval,
            "external_labels": {"cluster": "lahar-test"},
        },
        "rule_files": [str(path) for path in rules],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": targets}]}
            for job, targets in sorted(jobs.items())
        ],
    }


class PrometheusServer(ServerProcess):
    """Prometheus with the configuration written in its base directory (write_config) before it starts."""

    name = "prometheus"
    binary_name = "prometheus"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def health_url(self) -> str:
        return f"{self.url}/-/ready"

    def _pick_ports(self) -> None:
        self.port = free_port(self.host)

    def _command(self) -> list[str]:
        return [
            self._binary,
            f"--config.file={self.base_dir / CONFIG_FILE}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--web.listen-address={self.host}:{self.port}",
            *self.extra_args,
        ]


def write_config(base_dir: Path, config: dict[str, Any]) -> None:
    base_dir.mkdir(parents=True, exist_ok=True)
    (base_dir / CONFIG_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
