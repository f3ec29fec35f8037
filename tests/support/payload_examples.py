"""One realistic payload per catalogued event type, as its writer would write it: what the schema tests
round-trip through the checked-in JSON Schemas. A type added to contracts/events.py needs an example here
(tests/unit/contracts/test_schemas_events.py fails until it has one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import msgspec

from contracts import payloads
from contracts.bundles import BUNDLE_OF, POD_BUNDLE_OF, BundledEvent, EventBundle
from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from contracts.objects import Job, ObjectMeta
from contracts.objects_flow import (
    CronJob,
    Flow,
    FlowDependsOn,
    FlowProbe,
    JobFlow,
    JobTemplate,
    TaskStatusProbe,
)
from contracts.parse import load_documents
from contracts.typed_events import encode_payload
from support.builders import hypernode, node, pod, podgroup, priority_class, queue

_JOB_MANIFEST = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: default}
spec:
  minAvailable: 2
  queue: default
  maxRetry: 2
  policies: [{event: PodEvicted, action: RestartJob}]
  plugins: {ssh: [], svc: []}
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: main
              image: busybox
              command: [sh, -c, "echo hello"]
              resources: {requests: {cpu: 500m, memory: 64Mi}}
"""


def _job() -> Job:
    (job,) = load_documents(_JOB_MANIFEST, "train.yaml")
    assert isinstance(job, Job)
    return job


def _cronjob() -> CronJob:
    job = _job()
    template = replace(job, meta=replace(job.meta, name=""))
    return CronJob(
        meta=ObjectMeta("nightly", uid="5d1e", creation_timestamp=1_700_000_000.0),
        schedule="0 2 * * *",
        job_template=template,
        time_zone="Europe/Berlin",
        concurrency_policy="Forbid",
        starting_deadline_seconds=300,
    )


def _template() -> JobTemplate:
    job = _job()
    return JobTemplate(
        meta=replace(job.meta, name="prepare"), spec=replace(job, meta=replace(job.meta, name="prepare"))
    )


def _jobflow() -> JobFlow:
    return JobFlow(
        meta=ObjectMeta("pipeline", uid="7a2c"),
        flows=(
            Flow("prepare"),
            Flow(
                "train",
                FlowDependsOn(
                    ("prepare",),
                    FlowProbe(task_status_list=(TaskStatusProbe(task_name="worker", phase="Succeeded"),)),
                ),
            ),
        ),
        job_retain_policy="delete",
    )


_PLAN = "3b0e4f5a-8d61-5c2e-9a47-0f1d2c3b4a59"
_NODE = node("node-1", cpu=8, memory="32Gi", gpu=2, labels={"topology.kubernetes.io/zone": "a"})
_POD = pod("train-worker-0", "train", role="worker", cpu="500m", memory="64Mi", node_name="node-1")
_PODGROUP = podgroup("train", min_member=2, min_task_member={"worker": 2})
_CONDITION = payloads.PodGroupConditionPayload(
    type="Unschedulable",
    status="True",
    transition_id="8f2b",
    last_transition_time=1_700_000_010.5,
    reason="NotEnoughResources",
    message="2/2 tasks in gang unschedulable: 3 nodes: insufficient cpu",
)

EXAMPLES: Mapping[str, payloads.Payload] = {
    # admission
    "JobSubmitted": payloads.JobSubmitted(object=encode_object(_job())),
    "JobUpdated": payloads.JobUpdated(object=encode_object(_job())),
    "JobDeleted": payloads.Empty(),
    "JobSecretCreated": payloads.JobSecretCreated(
        name="train-ssh",
        uid="default-train",
        data={"id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n...", "id_rsa.pub": "ssh-ed25519 AAAA..."},
    ),
    "PodSubmitted": payloads.PodSubmitted(
        object=encode_object(pod("hello", cpu="100m")),
        podgroup=encode_object(podgroup("podgroup-default-hello", min_member=1)),
    ),
    "PodWithdrawn": payloads.Empty(),
    "PodGroupSubmitted": payloads.PodGroupSubmitted(object=encode_object(_PODGROUP)),
    "PodGroupWithdrawn": payloads.Empty(),
    "QueueApplied": payloads.QueueApplied(object=encode_object(queue("research", 3))),
    "QueueDeleted": payloads.Empty(),
    "PriorityClassApplied": payloads.PriorityClassApplied(object=encode_object(priority_class("high", 1000))),
    "PriorityClassDeleted": payloads.Empty(),
    "HyperNodeApplied": payloads.HyperNodeApplied(
        object=encode_object(hypernode("rack-1", 1, nodes=["node-1", "node-2"]))
    ),
    "HyperNodeDeleted": payloads.Empty(),
    "CronJobApplied": payloads.CronJobApplied(object=encode_object(_cronjob())),
    "CronJobDeleted": payloads.Empty(),
    "JobTemplateApplied": payloads.JobTemplateApplied(object=encode_object(_template())),
    "JobTemplateDeleted": payloads.Empty(),
    "JobFlowApplied": payloads.JobFlowApplied(object=encode_object(_jobflow())),
    "JobFlowDeleted": payloads.Empty(),
    "CommandIssued": payloads.CommandIssued(action="AbortJob", target_kind="Job", target="default/train"),
    "TenantApplied": payloads.TenantApplied(
        name="team-a", public_keys=("UA" + "A" * 54,), namespaces=("team-a",), queues=("qa",)
    ),
    "TenantDeleted": payloads.Empty(),
    "ManifestRejected": payloads.ManifestRejected(
        source="lahar.intake.job.default.train#42",
        errors=(
            payloads.RejectedField(
                document="lahar.intake.job.default.train#42#1 (Job default/train)",
                path="spec.queue",
                message="unable to find job queue 'nowhere'",
            ),
        ),
    ),
    # job-controller
    "PodGroupCreated": payloads.PodGroupCreated(object=encode_object(_PODGROUP)),
    "PodGroupDeleted": payloads.Empty(),
    "PodCreated": payloads.PodCreated(object=encode_object(_POD)),
    "PodDeletionRequested": payloads.PodDeletionRequested(reason="RestartJob", node="node-1"),
    "JobStatusChanged": payloads.JobStatusChanged(
        phase="Restarting",
        counts={"running": 1, "failed": 1},
        task_status_count={"worker": {"Running": 1, "Failed": 1}},
        min_available=2,
        retry_count=1,
        version=1,
        restart=(payloads.RestartTarget(action="RestartJob"),),
        handled=("RestartJob",),
        last_transition_time=1_700_000_020.0,
        conditions=(
            payloads.JobCondition(status="Running", last_transition_time=1_700_000_005.0),
            payloads.JobCondition(status="Restarting", last_transition_time=1_700_000_020.0),
        ),
    ),
    "JobCleanedUp": payloads.JobCleanedUp(incarnation=1),
    # queue-controller
    "QueueStateChanged": payloads.QueueStateChanged(state="Closing"),
    # binder
    "PodBound": payloads.PodBound(node="node-1", plan=_PLAN),
    "PodEvicting": payloads.PodEvicting(
        node="node-1", reason="preempt: for default/high-0 (job default/high, priority 100)", plan=_PLAN
    ),
    "PodNominated": payloads.PodNominated(
        node="node-1", reason="preempt: evicting default/low-0 on node-1", plan=_PLAN
    ),
    "PodGroupStatusChanged": payloads.PodGroupStatusChanged(
        phase="Pending", conditions=(_CONDITION,), running=0, succeeded=0, failed=0, plan=_PLAN
    ),
    "PlanRejected": payloads.PlanRejected(
        reason="node-1 has 500m cpu free, the plan needs 1",
        checked_seq=1042,
        plan=_PLAN,
        replica="scheduler-0",
    ),
    "NodeNotReady": payloads.NodeNotReady(last_heartbeat=1_700_000_000.25),
    "NodeReady": payloads.Empty(),
    "PodLost": payloads.PodLost(node="node-1", reason="NodeLost"),
    # node agent
    "NodeRegistered": payloads.NodeRegistered(object=encode_object(_NODE)),
    "PodRunning": payloads.PodRunning(node="node-1", started_at=1_700_000_030.0),
    "PodSucceeded": payloads.PodSucceeded(node="node-1", exit_code=0, finished_at=1_700_000_090.0),
    "PodFailed": payloads.PodFailed(
        node="node-1", exit_code=137, reason="OOMKilled", message="exceeded 64Mi", finished_at=1_700_000_050.0
    ),
    "PodTerminated": payloads.PodTerminated(node="node-1", reason="Evicted", finished_at=1_700_000_060.0),
}


def _renamed(plain: dict[str, Any], name: str) -> dict[str, Any]:
    """A payload that carries an object (PodGroupCreated), about an object of that name instead."""
    if "object" not in plain:
        return plain
    carried = plain["object"]
    meta = dict(carried["object"]["meta"], name=name)
    return dict(plain, object=dict(carried, object=dict(carried["object"], meta=meta)))


def _bundle(item_type: str) -> EventBundle:
    """Two events of item_type, the second with its own cause: about train's pods, or (an object bundle)
    about two jobs' objects, the second naming its own job. Each payload as it reads back from the wire
    (lists, not tuples)."""
    plain = msgspec.msgpack.decode(msgspec.msgpack.encode(encode_payload(EXAMPLES[item_type])))
    if item_type in POD_BUNDLE_OF.values():
        names, job = ("train-worker-0", "train-worker-1"), None
        pod = replace(_POD, meta=replace(_POD.meta, name=names[1]))
        second = dict(plain, object=encode_object(pod)) if item_type == "PodCreated" else plain
    else:
        names, job = ("train", "serve"), "default/serve"
        second = _renamed(plain, names[1])
    return EventBundle(
        events=(
            BundledEvent(name=names[0], id="8c1f7a52-3c1e-5b7e-9f0a-1d2e3f4a5b6c", payload=plain),
            BundledEvent(
                name=names[1],
                id="9d2a8b63-4d2f-5c8f-8a1b-2e3f4a5b6c7d",
                payload=second,
                causation_id="0e3b9c74-5e3a-5d9a-9b2c-3f4a5b6c7d8e",
                correlation_id=job,
            ),
        ),
        item_version=EVENT_TYPES[item_type].version,
    )


EXAMPLES = {**EXAMPLES, **{bundle: _bundle(item) for bundle, item in BUNDLE_OF.items()}}
