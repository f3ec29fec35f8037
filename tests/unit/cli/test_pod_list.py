"""`lahar pod list` (services/cli/pod_cmd.py): vcctl's choice of pods (-j, -q, every job's pods) and
kubectl's Ready and Status columns, as pure functions of the pods."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contracts.objects import Container, ObjectMeta, Pod, PodSpec, PodStatus
from services.cli.main import main
from services.cli.pod_cmd import QueueMismatch, chosen, ready, rows, status


def pod(
    name: str,
    *,
    job: str = "",
    queue: str = "",
    plain_queue: str = "",
    phase: str = "Pending",
    namespace: str = "default",
) -> Pod:
    labels = {"volcano.sh/job-name": job, "volcano.sh/queue-name": queue} if job else {}
    annotations = {"scheduling.volcano.sh/queue-name": plain_queue} if plain_queue else {}
    meta = ObjectMeta(name, namespace, labels=labels, annotations=annotations, creation_timestamp=100.0)
    spec = PodSpec(containers=(Container("main"), Container("log")))
    return Pod(meta, spec, PodStatus(phase=phase))


PODS = [
    pod("train-worker-1", job="train", queue="research"),
    pod("train-worker-0", job="train", queue="research"),
    pod("serve-0", job="serve", queue="default"),
    pod("hello", plain_queue="research"),
    pod("train-worker-0", job="train", queue="research", namespace="a-first"),
]


def names(pods: list[Pod]) -> list[str]:
    return [p.meta.key for p in pods]


def test_every_pod_a_job_created_by_namespace_and_name() -> None:
    assert names(chosen(PODS, job="", queue="")) == [
        "a-first/train-worker-0",
        "default/serve-0",
        "default/train-worker-0",
        "default/train-worker-1",
    ]


def test_a_jobs_pods() -> None:
    assert names(chosen(PODS, job="serve", queue="")) == ["default/serve-0"]
    assert names(chosen(PODS, job="serve", queue="default")) == ["default/serve-0"]
    with pytest.raises(QueueMismatch, match="job serve is not in queue research"):
        chosen(PODS, job="serve", queue="research")


def test_a_queues_pods_plain_ones_included() -> None:
    assert names(chosen(PODS, job="", queue="research")) == [
        "a-first/train-worker-0",
        "default/hello",
        "default/train-worker-0",
        "default/train-worker-1",
    ]


@pytest.mark.parametrize(
    ("phase", "reason", "deleting", "shown", "ready_count"),
    [
        ("Pending", "", False, "Pending", "0/2"),
        ("Running", "", False, "Running", "2/2"),
        ("Running", "", True, "Terminating", "0/2"),
        ("Succeeded", "", False, "Completed", "0/2"),
        ("Failed", "", False, "Error", "0/2"),
        ("Failed", "NodeLost", False, "NodeLost", "0/2"),
        ("Failed", "", True, "Error", "0/2"),
    ],
)
def test_status_and_ready_as_kubectl_prints_them(
    phase: str, reason: str, deleting: bool, shown: str, ready_count: str
) -> None:
    one = pod("p", job="j", queue="q", phase=phase)
    one = replace(one, status=replace(one.status, reason=reason))
    if deleting:
        one = replace(one, meta=replace(one.meta, deletion_timestamp=150.0))
    assert status(one) == shown and ready(one) == ready_count


def test_rows_carry_vcctls_columns() -> None:
    running = replace(PODS[0], status=PodStatus(phase="Running"))
    assert rows([running], 400.0, namespaced=False) == [["train-worker-1", "2/2", "Running", 0, "5m"]]
    assert rows([running], 400.0, namespaced=True)[0][0] == "default"


def test_a_selector_that_cannot_be_read_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # refused before anything connects: no cluster is needed to find out
    assert main(["pod", "list", "-l", "a in b"]) == 2
    assert "lahar pod list: selector 'a in b': at 'b' (character 6): expected '(' after 'in'" in (
        capsys.readouterr().err
    )
    assert main(["get", "pods", "-l", "x=(y)"]) == 2
    assert "lahar get: selector 'x=(y)'" in capsys.readouterr().err
    assert main(["get", "pod", "p", "-l", "x=y"]) == 2
    assert "give a NAME or a selector (-l), not both" in capsys.readouterr().err
    assert main(["job", "list", "-l", "!"]) == 2
    assert "lahar job list: selector '!': at the end: expected a label key" in capsys.readouterr().err
