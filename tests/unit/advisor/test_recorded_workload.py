"""A stack's recorded workload as manifests (`lahar export workload`): what the event log holds becomes
nodes, settings and jobs with arrival and run times, and the simulator replays the result."""

from __future__ import annotations

from typing import Any

import yaml

from contracts.codec import encode_object
from contracts.job_shape import default_job
from contracts.objects import Job
from contracts.parse import load_documents
from services.advisor.recorded import recorded_workload
from services.job_controller.core.expand import pod_for
from services.scheduler.core.conf import default_conf
from services.simulator.engine import simulate
from shared.client_reads import RawEvent

T0 = 1_700_000_000.0
NODE = """
apiVersion: v1
kind: Node
metadata: {name: hollow-0, uid: u-1, labels: {zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"""
QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 2}
"""
JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %s, namespace: team-a, annotations: {lahar.dev/sim-duration: 60s, keep: me}}
spec:
  queue: research
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - {name: main, image: busybox, resources: {requests: {cpu: "1"}}}
  - name: ps
    replicas: 1
    template:
      spec:
        containers:
        - {name: main, image: busybox, resources: {requests: {cpu: "1"}}}
"""


class Log:
    def __init__(self) -> None:
        self.events: list[RawEvent] = []

    def add(
        self, time: float, type: str, kind: str, namespace: str | None, name: str, **payload: Any
    ) -> None:
        seq = len(self.events) + 1
        self.events.append(
            RawEvent(seq, T0 + time, type, kind, namespace, name, "x", f"e{seq}", "c", None, payload)
        )

    def submit(self, time: float, name: str) -> Job:
        (job,) = load_documents(JOB % name, "job.yaml")
        assert isinstance(job, Job)
        job = default_job(job)
        self.add(time, "JobSubmitted", "job", "team-a", name, object=encode_object(job))
        return job

    def run_pod(self, job: Job, task: int, index: int, start: float, seconds: float) -> None:
        pod = pod_for(job, job.tasks[task], index, created_at=T0 + start)
        self.add(start, "PodCreated", "pod", "team-a", pod.meta.name, object=encode_object(pod))
        self.add(
            start + 1, "PodRunning", "pod", "team-a", pod.meta.name, node="hollow-0", started_at=T0 + start
        )
        finished = T0 + start + seconds
        self.add(
            start + seconds,
            "PodSucceeded",
            "pod",
            "team-a",
            pod.meta.name,
            node="hollow-0",
            finished_at=finished,
        )


def recorded_log() -> Log:
    log = Log()
    (node,) = load_documents(NODE, "node.yaml")
    log.add(-100, "NodeRegistered", "node", None, "hollow-0", object=encode_object(node))
    (queue,) = load_documents(QUEUE, "queue.yaml")
    log.add(-50, "QueueApplied", "queue", None, "research", object=encode_object(queue))
    first = log.submit(0, "train")
    log.run_pod(first, 0, 0, 2, 10)
    log.run_pod(first, 0, 1, 2, 14)
    second = log.submit(30.5, "eval")  # its pods never succeed: its run time stays as written
    log.add(31, "PodRunning", "pod", "team-a", "eval-worker-0", node="hollow-0")
    log.add(40, "JobDeleted", "job", "team-a", "train")
    log.submit(45, "train")  # the same name again, after the deletion: a second arrival
    assert second.meta.name == "eval"
    return log


def by_name(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def test_the_log_becomes_nodes_queues_and_jobs_with_arrival_and_run_times() -> None:
    docs = recorded_workload(recorded_log().events)
    assert [f"{d['kind']}/{d['metadata']['name']}" for d in docs] == [
        "Node/hollow-0",
        "Queue/research",
        "Job/train",
        "Job/eval",
        "Job/train-2",
    ]
    found = by_name(docs)
    node = found["Node/hollow-0"]
    assert node["status"] == {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
    }
    assert "uid" not in node["metadata"] and node["metadata"]["labels"] == {"zone": "a"}
    train = found["Job/train"]
    assert (
        "status" not in train
        and "uid" not in train["metadata"]
        and "creationTimestamp" not in train["metadata"]
    )
    assert train["metadata"]["annotations"] == {
        "lahar.dev/sim-duration": "60s",
        "keep": "me",
        "lahar.dev/sim-arrival": "0s",
    }
    worker, ps = train["spec"]["tasks"]
    # the mean of the two workers' observed runs; the ps never ran, so it keeps the job's 60 s
    assert worker["template"]["metadata"]["annotations"] == {"lahar.dev/sim-duration": "12s"}
    assert "annotations" not in ps["template"].get("metadata", {})
    assert found["Job/eval"]["metadata"]["annotations"]["lahar.dev/sim-arrival"] == "30.5s"
    assert found["Job/train-2"]["metadata"]["annotations"]["lahar.dev/sim-arrival"] == "45s"


def test_since_keeps_the_recent_workload_and_every_setting() -> None:
    docs = recorded_workload(recorded_log().events, since=T0 + 30)
    assert [f"{d['kind']}/{d['metadata']['name']}" for d in docs] == [
        "Node/hollow-0",
        "Queue/research",
        "Job/eval",
        "Job/train",
    ]
    # arrivals count from the first kept one; a first "train" inside the window keeps its name
    assert [d["metadata"]["annotations"]["lahar.dev/sim-arrival"] for d in docs[2:]] == ["0s", "14.5s"]


def test_a_deleted_queue_the_workload_ran_in_is_kept_and_others_are_not() -> None:
    log = recorded_log()
    log.add(50, "QueueDeleted", "queue", None, "research")
    (other,) = load_documents(QUEUE.replace("research", "unused"), "queue.yaml")
    log.add(51, "QueueApplied", "queue", None, "unused", object=encode_object(other))
    log.add(52, "QueueDeleted", "queue", None, "unused")
    kinds = [f"{d['kind']}/{d['metadata']['name']}" for d in recorded_workload(log.events)]
    assert "Queue/research" in kinds and "Queue/unused" not in kinds


def test_the_export_reads_back_and_replays_in_the_simulator() -> None:
    text = yaml.safe_dump_all(recorded_workload(recorded_log().events), sort_keys=False)
    objects = load_documents(text, "recorded.yaml")
    run = simulate(objects, default_conf(), until_idle=True)
    assert run.outcome == "idle"
    submits = {key: record.submit_time for key, record in run.world.jobs.items()}
    assert submits == {"team-a/train": 0.0, "team-a/eval": 30.5, "team-a/train-2": 45.0}
