"""Job expansion: admission defaulting, the PodGroup (with Volcano's calcPGMinResources) and the pods."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from contracts.job_shape import default_job
from contracts.objects import (
    Container,
    Job,
    NetworkTopologySpec,
    ObjectMeta,
    PartitionPolicy,
    PodSpec,
    PodTemplate,
    PriorityClass,
    TaskSpec,
    frozen_map,
)
from contracts.pending import expected_run_seconds
from contracts.resources import Resources
from services.job_controller.core.expand import min_resources, pod_for, podgroup_for

CLASSES = {
    "high": PriorityClass(ObjectMeta("high", ""), value=100),
    "low": PriorityClass(ObjectMeta("low", ""), value=10),
}


def task(
    name: str = "",
    replicas: int = 1,
    min_available: int | None = None,
    *,
    cpu: str = "1",
    priority_class: str = "",
    max_retry: int = 0,
    partition: PartitionPolicy | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> TaskSpec:
    container = Container(name="c", requests=Resources.parse({"cpu": cpu, "memory": "1Gi"}))
    spec = PodSpec(containers=(container,), priority_class_name=priority_class)
    template = PodTemplate(labels=frozen_map(labels), annotations=frozen_map(annotations), spec=spec)
    return TaskSpec(
        name=name,
        replicas=replicas,
        min_available=min_available,
        template=template,
        max_retry=max_retry,
        partition_policy=partition,
    )


def job(*tasks: TaskSpec, name: str = "train", **fields: Any) -> Job:
    annotations = fields.pop("annotations", None)
    meta = ObjectMeta(name, "team-a", uid=f"team-a-{name}", annotations=frozen_map(annotations))
    return Job(meta=meta, tasks=tasks, **fields)


# --- defaulting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "task_names", "task_mins", "job_min"),
    [
        # unnamed tasks are named default<index>
        (job(task("", 2), task("", 3)), ["default0", "default1"], [2, 3], 5),
        (job(task("ps", 2), task("", 3)), ["ps", "default1"], [2, 3], 5),
        # a task's minAvailable defaults to its replicas; the job's to the sum of the tasks'
        (job(task("ps", 2, 1), task("worker", 4)), ["ps", "worker"], [1, 4], 5),
        (job(task("ps", 2, 0), task("worker", 4, 2)), ["ps", "worker"], [0, 2], 2),
        # an explicit job minAvailable is kept, even below the tasks' sum
        (job(task("ps", 2), task("worker", 4), min_available=3), ["ps", "worker"], [2, 4], 3),
        # minAvailable 0 on the job means "not set"
        (job(task("ps", 2), task("worker", 4), min_available=0), ["ps", "worker"], [2, 4], 6),
        # a partition policy's minimum partitions set the task minimum
        (
            job(
                task(
                    "w", 8, partition=PartitionPolicy(total_partitions=4, partition_size=2, min_partitions=3)
                )
            ),
            ["w"],
            [6],
            6,
        ),
        (
            job(task("w", 8, partition=PartitionPolicy(total_partitions=4, partition_size=2))),
            ["w"],
            [8],
            8,
        ),
    ],
)
def test_default_job_minimums_and_names(
    given: Job, task_names: list[str], task_mins: list[int], job_min: int
) -> None:
    defaulted = default_job(given)
    assert [t.name for t in defaulted.tasks] == task_names
    assert [t.min_available for t in defaulted.tasks] == task_mins
    assert defaulted.min_available == job_min


@pytest.mark.parametrize(
    ("given", "queue", "scheduler", "job_retry", "task_retry"),
    [
        (job(task("a"), queue="", scheduler_name="", max_retry=0), "default", "volcano", 3, [3]),
        (
            job(task("a", max_retry=5), queue="gpu", scheduler_name="other", max_retry=7),
            "gpu",
            "other",
            7,
            [5],
        ),
        # -1: unlimited task restarts, kept as given
        (job(task("a", max_retry=-1), task("b")), "default", "volcano", 3, [-1, 3]),
    ],
)
def test_default_job_queue_scheduler_and_retries(
    given: Job, queue: str, scheduler: str, job_retry: int, task_retry: list[int]
) -> None:
    defaulted = default_job(given)
    assert defaulted.queue == queue
    assert defaulted.scheduler_name == scheduler
    assert defaulted.max_retry == job_retry
    assert [t.max_retry for t in defaulted.tasks] == task_retry


def test_default_job_is_idempotent() -> None:
    once = default_job(job(task("", 2, 1), task("w", 3), queue=""))
    assert default_job(once) == once


# --- minResources (calcPGMinResources) ----------------------------------------------------------------

# Worked example. Tasks in document order, with their priority:
#   ps      prio 0    2 replicas, minAvailable 1, 2 cpu each
#   driver  prio 10   1 replica,  minAvailable 1, 4 cpu
#   worker  prio 100  4 replicas, minAvailable 2, 1 cpu each
# Σ task minAvailable = 4 pods; all 7 replicas together ask for 12 cpu. By priority: worker, driver, ps.
#   job min 1 (< 4): the first pod by priority, counting replicas: 1 worker                = 1 cpu
#   job min 3 (< 4): the first 3 pods by priority: 3 workers                               = 3 cpu
#   job min 4 (= 4): each task's minimum: 2 workers + driver + 1 ps = 2 + 4 + 2            = 8 cpu
#   job min 5: the minimums, then one more pod from the highest-priority task with replicas
#              to spare (worker)                                                           = 9 cpu
#   job min 6: the minimums and worker's 2 spare replicas                                  = 10 cpu
#   job min 7: then the driver has none to spare, so the second ps                         = 12 cpu
#   job min 9: more than the 7 replicas: every pod                                         = 12 cpu
# Taking tasks in document order instead would give 8 (min 3: both ps and the driver) and 10 (min 5).
WORKED = (
    task("ps", 2, 1, cpu="2"),
    task("driver", 1, 1, cpu="4", priority_class="low"),
    task("worker", 4, 2, cpu="1", priority_class="high"),
)


@pytest.mark.parametrize(
    ("job_min", "cpu", "pods"),
    [(1, "1", 1), (3, "3", 3), (4, "8", 4), (5, "9", 5), (6, "10", 6), (7, "12", 7), (9, "12", 7)],
)
def test_min_resources_worked_example(job_min: int, cpu: str, pods: int) -> None:
    defaulted = default_job(job(*WORKED, min_available=job_min))
    expected = Resources.parse({"cpu": cpu, "memory": f"{pods}Gi"})
    assert min_resources(defaulted, CLASSES) == expected


def test_min_resources_without_priority_classes_takes_document_order() -> None:
    defaulted = default_job(job(*WORKED, min_available=3))
    # unknown classes count as priority 0, so document order: both ps pods (2 x 2 cpu), then the driver
    assert min_resources(defaulted) == Resources.parse({"cpu": "8", "memory": "3Gi"})


def test_min_resources_of_a_default_gang_is_every_pod() -> None:
    defaulted = default_job(job(task("ps", 2, cpu="2"), task("worker", 4)))
    assert min_resources(defaulted) == Resources.parse({"cpu": "8", "memory": "6Gi"})


def test_min_resources_ranks_tasks_by_their_own_class_only() -> None:
    # with the job in class "high", ps (no class of its own) still ranks at 0 in Volcano: min 5 = 9 cpu
    defaulted = default_job(job(*WORKED, min_available=5, priority_class_name="high"))
    assert min_resources(defaulted, CLASSES) == Resources.parse({"cpu": "9", "memory": "5Gi"})


# --- the PodGroup -------------------------------------------------------------------------------------


def test_podgroup_for_a_job() -> None:
    given = job(
        *WORKED,
        min_available=5,
        queue="research",
        priority_class_name="low",
        annotations={"lahar.dev/sim-duration": "30s", "volcano.sh/preemptable": "false", "team": "ml"},
    )
    pg = podgroup_for(default_job(given), CLASSES)
    assert pg.meta.key == "team-a/train"
    assert pg.min_member == 5
    assert dict(pg.min_task_member) == {"ps": 1, "driver": 1, "worker": 2}
    assert pg.queue == "research"
    assert pg.priority_class_name == "low"
    assert pg.min_resources == Resources.parse({"cpu": "9", "memory": "5Gi"})
    assert pg.status.phase == "Pending"
    # simulation knobs and the preemptable flag travel with the job; other annotations do not
    assert dict(pg.meta.annotations) == {"lahar.dev/sim-duration": "30s", "volcano.sh/preemptable": "false"}


def test_the_running_estimate_goes_on_the_podgroup() -> None:
    # the scheduler reads how long the job's pods run from the PodGroup (the starvation bound)
    estimated = replace(job(*WORKED), running_estimate=5400.0)
    pg = podgroup_for(default_job(estimated), CLASSES)
    assert dict(pg.meta.annotations) == {"lahar.dev/running-estimate": "1h30m0s"}
    assert expected_run_seconds({}, pg.meta.annotations) == 5400.0
    assert (
        "lahar.dev/running-estimate" not in podgroup_for(default_job(job(*WORKED)), CLASSES).meta.annotations
    )


# --- the pods -----------------------------------------------------------------------------------------


def test_pods_are_named_job_task_index_in_task_order() -> None:
    defaulted = default_job(job(task("ps", 2), task("", 3)))
    pods = [pod_for(defaulted, t, i, created_at=5.0) for t in defaulted.tasks for i in range(t.replicas)]
    assert [p.meta.key for p in pods] == [
        "team-a/train-ps-0",
        "team-a/train-ps-1",
        "team-a/train-default1-0",
        "team-a/train-default1-1",
        "team-a/train-default1-2",
    ]
    assert {p.meta.creation_timestamp for p in pods} == {5.0}
    assert len({p.meta.uid for p in pods}) == len(pods)


def test_pod_annotations_labels_and_spec() -> None:
    given = default_job(
        job(
            task("ps"),
            task(
                "worker",
                3,
                priority_class="low",
                annotations={"prometheus.io/scrape": "true"},
                labels={"app": "tf"},
            ),
            queue="research",
            priority_class_name="high",
            annotations={"lahar.dev/sim-duration": "30s", "owner": "someone"},
        )
    )
    worker = pod_for(given, given.tasks[1], 2, created_at=0.0)
    assert worker.meta.name == "train-worker-2"
    notes = dict(worker.meta.annotations)
    assert notes["scheduling.k8s.io/group-name"] == "train"
    assert notes["volcano.sh/job-name"] == "train"
    assert notes["volcano.sh/task-spec"] == "worker"
    assert notes["volcano.sh/task-index"] == "2"
    assert notes["volcano.sh/queue-name"] == "research"
    assert notes["lahar.dev/sim-duration"] == "30s"
    assert notes["prometheus.io/scrape"] == "true"
    assert "owner" not in notes
    labels = dict(worker.meta.labels)
    assert labels == {
        "app": "tf",
        "volcano.sh/job-name": "train",
        "volcano.sh/job-namespace": "team-a",
        "volcano.sh/queue-name": "research",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/task-index": "2",
    }
    assert worker.spec.scheduler_name == "volcano"
    assert worker.spec.node_name == ""
    assert worker.status.phase == "Pending"
    # the template's own priority class wins; a task without one takes the job's
    assert worker.spec.priority_class_name == "low"
    ps = pod_for(given, given.tasks[0], 0, created_at=0.0)
    assert ps.spec.priority_class_name == "high"


# --- partitions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (2, ["0", "0", "1", "1", "2", "2"]),
        (3, ["0", "0", "0", "1", "1", "1"]),
        (1, ["0", "1", "2", "3", "4", "5"]),
    ],
)
def test_pods_of_a_partitioned_task_carry_their_partition(size, expected):
    policy = PartitionPolicy(total_partitions=6 // size, partition_size=size)
    spec = task("w", 6, partition=policy)
    the_job = default_job(job(spec))
    labels = [pod_for(the_job, the_job.tasks[0], i, created_at=0.0).meta.labels for i in range(6)]
    assert [label["volcano.sh/partition-id"] for label in labels] == expected


def test_pods_of_a_plain_task_carry_no_partition():
    the_job = default_job(job(task("w", 2)))
    assert "volcano.sh/partition-id" not in pod_for(the_job, the_job.tasks[0], 1, created_at=0.0).meta.labels


def test_partitioned_tasks_become_sub_group_policies():
    topology = NetworkTopologySpec("hard", 1)
    partitioned = task("w", 8, partition=PartitionPolicy(4, 2, min_partitions=3, network_topology=topology))
    the_job = default_job(job(task("ps", 1), partitioned, task("x", 2, partition=PartitionPolicy(1, 2))))
    policies = podgroup_for(the_job).sub_group_policy
    assert [(p.name, p.sub_group_size, p.min_sub_groups) for p in policies] == [("w", 2, 3), ("x", 2, 0)]
    assert policies[0].network_topology == topology and policies[1].network_topology is None
    assert dict(policies[0].label_selector.match_labels) == {"volcano.sh/task-spec": "w"}
    assert policies[0].match_label_keys == ("volcano.sh/partition-id",)
    assert podgroup_for(default_job(job(task("w", 2)))).sub_group_policy == ()
