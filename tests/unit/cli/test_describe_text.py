"""`lahar describe` and job view's Events (services/cli/describe_text.py, describe_node.py, event_rows.py):
kubectl's layout, the reason a pending job waits, a node's allocation, and lahar's events as Kubernetes
Event rows, as pure functions of the objects and events read."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from contracts.bundles import BUNDLE_OF
from contracts.events import EVENT_TYPES
from contracts.objects import (
    Container,
    Job,
    Node,
    ObjectMeta,
    Pod,
    PodGroup,
    PodGroupCondition,
    PodGroupStatus,
    PodSpec,
    PodStatus,
    Queue,
    QueueStatus,
)
from contracts.parse import load_files
from contracts.resources import Resources
from services.cli import event_rows
from services.cli.describe_node import describe_node
from services.cli.describe_text import describe_job, describe_pod, describe_podgroup, describe_queue
from services.cli.event_rows import MOST_ROWS, event_row, events_section
from shared.client_reads import HistoryEntry

NOW = 1_700_000_600.0
EVERY_FIELD = Path(__file__).resolve().parents[1] / "contracts" / "every_field.yaml"
WHY = "3/3 tasks in gang unschedulable: 20 nodes: insufficient nvidia.com/gpu"


def event(
    seq: int, type: str, kind: str, name: str, payload: dict[str, Any], producer: str = "binder"
) -> HistoryEntry:
    return HistoryEntry(seq, NOW - 60 + seq, type, kind, "default", name, producer, f"id{seq}", "", payload)


def unschedulable(message: str = WHY, reason: str = "NotEnoughResources") -> dict[str, Any]:
    condition = {"type": "Unschedulable", "status": "True", "reason": reason, "message": message}
    return {"phase": "Pending", "conditions": [condition]}


def test_every_event_type_has_a_row_of_its_own() -> None:
    described = set(event_rows._MESSAGES) | {"PodGroupStatusChanged", "PodBound"}
    # a bundle is never a row: every reader of the log unpacks it into its events first
    assert set(EVENT_TYPES) - described - set(BUNDLE_OF) == set()


@pytest.mark.parametrize(
    ("entry", "cells"),
    [
        (
            event(1, "PodGroupStatusChanged", "podgroup", "gpu", unschedulable()),
            ("Warning", "Unschedulable", "binder", WHY),
        ),
        (  # the scheduler's pending reason, where it gives one, is the row's reason
            event(
                1, "PodGroupStatusChanged", "podgroup", "gpu", unschedulable(reason="InsufficientQueueQuota")
            ),
            ("Warning", "InsufficientQueueQuota", "binder", WHY),
        ),
        (
            event(2, "PodGroupStatusChanged", "podgroup", "gpu", {"phase": "Inqueue", "conditions": []}),
            ("Normal", "PodGroupStatusChanged", "binder", "podgroup Inqueue"),
        ),
        (
            event(3, "PodBound", "pod", "gpu-w-0", {"node": "n1", "plan": "p"}),
            ("Normal", "Scheduled", "binder", "Successfully assigned default/gpu-w-0 to n1"),
        ),
        (
            event(4, "PodFailed", "pod", "gpu-w-0", {"node": "n1", "exit_code": 2}, "node-agent"),
            ("Warning", "Failed", "node-agent", "failed on n1: exit code 2"),
        ),
        (
            event(
                5,
                "JobStatusChanged",
                "job",
                "gpu",
                {"phase": "Restarting", "retry_count": 1},
                "job-controller",
            ),
            ("Normal", "JobStatusChanged", "job-controller", "job Restarting (retry 1)"),
        ),
        (
            event(
                6,
                "CommandIssued",
                "command",
                "c1",
                {"action": "AbortJob", "target_kind": "Job", "target": "a/b"},
            ),
            ("Normal", "CommandIssued", "binder", "AbortJob issued for Job a/b"),
        ),
    ],
)
def test_lahars_events_as_kubernetes_event_rows(entry: HistoryEntry, cells: tuple[str, ...]) -> None:
    row = event_row(entry, NOW, about=entry.object)
    assert (row.type, row.reason, row.source, row.message) == cells
    assert row.age == f"{60 - entry.seq}s"


def test_a_row_about_another_object_names_it() -> None:
    row = event_row(event(3, "PodBound", "pod", "gpu-w-0", {"node": "n1", "plan": "p"}), NOW, about="job/gpu")
    assert row.message == "pod/gpu-w-0: Successfully assigned default/gpu-w-0 to n1"


def test_the_events_section_is_kubectls_and_shows_the_newest() -> None:
    assert events_section([], NOW) == "Events:  <none>"
    many = [event(i, "PodCreated", "pod", f"p{i}", {}, "job-controller") for i in range(MOST_ROWS + 5)]
    lines = events_section(many, NOW, about="job/x", command="lahar events x").splitlines()
    assert lines[:2] == ["Events:", "  (5 earlier events not shown; lahar events x shows them all)"]
    assert lines[2].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert lines[3].split() == ["----", "------", "---", "----", "-------"]
    assert len(lines) == 4 + MOST_ROWS and "pod/p5: pod created" in lines[4]  # oldest shown first


def gpu_job() -> tuple[Job, PodGroup, Queue]:
    spec = PodSpec(
        containers=(Container("main", image="cuda", requests=Resources.parse({"nvidia.com/gpu": "1"})),)
    )
    job = load_files([Path(__file__).resolve().parents[3] / "examples" / "gang-job.yaml"])[0]
    assert isinstance(job, Job)
    task = replace(job.tasks[0], template=replace(job.tasks[0].template, spec=spec))
    job = replace(job, meta=replace(job.meta, name="gpu", creation_timestamp=NOW - 120), tasks=(task,))
    condition = PodGroupCondition("Unschedulable", "True", reason="NotEnoughResources", message=WHY)
    podgroup = PodGroup(ObjectMeta("gpu"), min_member=3, status=PodGroupStatus("Pending", (condition,)))
    return job, podgroup, Queue(ObjectMeta("default", ""), status=QueueStatus(state="Open"))


def test_a_pending_job_says_why_it_waits() -> None:
    job, podgroup, queue = gpu_job()
    history = [event(1, "PodGroupStatusChanged", "podgroup", "gpu", unschedulable())]
    text = describe_job(job, podgroup, queue, history, NOW)
    lines = text.splitlines()
    assert lines[0].split() == ["Name:", "gpu"] and lines[1].split() == ["Namespace:", "default"]
    assert next(line for line in lines if line.startswith("Queue:")).split() == [
        "Queue:",
        "default",
        "(Open)",
    ]
    assert "Phase:    Pending" in text and "PodGroup:  gpu (Pending)" in text
    condition = next(line for line in lines if line.strip().startswith("Unschedulable"))
    assert condition.split()[:3] == ["Unschedulable", "True", "NotEnoughResources"] and condition.endswith(
        WHY
    )
    assert lines[-1].split()[:2] == ["Warning", "Unschedulable"] and lines[-1].endswith(
        f"podgroup/gpu: {WHY}"
    )
    closed = replace(queue, status=QueueStatus(state="Closed"))
    assert "default (Closed: the queue takes no new jobs)" in describe_job(job, podgroup, closed, [], NOW)
    assert "PodGroup:  <none> (not created yet)" in describe_job(job, None, None, [], NOW)


def test_a_pending_pod_shows_its_gangs_conditions() -> None:
    _, podgroup, queue = gpu_job()
    pod = Pod(ObjectMeta("gpu-w-0", annotations={"scheduling.k8s.io/group-name": "gpu"}))
    text = describe_pod(pod, podgroup, [], NOW)
    assert "PodGroup Conditions (gpu, Pending):" in text and WHY in text
    running = replace(pod, status=PodStatus(phase="Running"))
    assert WHY not in describe_pod(running, podgroup, [], NOW)
    assert describe_podgroup(podgroup, queue, [], NOW).splitlines()[-1] == "Events:  <none>"
    assert ["State:", "Open"] in [line.split() for line in describe_queue(queue, [], NOW).splitlines()]


def test_a_node_shows_its_pods_and_what_they_take_of_it() -> None:
    node = Node(
        ObjectMeta("n1", ""), allocatable=Resources.parse({"cpu": "4", "memory": "8Gi", "pods": "110"})
    )
    node = replace(node, capacity=node.allocatable)
    requests = Resources.parse({"cpu": "1", "memory": "2Gi"})
    limits = Resources.parse({"cpu": "2", "memory": "2Gi"})
    spec = PodSpec(containers=(Container("c", requests=requests, limits=limits),), node_name="n1")
    pods = [
        Pod(ObjectMeta("a"), spec, PodStatus(phase="Running")),
        Pod(ObjectMeta("b"), spec, PodStatus(phase="Succeeded")),  # finished: not counted
        Pod(ObjectMeta("c"), replace(spec, node_name="n2"), PodStatus(phase="Running")),
    ]
    lines = describe_node(node, pods, [], NOW).splitlines()
    assert "Non-terminated Pods:  (1 in total)" in lines
    row = next(line for line in lines if line.strip().startswith("default"))
    assert row.split() == [
        "default",
        "a",
        "1",
        "(25%)",
        "2",
        "(50%)",
        "2Gi",
        "(25%)",
        "2Gi",
        "(25%)",
        "<unknown>",
    ]
    cpu = next(line for line in lines if line.strip().startswith("cpu ") and "%" in line)
    assert cpu.split() == ["cpu", "1", "(25%)", "2", "(50%)"]


def test_every_kind_describes_from_the_every_field_manifest() -> None:
    node, pod, _, podgroup, queue, _, job, _ = load_files([EVERY_FIELD])
    assert isinstance(job, Job) and isinstance(podgroup, PodGroup) and isinstance(queue, Queue)
    assert isinstance(pod, Pod) and isinstance(node, Node)
    for text in (
        describe_job(job, podgroup, queue, [], NOW),
        describe_podgroup(podgroup, queue, [], NOW),
        describe_pod(pod, podgroup, [], NOW),
        describe_queue(queue, [], NOW),
        describe_node(node, [pod], [], NOW),
    ):
        assert text.startswith("Name:") and text.endswith("Events:  <none>")


def test_a_pod_with_room_reserved_shows_its_nominated_node() -> None:
    _, podgroup, _ = gpu_job()
    pod = Pod(ObjectMeta("gpu-w-0"), status=PodStatus(nominated_node_name="n2"))
    assert ["Nominated", "Node:", "n2"] in [
        line.split() for line in describe_pod(pod, podgroup, [], NOW).splitlines()
    ]
    assert "Nominated Node" not in describe_pod(replace(pod, status=PodStatus()), podgroup, [], NOW)
