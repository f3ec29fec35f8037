"""contracts/identity.py: a payload's object must be the one its subject names."""

from __future__ import annotations

import pytest

from contracts import codec, payloads
from contracts.events import EVENT_TYPES
from contracts.identity import OBJECT_EVENT_TYPES, identity_problem
from contracts.objects import ObjectMeta, Pod, PodGroup, Queue
from contracts.typed_events import decode_payload


def pod(name: str = "p", namespace: str = "default") -> dict[str, object]:
    return codec.encode_object(Pod(meta=ObjectMeta(name=name, namespace=namespace)))


def test_every_object_carrying_payload_type_is_checked() -> None:
    carrying = {n for n, t in EVENT_TYPES.items() if issubclass(t.payload_class, payloads.ObjectPayload)}
    assert carrying == OBJECT_EVENT_TYPES and "PodSubmitted" in carrying and "NodeRegistered" in carrying


@pytest.mark.parametrize("typed", [True, False], ids=["read-typed", "write-plain"])
@pytest.mark.parametrize(
    ("namespace", "name", "wrong"),
    [("default", "p", False), ("default", "q", True), ("other", "p", True)],
)
def test_a_pod_payload_names_the_subjects_pod(typed: bool, namespace: str, name: str, wrong: bool) -> None:
    plain = {"object": pod()}
    payload = decode_payload("PodCreated", 0, plain) if typed else plain
    problem = identity_problem("PodCreated", payload, namespace, name)
    assert (problem is not None) is wrong
    if wrong:
        assert "'default/p'" in str(problem) and f"'{namespace}/{name}'" in str(problem)


def test_a_cluster_scoped_object_is_compared_by_name() -> None:
    queue = {"object": codec.encode_object(Queue(meta=ObjectMeta(name="q", namespace="")))}
    assert identity_problem("QueueApplied", queue, None, "q") is None
    assert identity_problem("QueueApplied", queue, None, "r") is not None


def test_a_plain_pods_own_podgroup_is_in_its_namespace() -> None:
    group = codec.encode_object(PodGroup(meta=ObjectMeta(name="pg-p", namespace="default")))
    elsewhere = codec.encode_object(PodGroup(meta=ObjectMeta(name="pg-p", namespace="other")))
    assert identity_problem("PodSubmitted", {"object": pod(), "podgroup": group}, "default", "p") is None
    problem = identity_problem("PodSubmitted", {"object": pod(), "podgroup": elsewhere}, "default", "p")
    assert problem is not None and "podgroup" in problem


def test_payloads_without_an_object_and_objects_without_metadata() -> None:
    assert identity_problem("PodBound", payloads.PodBound(node="n1", plan="x"), "default", "p") is None
    assert identity_problem("PodBound", {"node": "n1"}, "default", "p") is None
    assert identity_problem("PodCreated", {"object": {"kind": "Pod", "object": {}}}, "default", "p")
