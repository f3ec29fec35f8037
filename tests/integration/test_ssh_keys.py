"""The ssh plugin's key pair end to end: admission's generator with the real ssh-keygen, the private files
the agent makes owner-only, and two process-runtime agents (real nats-server and etcd) giving the pods of
one job the same pair from the log, which ssh accepts; sealed to the node agents' key, the pair opens
only on an agent holding it, and an agent with another key quarantines it and fails the job's pods
saying why."""

from __future__ import annotations

import stat
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from msgspec import to_builtins
from support.waiting import Eventually
from test_node_agent_service import (  # the node agent's fixtures and helpers
    Agent,
    Log,
    agent,  # noqa: F401
    data_dir,  # noqa: F401
    job,
    log,  # noqa: F401
    publish,
    submit,
)

from contracts.codec import encode_object
from contracts.job_plugins import pod_environment, ssh
from contracts.job_plugins.ssh import KeyPair
from contracts.objects import Job, frozen_map
from services.admission.job_secrets import job_secret
from services.admission.keygen import KeyGenerationError, generate_key_pair
from services.job_controller.core.expand import pod_for
from services.node_agent.runtime import workdir
from services.node_agent.ssh_keys import prepare_private_files
from shared.bus.jetstream import Bus
from shared.bus.poison import read_quarantine
from shared.security.secret_keys import issue_secrets_keys, load_public_key


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


async def test_admission_generates_a_new_pem_pair_each_time() -> None:
    private, public = await generate_key_pair("lahar job default/mpi")
    assert private.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert public.startswith(b"ssh-rsa ") and public.rstrip().endswith(b"lahar job default/mpi")
    assert (await generate_key_pair("lahar job default/mpi"))[0] != private


async def test_a_missing_keygen_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KeyGenerationError, match="cannot run"):
        await generate_key_pair("x", keygen=str(tmp_path / "no-such-ssh-keygen"))


async def test_the_private_key_stays_owner_only_when_the_runtime_writes_it(tmp_path: Path) -> None:
    keys = KeyPair(*await generate_key_pair("lahar job default/mpi"))
    spec = ssh_job()
    pod_dir = tmp_path / "pods" / "default" / "mpi-worker-0"
    prepare_private_files(spec, pod_dir)
    pod = pod_for(spec, spec.tasks[0], 0, created_at=0.0)
    _, files = pod_environment(spec, pod, str(pod_dir), ssh_keys=keys)
    workdir.prepare(pod_dir, files)  # what the process runtime does with the plugins' files
    private = pod_dir / "root" / ".ssh" / "id_rsa"
    assert private.read_bytes() == keys.private
    assert mode(private) == 0o600 and mode(private.parent) == 0o700
    assert derived_public_key(private) == public_half(keys)


def test_no_private_files_without_the_plugin_and_owner_only_under_a_custom_path(tmp_path: Path) -> None:
    pod_dir = tmp_path / "pod"
    prepare_private_files(replace(ssh_job(), plugins=frozen_map({"svc": ()})), pod_dir)
    assert not pod_dir.exists()
    prepare_private_files(
        ssh_job(ssh=["--ssh-private-key=PRIVATE", "--ssh-key-file-path=/home/u/.ssh"]), pod_dir
    )
    assert mode(pod_dir / "home" / "u" / ".ssh" / "id_rsa") == 0o600


# every check fails the pod: ssh-keygen refuses a key others can read, and derives the public key
POD_SCRIPT = """set -e
ssh-keygen -y -f "$VC_SSH_DIR/id_rsa" | cut -d' ' -f1,2 > derived.pub
test "$(cat derived.pub)" = "$(cut -d' ' -f1,2 "$VC_SSH_DIR/id_rsa.pub")"
cmp "$VC_SSH_DIR/id_rsa.pub" "$VC_SSH_DIR/authorized_keys"
grep -qx 'Host mpi-worker-1' "$VC_SSH_DIR/config"
"""


async def test_pods_of_one_job_on_two_agents_get_the_pair_from_the_log(
    agent: Agent,  # noqa: F811
    bus: Bus,
    log: Log,  # noqa: F811
    data_dir: Path,  # noqa: F811
    tmp_path: Path,
    eventually: Eventually,
) -> None:
    other_dir = tmp_path / "agent-2"
    agent()
    agent(node_name="n2", data_dir=str(other_dir))
    spec = ssh_job(script=POD_SCRIPT)
    keys = KeyPair(*await generate_key_pair("lahar job default/mpi"))
    data = ssh.secret_data(keys)
    # an older incarnation's pair first: the agents must take the one that names this job's uid
    stale = ssh.secret_data(KeyPair(*await generate_key_pair("stale")))
    await publish(bus, "JobSecretCreated", "job", "mpi", {"name": "mpi-ssh", "uid": "uid-0", "data": stale})
    await publish(bus, "JobSubmitted", "job", "mpi", {"object": encode_object(spec)})
    await publish(bus, "JobSecretCreated", "job", "mpi", {"name": "mpi-ssh", "uid": "uid-1", "data": data})
    pods = [await submit(bus, spec, 0, node="n1"), await submit(bus, spec, 1, node="n2")]
    directories = [data_dir / "pods" / "default" / pods[0].meta.name]
    directories.append(other_dir / "pods" / "default" / pods[1].meta.name)
    for pod, directory in zip(pods, directories, strict=True):
        ended = await eventually(
            lambda pod=pod: log.of("PodSucceeded", pod.meta.name) or log.of("PodFailed", pod.meta.name),
            what=f"{pod.meta.name} ended",
            timeout_s=30,
        )
        output = workdir.log_path(directory, "main")
        assert ended[0].type == "PodSucceeded", output.read_text() if output.exists() else ended[0].payload
    for directory in directories:
        ssh_dir = directory / "root" / ".ssh"
        assert (ssh_dir / "id_rsa").read_bytes() == keys.private
        assert (ssh_dir / "id_rsa.pub").read_bytes() == keys.public
        assert mode(ssh_dir / "id_rsa") == 0o600
    assert (directories[0] / "root/.ssh/config").read_bytes() == (
        directories[1] / "root/.ssh/config"
    ).read_bytes()


async def test_a_sealed_pair_opens_on_an_agent_with_the_key_and_fails_the_pods_of_one_without(
    agent: Agent,  # noqa: F811
    bus: Bus,
    log: Log,  # noqa: F811
    data_dir: Path,  # noqa: F811
    tmp_path: Path,
    eventually: Eventually,
) -> None:
    keys_files = issue_secrets_keys(tmp_path / "creds")
    stale_files = issue_secrets_keys(tmp_path / "creds-of-another-run")
    holder = agent(secrets_key=str(keys_files.private))
    stranger = agent(node_name="n2", data_dir=str(tmp_path / "agent-2"), secrets_key=str(stale_files.private))
    spec = ssh_job(script=POD_SCRIPT)
    keys = KeyPair(*await generate_key_pair("lahar job default/mpi"))
    secret = job_secret(spec, (keys.private, keys.public), load_public_key(keys_files.public))
    await publish(bus, "JobSubmitted", "job", "mpi", {"object": encode_object(spec)})
    secret_seq = (await publish(bus, "JobSecretCreated", "job", "mpi", to_builtins(secret))).seq
    pods = [await submit(bus, spec, 0, node="n1"), await submit(bus, spec, 1, node="n2")]
    ended = {
        pod.meta.name: await eventually(
            lambda pod=pod: log.of("PodSucceeded", pod.meta.name) or log.of("PodFailed", pod.meta.name),
            what=f"{pod.meta.name} ended",
            timeout_s=30,
        )
        for pod in pods
    }
    opened, refused = ended[pods[0].meta.name][0], ended[pods[1].meta.name][0]
    assert opened.type == "PodSucceeded", opened.payload
    assert (
        data_dir / "pods" / "default" / pods[0].meta.name / "root/.ssh/id_rsa"
    ).read_bytes() == keys.private
    # the other agent never starts the pod: it fails saying why, and the agent goes on
    assert refused.type == "PodFailed" and refused.payload["reason"] == "StartError"
    assert "ssh key pair of Job default/mpi cannot be opened: sealed to key" in refused.payload["message"]
    assert not (tmp_path / "agent-2" / "pods" / "default" / pods[1].meta.name / "root/.ssh/id_rsa").exists()

    async def quarantined() -> list[Any]:
        return [record for _, record in await read_quarantine(bus, stranger.name)]

    records = await eventually(quarantined, what="the secret quarantined")
    assert [(r.seq, r.type, r.error_type) for r in records] == [
        (secret_seq, "JobSecretCreated", "SecretNotOpened")
    ]
    assert stranger.health()["ok"]
    assert "sealed to key" in records[0].error
    assert await read_quarantine(bus, holder.name) == []
