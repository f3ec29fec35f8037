"""Plain Pods and PodGroups through admission (no Job): what is accepted, the events that record it, how
the view folds them back, immutability, deletion, and the names a Job and a plain object cannot share."""

from __future__ import annotations

from typing import Any

from admission_manifests import container, job_doc, parse, pod_doc, podgroup_doc, queue_doc, task

from contracts import payloads
from contracts.codec import decode_object
from contracts.errors import FieldError
from contracts.objects import Pod, PodGroup
from contracts.typed_events import encode_payload
from services.admission.context_core import AdmissionViewCore, Plan, View, plan
from services.admission.core.decide import APPLY, CREATE, DELETE, UPDATE, Request
from shared.runner_types import Event

CORE = AdmissionViewCore()
GROUP_NAME = "scheduling.k8s.io/group-name"
OWNER = "owner.lahar.dev/podgroup"


class Cluster:
    """Admission's view with every accepted request's events folded back, as the service does."""

    def __init__(self) -> None:
        self.view: View = CORE.initial()
        self.requests = 0

    def submit(self, *requests: Request) -> Plan:
        self.requests += 1
        decided = plan(requests, self.view, f"req-{self.requests}", float(self.requests))
        for write in decided.writes:
            seq = self.view.seq + 1
            payload = encode_payload(write.emit.payload)
            event = Event(
                seq,
                write.emit.type,
                write.kind,
                write.namespace,
                write.name,
                payload,
                f"e{seq}",
                1.0,
                "",
                producer=CORE.name,
            )
            self.view = CORE.apply(self.view, event)
        return decided

    def apply(self, *docs: dict[str, Any], operation: str = APPLY) -> Plan:
        return self.submit(*(Request(operation, parse(doc)) for doc in docs))

    def delete(self, kind: str, name: str) -> Plan:
        return self.submit(Request(DELETE, kind=kind, name=name, namespace="default"))


def errors(decided: Plan) -> list[tuple[str, str]]:
    assert not decided.accepted and not decided.writes
    return [(e.path, e.message) for e in decided.errors]


def only(decided: Plan) -> tuple[str, payloads.Payload]:
    assert decided.accepted, decided.errors
    ((write),) = decided.writes
    return write.emit.type, write.emit.payload


def test_a_plain_pod_is_submitted_with_a_podgroup_of_its_own() -> None:
    cluster = Cluster()
    event_type, payload = only(
        cluster.apply(pod_doc("p", annotations={"scheduling.volcano.sh/group-min-member": "1"}))
    )
    assert event_type == "PodSubmitted"
    assert isinstance(payload, payloads.PodSubmitted) and payload.podgroup is not None
    pod, group = payload.decoded(), decode_object(payload.podgroup)
    assert isinstance(pod, Pod) and isinstance(group, PodGroup)
    assert pod.meta.uid and group.meta.name == f"podgroup-{pod.meta.uid}"
    assert pod.meta.annotations[GROUP_NAME] == group.meta.name
    assert group.meta.annotations[OWNER] == "Pod/p" and group.queue == "default"
    assert pod.status.phase == "Pending" and group.status.phase == "Pending"
    context = cluster.view.context()
    assert context.plain_pods == {"default/p": pod}
    assert context.podgroups == {f"default/{group.meta.name}": group}
    assert cluster.view.subject_seq("pod", "default", "p") == 1


def test_a_pod_naming_a_podgroup_gets_none_and_a_submitted_podgroup_is_marked_as_the_users() -> None:
    cluster = Cluster()
    gang = podgroup_doc("gang", minMember=2)
    member = pod_doc("m0", annotations={GROUP_NAME: "gang"})
    decided = cluster.apply(gang, member)
    assert [w.emit.type for w in decided.writes] == ["PodGroupSubmitted", "PodSubmitted"]
    group = decided.writes[0].emit.payload.decoded()
    assert group.meta.annotations[OWNER] == "User" and group.meta.uid
    assert decided.writes[1].emit.payload.podgroup is None
    assert set(cluster.view.context().podgroups) == {"default/gang"}


def test_plain_objects_are_immutable_but_applying_them_again_changes_nothing() -> None:
    cluster = Cluster()
    doc = pod_doc("p", annotations={"a": "1"})
    cluster.apply(doc, podgroup_doc("gang"))
    again = cluster.apply(doc, podgroup_doc("gang"))
    assert again.accepted and not again.writes
    assert [o.action for o in again.outcomes] == ["unchanged", "unchanged"]
    assert cluster.apply(doc, operation=UPDATE).writes == ()
    changed = pod_doc("p", annotations={"a": "2"}, containers=[container(cpu="2")])
    found = errors(cluster.apply(changed))
    assert [path for path, _ in found] == ["metadata.annotations", "spec.containers"]
    assert all("cannot be changed once submitted" in message for _, message in found)
    assert [p for p, _ in errors(cluster.apply(podgroup_doc("gang", minMember=3)))] == ["spec.minMember"]
    assert [p for p, _ in errors(cluster.apply(doc, operation=CREATE))] == ["metadata.name"]  # exists


def test_deleting_a_plain_pod_takes_its_own_podgroup_along() -> None:
    cluster = Cluster()
    cluster.apply(pod_doc("p"))
    (group_key,) = cluster.view.context().podgroups
    refused = errors(cluster.delete("PodGroup", group_key.partition("/")[2]))
    assert "is Pod 'p''s own; delete the pod" in refused[0][1]
    assert only(cluster.delete("Pod", "p")) == ("PodWithdrawn", payloads.Empty())
    context = cluster.view.context()
    assert context.plain_pods == {} and context.podgroups == {}
    assert "not found" in errors(cluster.delete("Pod", "p"))[0][1]
    # submitted again: a new identity, so a new group of its own
    resubmitted = decode_object(only(cluster.apply(pod_doc("p")))[1].podgroup)
    assert f"default/{resubmitted.meta.name}" != group_key


def test_deleting_a_users_podgroup_leaves_its_pods() -> None:
    cluster = Cluster()
    cluster.apply(podgroup_doc("gang"), pod_doc("m0", annotations={GROUP_NAME: "gang"}))
    assert only(cluster.delete("PodGroup", "gang")) == ("PodGroupWithdrawn", payloads.Empty())
    assert set(cluster.view.context().plain_pods) == {"default/m0"}


def test_a_job_and_plain_objects_never_share_a_name() -> None:
    cluster = Cluster()
    cluster.apply(job_doc("train", tasks=[task("ps"), task("worker", 2)]))
    assert errors(cluster.apply(pod_doc("train-worker-1"))) == [
        ("metadata.name", "the name belongs to a pod of Job 'default/train'; choose another name")
    ]
    assert cluster.apply(pod_doc("train-worker-2")).accepted  # beyond the job's replicas
    joined = errors(cluster.apply(pod_doc("sneaky", annotations={GROUP_NAME: "train"})))
    assert joined[0][0] == f"metadata.annotations[{GROUP_NAME}]"
    assert errors(cluster.apply(podgroup_doc("train")))[0][0] == "metadata.name"
    ((path, message),) = errors(cluster.delete("Pod", "train-ps-0"))
    assert path == "metadata.name"
    assert message == (
        "Pod 'default/train-ps-0' is a pod of Job 'default/train', which manages it; "
        "delete or suspend the Job"
    )
    assert "is Job 'default/train''s" in errors(cluster.delete("PodGroup", "train"))[0][1]

    cluster.apply(podgroup_doc("infer"))
    scaled = errors(cluster.apply(job_doc("train", tasks=[task("ps"), task("worker", 3)])))
    assert scaled == [
        (
            "spec.tasks[1].replicas",
            "replica 2 would be named 'train-worker-2', which Pod 'default/train-worker-2' has",
        )
    ]
    assert errors(cluster.apply(job_doc("infer")))[0][0] == "metadata.name"


def test_plain_objects_survive_a_checkpoint() -> None:
    cluster = Cluster()
    cluster.apply(queue_doc("research"), podgroup_doc("gang", queue="research"), pod_doc("p"))
    loaded = CORE.load(CORE.dump(cluster.view))
    assert loaded.context() == cluster.view.context() and loaded.subjects == cluster.view.subjects


def test_field_errors_name_the_document() -> None:
    decided = Cluster().apply(pod_doc("p", containers=[]))
    assert not decided.accepted and not decided.writes
    assert list(decided.errors) == [
        FieldError("Pod default/p", "spec.containers", "at least one container is required")
    ]
