"""The mutation table: what admission defaults in Jobs, Queues and PodGroups (Volcano's mutating
webhooks), and agreement with the job-controller's own defaulting."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from admission_manifests import context, job_doc, parse, podgroup_doc, queue_doc, task

from contracts.job_shape import default_job
from contracts.objects import Job, PodGroup, Queue
from services.admission.core.mutate import mutate_job, mutate_podgroup, mutate_queue


def _job(**spec: Any) -> Job:
    job = parse(job_doc(**spec))
    assert isinstance(job, Job)
    return job


def _with(job: Job, **fields: Any) -> Job:
    return replace(job, **fields)


HOST_NETWORK = {"containers": [{"name": "c"}], "hostNetwork": True}

# (id, job before mutation, attribute getter, value after mutation)
JOB_TABLE: list[tuple[str, Job, Any, Any]] = [
    ("queue-empty-to-default", _with(_job(), queue=""), lambda j: j.queue, "default"),
    ("queue-kept", _job(queue="ml"), lambda j: j.queue, "ml"),
    ("scheduler-empty-to-volcano", _with(_job(), scheduler_name=""), lambda j: j.scheduler_name, "volcano"),
    ("max-retry-zero-to-three", _job(maxRetry=0), lambda j: j.max_retry, 3),
    ("max-retry-kept", _job(maxRetry=7), lambda j: j.max_retry, 7),
    (
        "task-name-empty-to-default-index",
        _with(_job(), tasks=tuple(replace(t, name="") for t in _job().tasks)),
        lambda j: [t.name for t in j.tasks],
        ["default0", "default1"],
    ),
    ("task-min-available-to-replicas", _job(), lambda j: [t.min_available for t in j.tasks], [1, 2]),
    (
        "task-min-available-from-partitions",
        _job(
            tasks=[
                task("w", 8, partitionPolicy={"totalPartitions": 4, "partitionSize": 2, "minPartitions": 3})
            ]
        ),
        lambda j: j.tasks[0].min_available,
        6,
    ),
    (
        "task-min-available-replicas-without-min-partitions",
        _job(tasks=[task("w", 8, partitionPolicy={"totalPartitions": 4, "partitionSize": 2})]),
        lambda j: j.tasks[0].min_available,
        8,
    ),
    (
        "task-min-available-kept",
        _job(tasks=[task("w", 4, minAvailable=1)]),
        lambda j: j.tasks[0].min_available,
        1,
    ),
    ("task-max-retry-zero-to-three", _job(), lambda j: [t.max_retry for t in j.tasks], [3, 3]),
    (
        "task-max-retry-unlimited-kept",
        _job(tasks=[task("w", maxRetry=-1)]),
        lambda j: j.tasks[0].max_retry,
        -1,
    ),
    (
        "job-min-available-to-sum",
        _job(tasks=[task("a", 3, minAvailable=2), task("b", 2)]),
        lambda j: j.min_available,
        4,
    ),
    ("job-min-available-zero-to-sum", _job(minAvailable=0), lambda j: j.min_available, 3),
    ("job-min-available-kept", _job(minAvailable=1), lambda j: j.min_available, 1),
    (
        "host-network-dns-policy",
        _job(tasks=[task("w", pod_spec=HOST_NETWORK)]),
        lambda j: j.tasks[0].template.spec.dns_policy,
        "ClusterFirstWithHostNet",
    ),
    (
        "host-network-dns-policy-kept",
        _job(tasks=[task("w", pod_spec={**HOST_NETWORK, "dnsPolicy": "Default"})]),
        lambda j: j.tasks[0].template.spec.dns_policy,
        "Default",
    ),
    (
        "tensorflow-adds-svc",
        _job(plugins={"tensorflow": []}),
        lambda j: sorted(j.plugins),
        ["svc", "tensorflow"],
    ),
    (
        "pytorch-adds-svc",
        _job(plugins={"pytorch": ["--port=23456"]}),
        lambda j: sorted(j.plugins),
        ["pytorch", "svc"],
    ),
    ("ray-adds-svc", _job(plugins={"ray": []}), lambda j: sorted(j.plugins), ["ray", "svc"]),
    ("mpi-adds-svc-and-ssh", _job(plugins={"mpi": []}), lambda j: sorted(j.plugins), ["mpi", "ssh", "svc"]),
    (
        "existing-svc-arguments-kept",
        _job(plugins={"mpi": [], "svc": ["--publish-not-ready-addresses"]}),
        lambda j: j.plugins["svc"],
        ("--publish-not-ready-addresses",),
    ),
    ("env-alone-unchanged", _job(plugins={"env": []}), lambda j: sorted(j.plugins), ["env"]),
]


@pytest.mark.parametrize(
    ("job", "get", "expected"), [c[1:] for c in JOB_TABLE], ids=[c[0] for c in JOB_TABLE]
)
def test_job_mutation(job: Job, get: Any, expected: Any) -> None:
    assert get(mutate_job(job)) == expected


def test_job_mutation_uses_the_first_configured_scheduler_and_is_idempotent() -> None:
    job = _with(_job(plugins={"mpi": []}), scheduler_name="")
    once = mutate_job(job, ("batch-scheduler", "volcano"))
    assert once.scheduler_name == "batch-scheduler"
    assert mutate_job(once, ("batch-scheduler",)) == once


def test_job_mutation_agrees_with_the_job_controller() -> None:
    job = _with(
        _job(tasks=[task("a", 3, minAvailable=2), task("b", 2, maxRetry=5)], maxRetry=0),
        queue="",
        scheduler_name="",
    )
    mutated, defaulted = mutate_job(job), default_job(job)
    assert replace(mutated, plugins=defaulted.plugins) == defaulted


def _queue(annotations: dict[str, str] | None = None, **changes: Any) -> Queue:
    queue = parse(queue_doc("q", annotations=annotations))
    assert isinstance(queue, Queue)
    return replace(queue, **changes)


H, W = "volcano.sh/hierarchy", "volcano.sh/hierarchy-weights"
QUEUE_TABLE: list[tuple[str, Queue, Any, Any]] = [
    (
        "hierarchy-gets-root",
        _queue({H: "eng/prod", W: "2/8"}),
        lambda q: q.meta.annotations[H],
        "root/eng/prod",
    ),
    ("weights-get-one", _queue({H: "eng/prod", W: "2/8"}), lambda q: q.meta.annotations[W], "1/2/8"),
    ("rooted-hierarchy-kept", _queue({H: "root/eng", W: "1/2"}), lambda q: q.meta.annotations[H], "root/eng"),
    ("hierarchy-alone-kept", _queue({H: "eng"}), lambda q: dict(q.meta.annotations), {H: "eng"}),
    ("reclaimable-nil-to-true", _queue(), lambda q: q.reclaimable, True),
    ("reclaimable-false-kept", _queue(reclaimable=False), lambda q: q.reclaimable, False),
    ("weight-zero-to-one", _queue(weight=0), lambda q: q.weight, 1),
    ("weight-kept", _queue(weight=4), lambda q: q.weight, 4),
]


@pytest.mark.parametrize(
    ("queue", "get", "expected"), [c[1:] for c in QUEUE_TABLE], ids=[c[0] for c in QUEUE_TABLE]
)
def test_queue_mutation(queue: Queue, get: Any, expected: Any) -> None:
    assert get(mutate_queue(queue)) == expected


@pytest.mark.parametrize(
    ("queue", "namespace_queues", "expected"),
    [
        ("default", {"default": "ml"}, "ml"),
        ("", {"default": "ml"}, "ml"),
        ("batch", {"default": "ml"}, "batch"),
        ("default", {"other": "ml"}, "default"),
    ],
)
def test_podgroup_mutation(queue: str, namespace_queues: dict[str, str], expected: str) -> None:
    podgroup = parse(podgroup_doc())
    assert isinstance(podgroup, PodGroup)
    mutated = mutate_podgroup(replace(podgroup, queue=queue), context(namespace_queues=namespace_queues))
    assert mutated.queue == expected
