"""The job-controller's read model: which objects an event marks dirty, and the Job, PodGroup and Pod
values rendered from the state (spec and status), across a checkpoint too."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contracts import codec
from contracts.known_fields import unknown_manifest_fields
from contracts.kube_shape import kube_object
from contracts.objects import Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec
from contracts.resources import Resources
from services.job_controller.core.projection import ObjectKey, Projected, ProjectedCore
from shared.runner_types import Event

NS = "team-a"
PODS = ("train-ps-0", "train-worker-0", "train-worker-1")


def train() -> Job:
    template = PodTemplate(spec=PodSpec(containers=(Container("c", requests=Resources.parse({"cpu": "1"})),)))
    tasks = (TaskSpec("ps", 1, template=template), TaskSpec("worker", 2, template=template))
    return Job(ObjectMeta("train", NS, uid="uid-train", creation_timestamp=1.0), tasks)


class Log:
    """A miniature log: events get increasing seqs and are folded; settle() writes back what reconcile
    asks for until nothing is left."""

    def __init__(self) -> None:
        self.core = ProjectedCore()
        self.state: Projected = self.core.initial()
        self.seq = 0

    def add(self, type: str, kind: str, name: str, payload: Any = None, *, id: str = "") -> Event:
        self.seq += 1
        event = Event(
            seq=self.seq,
            type=type,
            kind=kind,
            namespace=NS,
            name=name,
            payload=payload or {},
            id=id or str(uuid.UUID(int=self.seq)),
            time=float(self.seq),
            correlation_id="test",
        )
        self.state = self.core.apply(self.state, event)
        return event

    def settle(self) -> None:
        for _ in range(10):
            outputs = self.core.reconcile(self.state, 100.0)
            if not outputs:
                return
            for o in outputs:
                self.add(o.type, o.kind, o.name, o.plain_payload, id=o.id)
        raise AssertionError("reconcile does not converge")

    def pods(self, type: str, node: str = "n1", **payload: Any) -> None:
        for pod in PODS:
            self.add(type, "pod", pod, {"node": node, **payload})

    def take_dirty(self) -> dict[ObjectKey, int]:
        dirty = dict(self.state.dirty)
        self.state.dirty.clear()
        return dirty

    def obj(self, kind: str, name: str) -> Any:
        value = self.core.render(self.state, (kind, NS, name))
        return None if value is None else codec.decode_object(value)


def running() -> Log:
    """train submitted, enqueued, its three pods bound to n1 and running."""
    log = Log()
    log.add("JobSubmitted", "job", "train", {"object": codec.encode_object(train())})
    log.settle()
    log.add("PodGroupStatusChanged", "podgroup", "train", {"phase": "Inqueue", "conditions": []})
    log.settle()
    log.pods("PodBound", plan="p1")
    log.pods("PodRunning")
    log.settle()
    return log


def test_each_event_marks_what_it_changed_with_its_seq() -> None:
    log = Log()
    submitted = log.add("JobSubmitted", "job", "train", {"object": codec.encode_object(train())})
    assert log.take_dirty() == {("job", NS, "train"): submitted.seq}  # no PodGroup yet: nothing to delete
    log.settle()
    assert ("podgroup", NS, "train") in log.take_dirty()
    enqueued = log.add("PodGroupStatusChanged", "podgroup", "train", {"phase": "Inqueue", "conditions": []})
    assert log.take_dirty() == {("podgroup", NS, "train"): enqueued.seq}
    log.settle()
    created = log.take_dirty()
    assert {("pod", NS, pod) for pod in PODS} <= set(created)
    bound = log.add("PodBound", "pod", PODS[0], {"node": "n1", "plan": "p1"})
    # a bound pod still counts as Pending: only the pod changed
    assert log.take_dirty() == {("pod", NS, PODS[0]): bound.seq}
    running = log.add("PodRunning", "pod", PODS[0], {"node": "n1"})
    # the pod, and the counts of its job and its PodGroup
    assert log.take_dirty() == {
        ("pod", NS, PODS[0]): running.seq,
        ("podgroup", NS, "train"): running.seq,
        ("job", NS, "train"): running.seq,
    }
    log.add("PodBound", "pod", "someone-else", {"node": "n1", "plan": "p1"})
    log.add("NodeReady", "node", "n1")
    assert log.take_dirty() == {}  # objects the controller does not know


def test_rendered_objects_carry_their_status() -> None:
    log = running()
    job = log.obj("job", "train")
    assert (job.status.state.phase, job.status.running, job.min_available) == ("Running", 3, 3)
    assert job.status.task_status_count == {"ps": {"Running": 1}, "worker": {"Running": 2}}
    pod = log.obj("pod", PODS[1])
    assert (pod.spec.node_name, pod.status.phase, pod.meta.labels["volcano.sh/task-spec"]) == (
        "n1",
        "Running",
        "worker",
    )
    assert pod.status.start_time is not None and pod.meta.deletion_timestamp is None
    podgroup = log.obj("podgroup", "train")
    assert (podgroup.status.phase, podgroup.status.running, podgroup.min_member) == ("Inqueue", 3, 3)


@pytest.mark.parametrize(
    ("type", "payload", "expected"),
    [
        ("PodSucceeded", {"exit_code": 0}, ("Succeeded", 0, "", None)),
        ("PodFailed", {"exit_code": 3, "reason": "Error"}, ("Failed", 3, "Error", None)),
        ("PodEvicting", {"reason": "preempt", "plan": "p2"}, ("Running", None, "", "deleting")),
        ("PodLost", {"reason": "NodeLost"}, None),  # gone with its node (and created again, not shown here)
        ("PodTerminated", {"reason": "Evicted"}, None),
    ],
)
def test_what_the_node_reports_shows_on_the_pod(type: str, payload: dict[str, Any], expected: Any) -> None:
    log = running()
    event = log.add(type, "pod", PODS[0], {"node": "n1", **payload})
    pod = log.obj("pod", PODS[0])
    if expected is None:
        assert pod is None or pod.meta.uid.endswith("-1")  # only its successor can show
        assert f"{NS}/{PODS[0]}" not in log.state.pod_details
        return
    phase, exit_code, reason, deleting = expected
    assert (pod.status.phase, pod.status.exit_code, pod.status.reason) == (phase, exit_code, reason)
    assert pod.meta.deletion_timestamp == (event.time if deleting else None)


def test_an_event_about_another_generation_of_a_pod_changes_nothing() -> None:
    log = running()
    log.add("PodFailed", "pod", PODS[0], {"node": "n2", "exit_code": 1, "reason": "Error"})
    pod = log.obj("pod", PODS[0])
    assert (pod.status.phase, pod.status.exit_code) == ("Running", None)


def test_podgroup_conditions_come_from_the_last_status_change() -> None:
    log = running()
    condition = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "0/1"}
    log.add("PodGroupStatusChanged", "podgroup", "train", {"phase": "Running", "conditions": [condition]})
    podgroup = log.obj("podgroup", "train")
    assert podgroup.status.phase == "Running"
    assert [(c.type, c.reason) for c in podgroup.status.conditions] == [
        ("Unschedulable", "NotEnoughResources")
    ]


def test_a_deleted_job_leaves_the_read_model_with_its_podgroup_and_pods() -> None:
    log = running()
    log.take_dirty()
    log.add("JobDeleted", "job", "train")
    assert log.obj("job", "train") is None and log.obj("podgroup", "train") is not None
    log.settle()  # the pods' deletion is requested
    assert all(log.obj("pod", pod).meta.deletion_timestamp is not None for pod in PODS)
    log.pods("PodTerminated", reason="Deleted")
    log.settle()  # then the PodGroup is removed and the record forgotten
    dirty = log.take_dirty()
    assert {("job", NS, "train"), ("podgroup", NS, "train")} | {("pod", NS, p) for p in PODS} <= set(dirty)
    assert all(log.core.render(log.state, key) is None for key in dirty)
    assert list(log.core.keys(log.state)) == []
    assert log.state.pod_details == {} and log.state.deletion_times == {} and log.state.conditions == {}


def test_keys_are_the_objects_that_exist_and_a_checkpoint_keeps_the_details() -> None:
    log = running()
    log.add("PodFailed", "pod", PODS[0], {"node": "n1", "exit_code": 2, "reason": "Error"})
    log.add("PodEvicting", "pod", PODS[1], {"node": "n1", "reason": "preempt", "plan": "p2"})
    expected = {("job", NS, "train"), ("podgroup", NS, "train")} | {("pod", NS, p) for p in PODS}
    assert set(log.core.keys(log.state)) == expected
    restored = log.core.load(log.core.dump(log.state))
    assert restored.dirty == {}  # not checkpointed: a new leader writes everything
    for key in expected:
        assert log.core.render(restored, key) == log.core.render(log.state, key)


def created() -> Log:
    """train submitted and enqueued: its three pods created, none bound."""
    log = Log()
    log.add("JobSubmitted", "job", "train", {"object": codec.encode_object(train())})
    log.settle()
    log.add("PodGroupStatusChanged", "podgroup", "train", {"phase": "Inqueue", "conditions": []})
    log.settle()
    log.take_dirty()
    return log


def nominated(log: Log, pod: str, node: str) -> Event:
    payload = {"node": node, "reason": "preempt: evicting team-a/low-0", "plan": "p9"}
    return log.add("PodNominated", "pod", pod, payload)


def test_a_nomination_shows_on_the_waiting_pod_until_it_is_bound() -> None:
    log = created()
    event = nominated(log, PODS[0], "n2")
    assert log.take_dirty() == {("pod", NS, PODS[0]): event.seq}  # only the pod: it still counts as Pending
    assert log.obj("pod", PODS[0]).status.nominated_node_name == "n2"
    assert log.obj("pod", PODS[1]).status.nominated_node_name == ""
    restored = log.core.load(log.core.dump(log.state))  # the checkpoint keeps it
    assert log.core.render(restored, ("pod", NS, PODS[0])) == log.core.render(log.state, ("pod", NS, PODS[0]))
    nominated(log, PODS[0], "n3")  # a later preemption moved the room
    assert log.obj("pod", PODS[0]).status.nominated_node_name == "n3"
    log.add("PodBound", "pod", PODS[0], {"node": "n3", "plan": "p10"})
    bound = log.obj("pod", PODS[0])
    assert (bound.spec.node_name, bound.status.nominated_node_name) == ("n3", "")


def test_a_nomination_after_the_bind_or_for_an_unknown_pod_changes_nothing() -> None:
    log = running()
    log.take_dirty()
    before = log.core.render(log.state, ("pod", NS, PODS[0]))
    nominated(log, PODS[0], "n2")  # stale: landed after the pod's PodBound
    nominated(log, "stranger-0", "n2")
    assert log.core.render(log.state, ("pod", NS, PODS[0])) == before
    assert log.obj("pod", "stranger-0") is None


def test_get_pod_prints_the_nomination_as_kubernetes_nominated_node_name() -> None:
    log = created()
    nominated(log, PODS[0], "n2")
    manifest = kube_object(log.obj("pod", PODS[0]))
    assert manifest["status"]["nominatedNodeName"] == "n2"
    assert unknown_manifest_fields(manifest, "pod.yaml") == []  # a field the strict check knows
