"""The ssh plugin's key pairs on a node agent: the key store with the real ssh-keygen, and a process-runtime
agent (real nats-server and etcd) giving every pod of a job the same pair, which ssh accepts."""

from __future__ import annotations

import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from support.waiting import Eventually
from test_node_agent_service import (  # the node agent's fixtures and helpers
    Agent,
    Log,
    agent,  # noqa: F401
    data_dir,  # noqa: F401
    job,
    log,  # noqa: F401
    submit,
)

from contracts.objects import Job, frozen_map
from services.job_controller.core.expand import pod_for
from services.job_controller.core.plugins import pod_environment
from services.job_controller.core.plugins.ssh import KeyPair
from services.node_agent.runtime import workdir
from services.node_agent.ssh_keys import KeyGenerationError, SshKeyStore
from shared.bus.jetstream import Bus

pytestmark = pytest.mark.integration


def ssh_job(name: str = "mpi", uid: str = "uid-1", script: str = "true", **plugins: list[str]) -> Job:
    spec = job(name, script, **({"ssh": []} | plugins))
    return replace(spec, meta=replace(spec.meta, uid=uid))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def derived_public_key(private_key: Path) -> str:
    """What ssh-keygen reads as the key's public half: it refuses a private key others may read."""
    result = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(private_key)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return " ".join(result.stdout.split()[:2])


def public_half(keys: KeyPair) -> str:
    return " ".join(keys.public.decode().split()[:2])


async def test_a_job_keeps_one_pair_across_calls_and_restarts(tmp_path: Path) -> None:
    root = tmp_path / "ssh-keys"
    first = await SshKeyStore(root).key_pair(ssh_job())
    assert first.private.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert first.public.startswith(b"ssh-rsa ") and first.public.rstrip().endswith(b"lahar job default/mpi")
    assert await SshKeyStore(root).key_pair(ssh_job()) == first  # a restarted agent: the same store
    kept = root / "default" / "mpi" / "uid-1"
    assert mode(kept / "id_rsa") == 0o600
    assert derived_public_key(kept / "id_rsa") == public_half(first)
    assert sorted(p.name for p in kept.iterdir()) == ["id_rsa", "id_rsa.pub"]

    other = await SshKeyStore(root).key_pair(ssh_job("other"))
    assert other != first
    again = await SshKeyStore(root).key_pair(ssh_job(uid="uid-2"))  # the job deleted and submitted again
    assert again != first
    assert [p.name for p in (root / "default" / "mpi").iterdir()] == ["uid-2"]  # uid-1's pair removed


async def test_the_private_key_stays_owner_only_when_the_runtime_writes_it(tmp_path: Path) -> None:
    store = SshKeyStore(tmp_path / "ssh-keys")
    spec = ssh_job()
    pod_dir = tmp_path / "pods" / "default" / "mpi-worker-0"
    keys = await store.prepare(spec, pod_dir)
    assert keys == await store.key_pair(spec)
    pod = pod_for(spec, spec.tasks[0], 0, created_at=0.0)
    _, files = pod_environment(spec, pod, str(pod_dir), ssh_keys=keys)
    workdir.prepare(pod_dir, files)  # what the process runtime does with the plugins' files
    private = pod_dir / "root" / ".ssh" / "id_rsa"
    assert private.read_bytes() == keys.private
    assert mode(private) == 0o600 and mode(private.parent) == 0o700
    assert derived_public_key(private) == public_half(keys)


async def test_no_pair_without_the_plugin_or_with_the_users_own_key(tmp_path: Path) -> None:
    store = SshKeyStore(tmp_path / "ssh-keys")
    pod_dir = tmp_path / "pod"
    plain = replace(ssh_job(), plugins=frozen_map({"svc": ()}))
    assert await store.prepare(plain, pod_dir) is None
    assert not pod_dir.exists()
    own = ssh_job(ssh=["--ssh-private-key=PRIVATE", "--ssh-key-file-path=/home/u/.ssh"])
    assert await store.prepare(own, pod_dir) is None
    assert mode(pod_dir / "home" / "u" / ".ssh" / "id_rsa") == 0o600
    assert not (tmp_path / "ssh-keys").exists()


async def test_a_missing_keygen_is_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    store = SshKeyStore(tmp_path / "ssh-keys", keygen=str(tmp_path / "no-such-ssh-keygen"))
    with pytest.raises(KeyGenerationError):
        await store.key_pair(ssh_job())
    assert list((tmp_path / "ssh-keys" / "default" / "mpi").iterdir()) == []


# every check fails the pod: ssh-keygen refuses a key others can read, and derives the public key
POD_SCRIPT = """set -e
ssh-keygen -y -f "$VC_SSH_DIR/id_rsa" | cut -d' ' -f1,2 > derived.pub
test "$(cat derived.pub)" = "$(cut -d' ' -f1,2 "$VC_SSH_DIR/id_rsa.pub")"
cmp "$VC_SSH_DIR/id_rsa.pub" "$VC_SSH_DIR/authorized_keys"
grep -qx 'Host mpi-worker-1' "$VC_SSH_DIR/config"
"""


async def test_every_pod_of_the_job_gets_the_same_usable_pair(
    agent: Agent,  # noqa: F811
    bus: Bus,
    log: Log,  # noqa: F811
    data_dir: Path,  # noqa: F811
    eventually: Eventually,
) -> None:
    agent()
    spec = ssh_job(script=POD_SCRIPT)
    pods = [await submit(bus, spec, index) for index in (0, 1)]
    for pod in pods:
        ended = await eventually(
            lambda pod=pod: log.of("PodSucceeded", pod.meta.name) or log.of("PodFailed", pod.meta.name),
            what=f"{pod.meta.name} ended",
            timeout_s=30,
        )
        directory = data_dir / "pods" / "default" / pod.meta.name
        output = workdir.log_path(directory, "main")
        assert ended[0].type == "PodSucceeded", output.read_text() if output.exists() else ended[0].payload
    keys = [data_dir / "pods" / "default" / pod.meta.name / "root" / ".ssh" for pod in pods]
    for name in ("id_rsa", "id_rsa.pub", "authorized_keys", "config"):
        assert (keys[0] / name).read_bytes() == (keys[1] / name).read_bytes()
    assert mode(keys[0] / "id_rsa") == 0o600
    kept = data_dir / "ssh-keys" / "default" / "mpi" / "uid-1"
    assert (kept / "id_rsa").read_bytes() == (keys[0] / "id_rsa").read_bytes()
