"""The Kubernetes-shaped reads of `lahar` as a user runs them (tests/integration/cli_harness.py): -o json
as kubectl prints it, -l selectors on get and job list, vcctl's pod list, and describe (job view's
Events too) reading the read model and the event log."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from dataclasses import replace

import pytest
from cli_harness import Cli, store

from contracts.objects import (
    Job,
    JobState,
    JobStatus,
    Node,
    ObjectMeta,
    PodGroupCondition,
    PodGroupStatus,
    PodStatus,
    Queue,
    frozen_map,
)
from contracts.parse import parse_object
from contracts.resources import Resources
from services.job_controller.core.expand import pod_for, podgroup_for
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.subjects import event_subject
from shared.store.etcd import Etcd

pytestmark = pytest.mark.slow  # one CLI process per command

TRAIN = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "default", "labels": {"volcano.sh/job-type": "Train"}},
    "spec": {
        "minAvailable": 2,
        "queue": "research",
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
            }
        ],
    },
}


def job(name: str, labels: dict[str, str], phase: str) -> Job:
    parsed = parse_object(TRAIN, "test")
    assert isinstance(parsed, Job)
    meta = ObjectMeta(name, "default", uid=f"uid-{name}", labels=frozen_map(labels), creation_timestamp=1e9)
    return replace(parsed, meta=meta, status=JobStatus(state=JobState(phase=phase)))


async def test_json_is_kubernetes_shaped_and_selectors_choose_what_is_listed(cli: Cli, etcd: Etcd) -> None:
    train = job("train", {"volcano.sh/job-type": "Train"}, "Running")
    serve = job("serve", {"volcano.sh/job-type": "Serve", "team": "x"}, "Pending")
    await store(etcd, train, seq=1)
    await store(etcd, serve, seq=2)
    for index, phase in enumerate(("Running", "Pending")):
        pod = pod_for(train, train.tasks[0], index, created_at=1e9)
        await store(etcd, replace(pod, status=PodStatus(phase=phase)), seq=3 + index)

    listing = await cli.json("get", "jobs", "-o", "json")
    assert [item["metadata"]["name"] for item in listing["items"]] == [
        "serve",
        "train",
    ]  # jq .items[].metadata.name
    one = await cli.json("get", "job", "train", "-o", "json")
    assert one["apiVersion"] == "batch.volcano.sh/v1alpha1" and one["spec"]["minAvailable"] == 2
    assert one["metadata"]["creationTimestamp"] == "2001-09-09T01:46:40Z"
    chosen = await cli.json("get", "jobs", "-l", "volcano.sh/job-type=Train", "-o", "json")
    assert [item["metadata"]["name"] for item in chosen["items"]] == ["train"]
    code, out, _ = await cli("get", "vcjob", "-l", "volcano.sh/job-type notin (Train),team")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["NAME", "serve"]
    code, _, err = await cli("get", "jobs", "-l", "team in x")
    assert code == 2 and "selector 'team in x': at 'x' (character 9): expected '(' after 'in'" in err

    code, out, _ = await cli("job", "list", "-l", "team=x")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["Name", "serve"]

    code, out, _ = await cli("pod", "list")
    assert code == 0 and [line.split() for line in out.splitlines()] == [
        ["Name", "Ready", "Status", "Restart", "Age"],
        ["train-worker-0", "1/1", "Running", "0", out.splitlines()[1].split()[-1]],
        ["train-worker-1", "0/1", "Pending", "0", out.splitlines()[2].split()[-1]],
    ]
    pods = await cli.json("pod", "list", "-j", "train", "-l", "volcano.sh/task-index=1", "-o", "json")
    assert [item["metadata"]["name"] for item in pods["items"]] == ["train-worker-1"]
    code, _, err = await cli("pod", "list", "-j", "train", "-q", "elsewhere")
    assert code == 1 and "job train is not in queue elsewhere" in err
    code, out, err = await cli("pod", "list", "-q", "elsewhere")
    assert (code, out, err.strip()) == (0, "", "No resources found.")


WHY = "2/2 tasks in gang unschedulable: 1 node: insufficient nvidia.com/gpu"


async def test_describe_and_job_view_say_why_a_job_waits(cli: Cli, bus: Bus, etcd: Etcd) -> None:
    waiting = job("gpu", {}, "Pending")
    condition = PodGroupCondition("Unschedulable", "True", reason="NotEnoughResources", message=WHY)
    group = replace(podgroup_for(waiting), status=PodGroupStatus("Pending", (condition,)))
    node = Node(ObjectMeta("n1", ""), allocatable=Resources.parse({"cpu": "4", "memory": "8Gi"}))
    pod = replace(pod_for(waiting, waiting.tasks[0], 0, created_at=1e9), status=PodStatus(phase="Pending"))
    for seq, obj in enumerate((waiting, group, node, pod, Queue(ObjectMeta("research", ""))), start=1):
        await store(etcd, obj, seq=seq)
    # as the binder commits statuses: several PodGroups' in one object bundle (contracts/bundles.py)
    statuses = [
        {
            "name": group_name,
            "id": str(uuid.uuid4()),
            "correlation_id": f"default/{group_name}",
            "payload": {
                "phase": "Pending",
                "conditions": [{"type": "Unschedulable", "status": "True", "message": message}],
            },
        }
        for group_name, message in (("gpu", WHY), ("other", "not this one's"))
    ]
    status = Envelope.create(
        "PodGroupStatusesChanged",
        time=time.time() - 5,
        producer="binder",
        correlation_id="default/gpu",
        payload={"events": statuses},
    )
    await bus.publish(status, event_subject("objects", "default", "all", status.type, status.producer))

    code, out, _ = await cli("describe", "vcjob", "gpu")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["Name:", "gpu"]
    assert ["Queue:", "research", "(Open)"] in [line.split() for line in lines]
    assert any(line.strip().startswith("Unschedulable") and line.endswith(WHY) for line in lines)
    assert lines[-1].split()[:4] == ["Warning", "Unschedulable", lines[-1].split()[2], "binder"]
    assert lines[-1].endswith(f"podgroup/gpu: {WHY}")

    code, out, _ = await cli("job", "view", "-N", "gpu")
    assert code == 0 and "Events:" in out and out.splitlines()[-1].endswith(f"podgroup/gpu: {WHY}")

    code, out, _ = await cli("describe", "pg", "gpu")
    assert code == 0 and out.splitlines()[-1].endswith(WHY) and "podgroup/gpu" not in out.splitlines()[-1]
    assert "not this one's" not in out  # the other PodGroup's status in the same bundle
    code, out, _ = await cli("describe", "pod", "gpu-worker-0")
    assert code == 0 and "PodGroup Conditions (gpu, Pending):" in out and out.endswith("Events:  <none>\n")
    code, out, _ = await cli("describe", "node", "n1")
    assert code == 0 and "Non-terminated Pods:  (0 in total)" in out  # the pending pod is on no node
    code, out, _ = await cli("describe", "queue", "research")
    assert code == 0 and ["State:", "Open"] in [line.split() for line in out.splitlines()]

    code, _, err = await cli("describe", "job", "ghost")
    assert code == 1 and 'job "ghost" not found' in err
    code, _, err = await cli("describe", "priorityclass", "high")
    assert code == 2 and "priorityclass is not described" in err


async def test_a_watch_with_a_selector_follows_what_matches(cli: Cli, etcd: Etcd) -> None:
    await store(etcd, job("serve", {"team": "x"}, "Pending"), seq=1)
    await store(etcd, job("train", {"team": "y"}, "Pending"), seq=2)
    proc = await cli.start("get", "jobs", "-w", "-l", "team=x", "-o", "json")
    assert proc.stdout is not None

    async def next_change() -> tuple[str, str, str]:
        change = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        obj = change["object"]
        return change["type"], obj["metadata"]["name"], obj["status"]["state"]["phase"]

    try:
        assert await next_change() == ("ADDED", "serve", "Pending")
        await store(etcd, job("train", {"team": "y"}, "Running"), seq=3)  # not selected: nothing shown
        await store(etcd, job("serve", {"team": "x"}, "Running"), seq=4)
        assert await next_change() == ("MODIFIED", "serve", "Running")
        await store(etcd, job("serve", {"team": "z"}, "Running"), seq=5)  # no longer selected
        assert await next_change() == ("DELETED", "serve", "Running")
        await store(etcd, job("train", {"team": "x"}, "Running"), seq=6)  # selected from now on
        assert await next_change() == ("ADDED", "train", "Running")
    finally:
        proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0


async def test_describe_pod_shows_the_events_its_jobs_bundles_carry(cli: Cli, bus: Bus, etcd: Etcd) -> None:
    running = job("bundled", {}, "Running")
    pod = replace(pod_for(running, running.tasks[0], 0, created_at=1e9), status=PodStatus(phase="Pending"))
    await store(etcd, pod, seq=1)
    for job_name, pods, node in (
        ("bundled", ("bundled-worker-0", "bundled-worker-1"), "n1"),
        ("other", (pod.meta.name,), "n9"),
    ):
        events = [
            {"name": name, "id": str(uuid.uuid4()), "payload": {"node": node, "plan": "p"}} for name in pods
        ]
        if len(events) == 1:  # the same pod name in another job's bundle: not this pod's
            events.append(
                {"name": "other-worker-1", "id": str(uuid.uuid4()), "payload": {"node": node, "plan": "p"}}
            )
        bundle = Envelope.create(
            "PodsBound",
            time=time.time() - 5,
            producer="binder",
            correlation_id=f"default/{job_name}",
            payload={"events": events},
        )
        await bus.publish(bundle, event_subject("pods", "default", job_name, "PodsBound", "binder"))

    code, out, _ = await cli("describe", "pod", pod.meta.name)
    assert code == 0, out
    rows = [line for line in out.splitlines() if "Scheduled" in line]
    assert len(rows) == 1 and rows[0].endswith(f"Successfully assigned default/{pod.meta.name} to n1")
