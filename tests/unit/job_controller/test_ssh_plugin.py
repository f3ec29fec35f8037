"""Volcano's `ssh` job plugin as lahar applies it: its flags, the ssh config naming every pod, and the key
files every pod of a job gets from the one key pair the caller brings."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.job_plugins import pod_environment
from contracts.job_plugins.common import PluginInput
from contracts.job_plugins.ssh import (
    Flags,
    KeyPair,
    contribute,
    needs_key_pair,
    parse_flags,
    private_files,
    ssh_config,
)
from contracts.job_shape import default_job
from contracts.objects import Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec, frozen_map
from services.job_controller.core.expand import pod_for

POD_DIR = "/data/pods/default/pod"
KEYS = KeyPair(
    b"-----BEGIN RSA PRIVATE KEY-----\nkey\n-----END RSA PRIVATE KEY-----\n", b"ssh-rsa AAAA lahar\n"
)
HEADER = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"


def task(name: str, replicas: int, hostname: str = "", subdomain: str = "") -> TaskSpec:
    spec = PodSpec(containers=(Container("c", command=("true",)),), hostname=hostname, subdomain=subdomain)
    return TaskSpec(name=name, replicas=replicas, template=PodTemplate(spec=spec))


def make_job(*tasks: TaskSpec, name: str = "mj", **plugins: list[str]) -> Job:
    return default_job(
        Job(
            meta=ObjectMeta(name=name),
            tasks=tasks,
            plugins=frozen_map({k: tuple(v) for k, v in plugins.items()}),
        )
    )


def given(job: Job, task_name: str = "worker", index: int = 0) -> PluginInput:
    spec = next(t for t in job.tasks if t.name == task_name)
    pod = pod_for(job, spec, index, created_at=0.0)
    return PluginInput(job, pod, tuple(job.plugins.get("ssh", ())), POD_DIR)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([], Flags("root/.ssh", "", "", 22)),
        (["--ssh-port=2026"], Flags("root/.ssh", "", "", 2026)),
        (["-ssh-port", "2022", "--ssh-private-key=K"], Flags("root/.ssh", "K", "", 2022)),
        (["--ssh-port=-10"], Flags("root/.ssh", "", "", 22)),
        (["--ssh-port=70000"], Flags("root/.ssh", "", "", 22)),
        (["--ssh-port=0"], Flags("root/.ssh", "", "", 22)),
        (["--ssh-port=017"], Flags("root/.ssh", "", "", 15)),
        (["--ssh-port=0x7e7"], Flags("root/.ssh", "", "", 2023)),
        (["--ssh-port=2_022"], Flags("root/.ssh", "", "", 2022)),
        (["--ssh-key-file-path=/x", "--ssh-port=abc", "--ssh-public-key=P"], Flags("x", "", "", 22)),
        (["--ssh-key-file-path=/x", "-ssh-port", "2__0", "--ssh-public-key=P"], Flags("x", "", "", 22)),
        (["--ssh-key-file-path=/home/mpi/.ssh"], Flags("home/mpi/.ssh", "", "", 22)),
        (["--ssh-key-file-path=keys"], Flags("keys", "", "", 22)),
        (["--ssh-key-file-path=/a/../../b"], Flags("b", "", "", 22)),
        (["--ssh-key-file-path=../etc"], Flags("root/.ssh", "", "", 22)),
        (["--ssh-key-file-path=/"], Flags("root/.ssh", "", "", 22)),
        (["--unknown", "--ssh-port=23"], Flags("root/.ssh", "", "", 22)),
    ],
    ids=[
        "defaults",
        "port",
        "separate-value",
        "negative-port",
        "port-too-high",
        "port-zero",
        "octal-port",
        "hex-port",
        "underscores",
        "unparsable-port-stops-parsing",
        "double-underscore-stops-parsing",
        "key-path",
        "relative-key-path",
        "normalised-key-path",
        "escaping-key-path",
        "root-key-path",
        "unknown-flag-stops-parsing",
    ],
)
def test_flags_are_read_as_volcanos_flag_set_reads_them(arguments: list[str], expected: Flags) -> None:
    assert parse_flags(tuple(arguments)) == expected


@pytest.mark.parametrize(
    ("tasks", "port", "hosts"),
    [
        (
            [task("master", 1), task("worker", 2)],
            22,
            [
                ("mj-master-0", "mj-master-0.mj"),
                ("mj-worker-0", "mj-worker-0.mj"),
                ("mj-worker-1", "mj-worker-1.mj"),
            ],
        ),
        ([task("db", 3, hostname="primary", subdomain="store")], 2222, [("primary", "primary.store")]),
        ([task("w", 2, subdomain="net")], 22, [("mj-w-0", "mj-w-0.net"), ("mj-w-1", "mj-w-1.net")]),
        ([task("idle", 0, hostname="nobody"), task("w", 1)], 22, [("mj-w-0", "mj-w-0.mj")]),
    ],
    ids=["every-pod", "template-hostname-once", "template-subdomain", "no-replicas-no-host"],
)
def test_the_config_names_every_pod_as_volcano_does(
    tasks: list[TaskSpec], port: int, hosts: list[tuple[str, str]]
) -> None:
    expected = HEADER + "".join(f"Host {h}\n  HostName {name}\n  Port {port}\n" for h, name in hosts)
    assert ssh_config(make_job(*tasks), port) == expected


def files_of(keys: KeyPair, port: int = 22, directory: str = "root/.ssh") -> dict[str, bytes]:
    """The files of a one-pod job `mj` (task worker)."""
    config = HEADER + f"Host mj-worker-0\n  HostName mj-worker-0.mj\n  Port {port}\n"
    return {
        f"{directory}/id_rsa": keys.private,
        f"{directory}/id_rsa.pub": keys.public,
        f"{directory}/authorized_keys": keys.public,
        f"{directory}/config": config.encode(),
    }


@pytest.mark.parametrize(
    ("arguments", "keys", "files", "directory"),
    [
        ([], KEYS, files_of(KEYS), "root/.ssh"),
        (  # the flags' keys win
            ["--ssh-private-key=PRIVATE", "--ssh-public-key=PUBLIC", "--ssh-port=2200"],
            KEYS,
            files_of(KeyPair(b"PRIVATE", b"PUBLIC"), 2200),
            "root/.ssh",
        ),
        (  # a private key alone: Volcano's public key and authorized_keys are empty
            ["--ssh-private-key=PRIVATE", "--ssh-key-file-path=/home/u/.ssh"],
            None,
            files_of(KeyPair(b"PRIVATE", b""), directory="home/u/.ssh"),
            "home/u/.ssh",
        ),
        ([], None, {}, None),
    ],
    ids=["generated-pair", "flag-keys-win", "private-key-only", "no-keys-nothing"],
)
def test_the_pod_gets_the_key_files_the_config_and_vc_ssh_dir(
    arguments: list[str], keys: KeyPair | None, files: dict[str, bytes], directory: str | None
) -> None:
    contribution = contribute(given(make_job(task("worker", 1), ssh=arguments)), keys)
    assert dict(contribution.files) == files
    env = {} if directory is None else {"VC_SSH_DIR": f"{POD_DIR}/{directory}"}
    assert dict(contribution.env) == env


@pytest.mark.parametrize(
    ("plugins", "needs", "private"),
    [
        ({"ssh": []}, True, ("root/.ssh/id_rsa",)),
        ({"ssh": ["--ssh-key-file-path=/k"]}, True, ("k/id_rsa",)),
        ({"ssh": ["--ssh-private-key=K"]}, False, ("root/.ssh/id_rsa",)),
        ({"svc": []}, False, ()),
    ],
    ids=["ssh", "custom-path", "own-key", "no-ssh"],
)
def test_what_the_agent_must_bring(plugins: dict[str, Any], needs: bool, private: tuple[str, ...]) -> None:
    job = make_job(task("worker", 1), **plugins)
    assert needs_key_pair(job) is needs
    assert private_files(job) == private


def test_every_pod_of_the_job_gets_the_same_keys_beside_the_other_plugins() -> None:
    job = make_job(task("master", 1), task("worker", 2), ssh=[], svc=[])
    seen = []
    for task_name, index in (("master", 0), ("worker", 0), ("worker", 1)):
        pod = given(job, task_name, index).pod
        env, files = pod_environment(job, pod, POD_DIR, ssh_keys=KEYS)
        assert env["VC_SSH_DIR"] == f"{POD_DIR}/root/.ssh" and env["VC_WORKER_NUM"] == "2"
        assert "etc/volcano/hosts" in files
        seen.append({name: content for name, content in files.items() if name.startswith("root/.ssh/")})
    assert seen[0] == seen[1] == seen[2]
    assert seen[0]["root/.ssh/id_rsa"] == KEYS.private
    assert seen[0]["root/.ssh/config"].decode().count("Host ") == 3
    # without a pair (the sim runtime's case, or keygen failed) the ssh plugin adds nothing
    env, files = pod_environment(job, given(job).pod, POD_DIR)
    assert "VC_SSH_DIR" not in env and not any(name.startswith("root/") for name in files)
