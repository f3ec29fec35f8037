"""Job validation: one case per Volcano rule, each a manifest (or, where the manifest parser already
refuses the value, an object) that breaks exactly that rule."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from admission_manifests import (
    assert_problems,
    container,
    context,
    job_doc,
    parse,
    problems,
    queue_doc,
    task,
)

from contracts.objects import Job, LifecyclePolicy, VolumeSpec
from services.admission.core.job_rules import mpi_master

POD_SPEC_500M = {"containers": [container(cpu="500m")]}

# (id, job manifest, [(path, message fragment)])
MANIFEST_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("no-tasks", job_doc(tasks=[]), [("spec.tasks", "no task specified")]),
    ("min-available-above-replicas", job_doc(minAvailable=4), [("spec.minAvailable", "greater than total")]),
    (
        "duplicated-task-name",
        job_doc(tasks=[task("a"), task("a")]),
        [("spec.tasks[1].name", "duplicated task name 'a'")],
    ),
    (
        "task-name-not-dns-label",
        job_doc(tasks=[task("Worker_1")]),
        [("spec.tasks[0].name", "RFC 1123 label")],
    ),
    (
        "task-min-available-above-replicas",
        job_doc(minAvailable=2, tasks=[task("ps", 2, minAvailable=3)]),
        [("spec.tasks[0].minAvailable", "greater than 'replicas'")],
    ),
    (
        "policy-event-and-exit-code",
        job_doc(policies=[{"event": "PodFailed", "exitCode": 3, "action": "AbortJob"}]),
        [("spec.policies[0]", "must not specify event and exitCode")],
    ),
    (
        "policy-neither-event-nor-exit-code",
        job_doc(policies=[{"action": "AbortJob"}]),
        [("spec.policies[0]", "either event")],
    ),
    (
        "policy-exit-code-zero",
        job_doc(policies=[{"exitCode": 0, "action": "AbortJob"}]),
        [("spec.policies[0].exitCode", "0 is not a valid exit code")],
    ),
    (
        "duplicated-policy-event",
        job_doc(
            policies=[
                {"event": "PodFailed", "action": "RestartJob"},
                {"event": "PodFailed", "action": "AbortJob"},
            ]
        ),
        [("spec.policies[1].event", "duplicate event 'PodFailed'")],
    ),
    (
        "duplicated-policy-event-in-events-list",
        job_doc(
            policies=[
                {"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"},
                {"events": ["PodFailed"], "action": "AbortJob"},
            ]
        ),
        [("spec.policies[1].events[0]", "duplicate event 'PodFailed'")],
    ),
    (
        "duplicated-policy-exit-code",
        job_doc(policies=[{"exitCode": 3, "action": "RestartJob"}, {"exitCode": 3, "action": "AbortJob"}]),
        [("spec.policies[1].exitCode", "duplicate exitCode 3")],
    ),
    (
        "any-event-not-alone",
        job_doc(
            policies=[{"event": "*", "action": "RestartJob"}, {"event": "PodEvicted", "action": "AbortJob"}]
        ),
        [("spec.policies[0]", "'*' (any event) must be the only event policy")],
    ),
    (
        "task-policies-checked-too",
        job_doc(
            tasks=[
                task(
                    "ps",
                    policies=[
                        {"event": "TaskCompleted", "action": "CompleteJob"},
                        {"event": "TaskCompleted", "action": "AbortJob"},
                    ],
                )
            ]
        ),
        [("spec.tasks[0].policies[1].event", "duplicate event 'TaskCompleted'")],
    ),
    (
        "volume-mount-path-with-colon",
        job_doc(volumes=[{"mountPath": "/data:ro", "volumeClaimName": "data"}]),
        [("spec.volumes[0].mountPath", "must not contain ':'")],
    ),
    (
        "volume-duplicated-mount-path",
        job_doc(
            volumes=[
                {"mountPath": "/data", "volumeClaimName": "a"},
                {"mountPath": "/data", "volumeClaimName": "b"},
            ]
        ),
        [("spec.volumes[1].mountPath", "duplicated mountPath '/data'")],
    ),
    (
        "volume-without-claim",
        job_doc(volumes=[{"mountPath": "/data"}]),
        [("spec.volumes[0]", "either volumeClaim or volumeClaimName")],
    ),
    (
        "volume-claim-and-claim-name",
        job_doc(
            volumes=[{"mountPath": "/data", "volumeClaimName": "a", "volumeClaim": {"accessModes": ["x"]}}]
        ),
        [("spec.volumes[0].volumeClaimName", "conflict")],
    ),
    (
        "volume-claim-name-invalid",
        job_doc(volumes=[{"mountPath": "/data", "volumeClaimName": "Data_Set"}]),
        [("spec.volumes[0].volumeClaimName", "RFC 1123 subdomain")],
    ),
    (
        "unknown-plugin",
        job_doc(plugins={"horovod": []}),
        [("spec.plugins[horovod]", "unable to find job plugin")],
    ),
    (
        "mpi-default-master-missing",
        job_doc(plugins={"mpi": []}),
        [("spec.plugins[mpi]", "mpi master task 'master' was not found")],
    ),
    (
        "mpi-named-master-missing",
        job_doc(plugins={"mpi": ["--master=launcher"]}, tasks=[task("master"), task("worker")]),
        [("spec.plugins[mpi]", "mpi master task 'launcher' was not found")],
    ),
    (
        "pod-name-too-long",
        job_doc(name="j" * 53, tasks=[task("workers", 16)]),
        [("spec.tasks[0].name", "64 characters, more than the 63")],
    ),
    ("job-name-invalid", job_doc(name="Train"), [("metadata.name", "RFC 1123 subdomain")]),
    ("job-name-longer-than-63", job_doc(name="j" * 64), [("metadata.name", "no more than 63")]),
    ("namespace-invalid", job_doc(namespace="ML_Team"), [("metadata.namespace", "RFC 1123 label")]),
    (
        "scheduler-name-too-long",
        job_doc(schedulerName="s" * 64),
        [("spec.schedulerName", "1 to 63 characters")],
    ),
    (
        "topology-policy-fractional-cpu",
        job_doc(tasks=[task("ps", topologyPolicy="single-numa-node", pod_spec=POD_SPEC_500M)]),
        [("spec.tasks[0].template.spec.containers[0].resources.requests.cpu", "whole number of CPUs")],
    ),
    (
        "topology-policy-no-cpu-request",
        job_doc(
            tasks=[
                task(
                    "ps",
                    topologyPolicy="restricted",
                    pod_spec={"containers": [{"name": "main", "resources": {"requests": {"memory": "1Gi"}}}]},
                )
            ]
        ),
        [("spec.tasks[0].template.spec.containers[0].resources.requests.cpu", "got none")],
    ),
    (
        "topology-policy-init-container-checked",
        job_doc(
            tasks=[
                task(
                    "ps",
                    topologyPolicy="best-effort",
                    pod_spec={"containers": [container()], "initContainers": [container("init", "250m")]},
                )
            ]
        ),
        [("spec.tasks[0].template.spec.initContainers[0].resources.requests.cpu", "got 250m")],
    ),
    (
        "partition-replicas-mismatch",
        job_doc(tasks=[task("w", 8, partitionPolicy={"totalPartitions": 3, "partitionSize": 4})]),
        [("spec.tasks[0].replicas", "must equal totalPartitions x partitionSize = 12")],
    ),
    (
        "partition-min-available-mismatch",
        job_doc(
            tasks=[
                task(
                    "w",
                    8,
                    minAvailable=6,
                    partitionPolicy={"totalPartitions": 2, "partitionSize": 4, "minPartitions": 1},
                )
            ]
        ),
        [("spec.tasks[0].minAvailable", "must equal minPartitions x partitionSize = 4")],
    ),
    (
        "partition-network-topology-both-tiers",
        job_doc(
            tasks=[
                task(
                    "w",
                    4,
                    partitionPolicy={
                        "totalPartitions": 2,
                        "partitionSize": 2,
                        "networkTopology": {"highestTierAllowed": 1, "highestTierName": "rack"},
                    },
                )
            ]
        ),
        [
            ("spec.tasks[0].partitionPolicy.networkTopology.highestTierName", "simultaneously"),
            (
                "spec.tasks[0].partitionPolicy.networkTopology.highestTierAllowed",
                "also given: spec.tasks[0].partitionPolicy.networkTopology.highestTierName",
            ),
        ],
    ),
    (
        "network-topology-both-tiers",
        job_doc(networkTopology={"mode": "hard", "highestTierAllowed": 2, "highestTierName": "spine"}),
        [
            (
                "spec.networkTopology.highestTierName",
                "must not specify 'highestTierAllowed' and 'highestTierName'",
            ),
            ("spec.networkTopology.highestTierAllowed", "also given: spec.networkTopology.highestTierName"),
        ],
    ),
    (
        "partition-min-partitions-above-total",
        job_doc(
            tasks=[
                task("w", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 3})
            ]
        ),
        # refused as Volcano does, through the minAvailable it defaults from minPartitions x partitionSize
        [
            ("spec.minAvailable", "should not be greater than total replicas in tasks (4)"),
            ("spec.tasks[0].minAvailable", "'minAvailable' 6 is greater than 'replicas' 4"),
        ],
    ),
    (
        "depends-on-unknown-task",
        job_doc(tasks=[task("ps", dependsOn={"name": ["launcher"]})]),
        [("spec.tasks[0].dependsOn.name[0]", "'launcher', which is not a task")],
    ),
    (
        "depends-on-cycle",
        job_doc(
            tasks=[
                task("a", dependsOn={"name": ["c"]}),
                task("b", dependsOn={"name": ["a"]}),
                task("c", dependsOn={"name": ["b"]}),
                task("after", dependsOn={"name": ["c"]}),
            ]
        ),
        [("spec.tasks", "tasks a, b, c wait for each other")],
    ),
    (
        "depends-on-itself",
        job_doc(tasks=[task("a", dependsOn={"name": ["a"]})]),
        [("spec.tasks", "directed acyclic graph: tasks a wait")],
    ),
    ("queue-missing", job_doc(queue="batch"), [("spec.queue", "unable to find job queue 'batch'")]),
    ("queue-root", job_doc(queue="root"), [("spec.queue", "can not submit job to the root queue")]),
    (
        "priority-class-missing",
        job_doc(priorityClassName="urgent"),
        [("spec.priorityClassName", "no PriorityClass with name 'urgent'")],
    ),
    (
        "task-priority-class-missing",
        job_doc(tasks=[task("ps", pod_spec={"containers": [container()], "priorityClassName": "urgent"})]),
        [("spec.tasks[0].template.spec.priorityClassName", "no PriorityClass with name 'urgent'")],
    ),
    (
        "no-containers",
        job_doc(tasks=[task("ps", pod_spec={"containers": []})]),
        [("spec.tasks[0].template.spec.containers", "at least one container")],
    ),
    (
        "duplicated-container-name",
        job_doc(
            tasks=[
                task(
                    "ps", pod_spec={"containers": [container("main")], "initContainers": [container("main")]}
                )
            ]
        ),
        [("spec.tasks[0].template.spec.initContainers[0].name", "duplicated container name 'main'")],
    ),
    (
        "request-above-limit",
        job_doc(
            tasks=[
                task(
                    "ps",
                    pod_spec={
                        "containers": [
                            {"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}
                        ]
                    },
                )
            ]
        ),
        [
            (
                "spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
                "less than or equal to the cpu limit",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("doc", "expected"), [c[1:] for c in MANIFEST_CASES], ids=[c[0] for c in MANIFEST_CASES]
)
def test_job_rule(doc: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert_problems(problems(doc), expected)


def _job() -> Job:
    job = parse(job_doc(policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    assert isinstance(job, Job)
    return job


def _task0(job: Job, **changes: Any) -> Job:
    return replace(job, tasks=(replace(job.tasks[0], **changes), *job.tasks[1:]))


# values the manifest parser already refuses, checked on objects built in code
OBJECT_CASES = [
    ("job-min-available-negative", lambda j: replace(j, min_available=-1), "spec.minAvailable", ">= 0"),
    ("max-retry-negative", lambda j: replace(j, max_retry=-2), "spec.maxRetry", "cannot be less than zero"),
    (
        "ttl-negative",
        lambda j: replace(j, ttl_seconds_after_finished=-1),
        "spec.ttlSecondsAfterFinished",
        "less",
    ),
    ("min-success-zero", lambda j: replace(j, min_success=0), "spec.minSuccess", ">= 1"),
    (
        "task-replicas-negative",
        lambda j: _task0(j, replicas=-1, min_available=0),
        "spec.tasks[0].replicas",
        ">= 0",
    ),
    (
        "task-min-available-negative",
        lambda j: _task0(j, min_available=-1),
        "spec.tasks[0].minAvailable",
        ">= 0",
    ),
    ("task-max-retry-below-minus-one", lambda j: _task0(j, max_retry=-2), "spec.tasks[0].maxRetry", ">= -1"),
    (
        "policy-event-internal",
        lambda j: replace(j, policies=(LifecyclePolicy(action="RestartJob", event="OutOfSync"),)),
        "spec.policies[0].event",
        "invalid policy event 'OutOfSync'",
    ),
    (
        "policy-action-internal",
        lambda j: replace(j, policies=(LifecyclePolicy(action="SyncJob", event="PodFailed"),)),
        "spec.policies[0].action",
        "invalid policy action 'SyncJob'",
    ),
    (
        "volume-mount-path-missing",
        lambda j: replace(j, volumes=(VolumeSpec(mount_path="", volume_claim_name="data"),)),
        "spec.volumes[0].mountPath",
        "mountPath is required",
    ),
    (
        "task-topology-policy-unknown",
        lambda j: _task0(j, topology_policy="pinned"),
        "spec.tasks[0].topologyPolicy",
        "pinned",
    ),
]


@pytest.mark.parametrize(
    ("change", "path", "fragment"), [c[1:] for c in OBJECT_CASES], ids=[c[0] for c in OBJECT_CASES]
)
def test_job_rule_on_objects(change: Any, path: str, fragment: str) -> None:
    assert_problems(problems(change(_job())), [(path, fragment)])


def test_job_queue_must_be_open_and_a_leaf() -> None:
    ctx = context(
        queue_doc("closed", status={"state": "Closed"}),
        queue_doc("research"),
        queue_doc("research-nlp", parent="research"),
    )
    assert_problems(problems(job_doc(queue="closed"), ctx), [("spec.queue", "queue 'closed' is Closed")])
    assert_problems(
        problems(job_doc(queue="research"), ctx),
        [("spec.queue", "leaf queue, queue 'research' has child queues: research-nlp")],
    )
    assert problems(job_doc(queue="research-nlp"), ctx) == []


def test_every_problem_of_a_job_is_reported_at_once() -> None:
    doc = job_doc(
        name="Bad",
        queue="nowhere",
        plugins={"horovod": []},
        tasks=[task("a"), task("a"), task("B_", dependsOn={"name": ["zzz"]})],
        policies=[{"exitCode": 0, "action": "AbortJob"}],
    )
    paths = {path for path, _ in problems(doc)}
    assert paths == {
        "metadata.name",
        "spec.queue",
        "spec.plugins[horovod]",
        "spec.tasks[1].name",
        "spec.tasks[2].name",
        "spec.tasks[2].dependsOn.name[0]",
        "spec.policies[0].exitCode",
    }


def test_a_complete_valid_job_passes() -> None:
    ctx = context(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 100,
        }
    )
    doc = job_doc(
        priorityClassName="high",
        minAvailable=3,
        maxRetry=5,
        ttlSecondsAfterFinished=60,
        plugins={"mpi": ["--master", "launcher"], "env": []},
        volumes=[
            {"mountPath": "/data", "volumeClaimName": "dataset"},
            {"mountPath": "/out", "volumeClaim": {}},
        ],
        policies=[{"event": "PodEvicted", "action": "RestartJob"}, {"exitCode": 137, "action": "AbortJob"}],
        networkTopology={"mode": "soft", "highestTierAllowed": 2},
        tasks=[
            task("launcher", dependsOn={"name": ["worker"]}, topologyPolicy="single-numa-node"),
            task("worker", 2, policies=[{"events": ["PodFailed", "TaskFailed"], "action": "RestartTask"}]),
            task(
                "evaluator",
                pod_spec={"containers": [container()], "priorityClassName": "system-node-critical"},
            ),
        ],
    )
    assert problems(doc, ctx) == []


@pytest.mark.parametrize(
    ("arguments", "master"),
    [
        ((), "master"),
        (("--master=launcher",), "launcher"),
        (("-master", "head", "--worker=w"), "head"),
        (("--port=22",), "master"),
    ],
)
def test_mpi_master_flag(arguments: tuple[str, ...], master: str) -> None:
    assert mpi_master(arguments) == master
