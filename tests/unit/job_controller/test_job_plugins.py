"""Volcano's job plugins as lahar applies them when a pod starts: what each gives the pod (env and files)."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.job_plugins import pod_environment
from contracts.job_plugins.common import go_flags, task_index
from contracts.job_plugins.svc import config_entries, hosts_file
from contracts.job_shape import default_job
from contracts.objects import Container, Job, ObjectMeta, Pod, PodSpec, PodTemplate, TaskSpec, frozen_map
from services.job_controller.core.expand import pod_for

POD_DIR = "/data/pods/default/pod"


def make_job(*tasks: tuple[str, int] | TaskSpec, name: str = "tj", **plugins: list[str]) -> Job:
    specs = tuple(
        t if isinstance(t, TaskSpec) else TaskSpec(name=t[0], replicas=t[1], template=PodTemplate())
        for t in tasks
    )
    return default_job(
        Job(
            meta=ObjectMeta(name=name),
            tasks=specs,
            plugins=frozen_map({k: tuple(v) for k, v in plugins.items()}),
        )
    )


def pod_of(job: Job, task: str, index: int) -> Pod:
    spec = next(t for t in job.tasks if t.name == task)
    return pod_for(job, spec, index, created_at=0.0)


def named_task(name: str, replicas: int, hostname: str = "", subdomain: str = "") -> TaskSpec:
    spec = PodSpec(containers=(Container("c", command=("true",)),), hostname=hostname, subdomain=subdomain)
    return TaskSpec(name=name, replicas=replicas, template=PodTemplate(spec=spec))


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        (
            [("ps", 1), ("worker-gpu", 2)],
            {
                "ps.host": "tj-ps-0.tj",
                "VC_PS_HOSTS": "tj-ps-0.tj",
                "VC_PS_NUM": "1",
                "worker_gpu.host": "tj-worker-gpu-0.tj\ntj-worker-gpu-1.tj",
                "VC_WORKER_GPU_HOSTS": "tj-worker-gpu-0.tj,tj-worker-gpu-1.tj",
                "VC_WORKER_GPU_NUM": "2",
            },
        ),
        (  # a template hostname names one host for the whole task
            [named_task("db", 3, hostname="primary", subdomain="store")],
            {"db.host": "primary.store", "VC_DB_HOSTS": "primary.store", "VC_DB_NUM": "1"},
        ),
        (  # a template subdomain replaces the job name
            [named_task("w", 2, subdomain="net")],
            {"w.host": "tj-w-0.net\ntj-w-1.net", "VC_W_HOSTS": "tj-w-0.net,tj-w-1.net", "VC_W_NUM": "2"},
        ),
        (
            [("Mixed-Case", 1)],
            {
                "Mixed_Case.host": "tj-Mixed-Case-0.tj",
                "VC_MIXED_CASE_HOSTS": "tj-Mixed-Case-0.tj",
                "VC_MIXED_CASE_NUM": "1",
            },
        ),
    ],
    ids=["two-tasks", "template-hostname", "template-subdomain", "upper-cased-keys-only"],
)
def test_svc_config_entries_are_volcanos_configmap(tasks: list[Any], expected: dict[str, str]) -> None:
    assert config_entries(make_job(*tasks)) == expected


def test_svc_gives_every_pod_the_hosts_as_env_and_files_under_its_hosts_dir() -> None:
    job = make_job(("master", 1), ("worker", 2), svc=[])
    env, files = pod_environment(job, pod_of(job, "worker", 1), POD_DIR)
    assert env == {
        "VC_MASTER_HOSTS": "tj-master-0.tj",
        "VC_MASTER_NUM": "1",
        "VC_WORKER_HOSTS": "tj-worker-0.tj,tj-worker-1.tj",
        "VC_WORKER_NUM": "2",
        "VC_HOSTS_DIR": "/data/pods/default/pod/etc/volcano",
    }
    assert files == {
        "etc/volcano/master.host": b"tj-master-0.tj",
        "etc/volcano/VC_MASTER_HOSTS": b"tj-master-0.tj",
        "etc/volcano/VC_MASTER_NUM": b"1",
        "etc/volcano/worker.host": b"tj-worker-0.tj\ntj-worker-1.tj",
        "etc/volcano/VC_WORKER_HOSTS": b"tj-worker-0.tj,tj-worker-1.tj",
        "etc/volcano/VC_WORKER_NUM": b"2",
        "etc/volcano/hosts": hosts_file(job),
    }


def test_svc_hosts_file_maps_each_host_and_its_short_name_to_the_loopback_address() -> None:
    job = make_job(("master", 1), named_task("db", 2, hostname="primary", subdomain="store"))
    assert hosts_file(job).decode().splitlines() == [
        "# the hosts of job default/tj: every pod runs on this machine",
        "127.0.0.1\ttj-master-0.tj tj-master-0",
        "127.0.0.1\tprimary.store primary",
    ]


@pytest.mark.parametrize(
    ("annotations", "name", "expected"),
    [
        ({"volcano.sh/task-index": "3"}, "tj-worker-3", "3"),
        ({"volcano.sh/task-index": "7"}, "whatever", "7"),  # the annotation is the truth
        ({}, "tj-worker-12", "12"),  # Volcano's rule: the name's last part
        ({}, "two-parts", ""),
    ],
)
def test_task_index(annotations: dict[str, str], name: str, expected: str) -> None:
    pod = Pod(meta=ObjectMeta(name=name, annotations=frozen_map(annotations)))
    assert task_index(pod) == expected


def test_env_gives_the_task_index_under_both_names() -> None:
    job = make_job(("worker", 3), env=[])
    assert pod_environment(job, pod_of(job, "worker", 2), POD_DIR) == (
        {"VK_TASK_INDEX": "2", "VC_TASK_INDEX": "2"},
        {},
    )


PYTORCH = [("master", 1), ("worker", 3), ("evaluator", 1)]


@pytest.mark.parametrize(
    ("tasks", "arguments", "task", "index", "expected"),
    [
        (PYTORCH, [], "master", 0, {"RANK": "0"}),
        (PYTORCH, [], "worker", 2, {"RANK": "3"}),
        (PYTORCH, [], "evaluator", 0, {}),  # neither role: no rank
        (
            [("chief", 1), ("w", 1)],
            ["--master=chief", "-worker", "w", "--port=1234"],
            "w",
            0,
            {"MASTER_ADDR": "tj-chief-0.tj", "MASTER_PORT": "1234", "WORLD_SIZE": "2", "RANK": "1"},
        ),
        ([("worker", 2)], [], "worker", 0, None),  # no master task: nothing at all
    ],
    ids=["master", "worker", "other-task", "flags", "no-master"],
)
def test_pytorch(
    tasks: list[Any], arguments: list[str], task: str, index: int, expected: dict[str, str] | None
) -> None:
    job = make_job(*tasks, pytorch=arguments)
    env, files = pod_environment(job, pod_of(job, task, index), POD_DIR)
    if expected is None:
        assert env == {}
        return
    defaults = {"MASTER_ADDR": "tj-master-0.tj", "MASTER_PORT": "23456", "WORLD_SIZE": "4"}
    assert (env, files) == ({**defaults, **expected}, {})


@pytest.mark.parametrize(
    ("tasks", "arguments", "task", "expected"),
    [
        ([("master", 1), ("worker", 2)], [], "master", {"MPI_HOST": "tj-worker-0.tj,tj-worker-1.tj"}),
        ([("master", 1), ("worker", 2)], [], "worker", {}),
        (
            [("launcher", 1), ("node", 1)],
            ["--master=launcher", "--worker=node"],
            "launcher",
            {"MPI_HOST": "tj-node-0.tj"},
        ),
        ([("master", 1)], [], "master", {}),  # no worker task
    ],
    ids=["master", "worker", "flags", "no-worker"],
)
def test_mpi(tasks: list[Any], arguments: list[str], task: str, expected: dict[str, str]) -> None:
    job = make_job(*tasks, mpi=arguments)
    assert pod_environment(job, pod_of(job, task, 0), POD_DIR) == (expected, {})


def test_plugins_combine_and_the_ones_lahar_lacks_add_nothing() -> None:
    job = make_job(("master", 1), ("worker", 1), env=[], svc=[], ssh=[], tensorflow=[])
    env, files = pod_environment(job, pod_of(job, "worker", 0), POD_DIR)
    assert env["VC_TASK_INDEX"] == "0" and env["VC_WORKER_NUM"] == "1"
    assert set(files) >= {"etc/volcano/worker.host", "etc/volcano/hosts"}
    assert pod_environment(make_job(("w", 1), ssh=[]), pod_of(make_job(("w", 1)), "w", 0), POD_DIR) == (
        {},
        {},
    )
    assert pod_environment(make_job(("w", 1)), pod_of(make_job(("w", 1)), "w", 0), POD_DIR) == ({}, {})


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([], {"master": "m", "port": "1"}),
        (["--master=a", "-port=2"], {"master": "a", "port": "2"}),
        (["-master", "b", "--port", "3"], {"master": "b", "port": "3"}),
        (["--port=5", "--unknown=x", "--master=c"], {"master": "m", "port": "5"}),  # stops at unknown
        (["--port"], {"master": "m", "port": "1"}),  # no value
        (["positional", "--master=d"], {"master": "m", "port": "1"}),  # parsing stops at a non-flag
        (["--master="], {"master": "", "port": "1"}),
    ],
)
def test_go_flags(arguments: list[str], expected: dict[str, str]) -> None:
    assert go_flags(arguments, {"master": "m", "port": "1"}) == expected
