from __future__ import annotations

from dataclasses import dataclass

import msgpack
import orjson
import pytest

from contracts.codec import DecodeError, decode, decode_object, encode_object
from contracts.objects import FrozenMap, ObjectMeta, Pod, PodSpec
from contracts.parse import load_documents

MANIFESTS = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
spec:
  taints: [{key: gpu, value: "true", effect: NoSchedule}]
status: {allocatable: {cpu: "4", memory: 8Gi, nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, annotations: {scheduling.k8s.io/group-name: pg1}}
spec:
  nodeSelector: {zone: a}
  tolerations: [{key: gpu, operator: Exists}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}]
  containers: [{name: c, image: busybox, command: [sleep, "5"], resources: {requests: {cpu: 500m}}}]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec: {weight: 3, capability: {cpu: "8"}, reclaimable: false, parent: root}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg1}
spec: {minMember: 2, minTaskMember: {worker: 2}, queue: q1, minResources: {cpu: "1"},
       networkTopology: {mode: hard, highestTierAllowed: 2}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: rack-1}
spec:
  tier: 1
  members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: "1"}}}}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j1}
spec:
  minAvailable: 2
  plugins: {svc: [], env: []}
  policies: [{event: PodEvicted, action: RestartJob}, {exitCode: 3, action: AbortJob, timeout: 10s}]
  tasks:
  - name: worker
    replicas: 2
    dependsOn: {name: [master], iteration: any}
    template: {spec: {containers: [{name: w, image: busybox}]}}
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: j1-abortjob}
action: AbortJob
target: {kind: Job, name: j1}
"""


@pytest.mark.parametrize("obj", load_documents(MANIFESTS, "codec.yaml"), ids=lambda o: o.kind)
def test_every_kind_round_trips_through_msgpack_and_json(obj) -> None:
    data = encode_object(obj)
    assert decode_object(msgpack.unpackb(msgpack.packb(data))) == obj
    assert decode_object(orjson.loads(orjson.dumps(data))) == obj


def test_decoded_objects_are_hashable_values() -> None:
    for obj in load_documents(MANIFESTS, "codec.yaml"):
        assert hash(decode_object(encode_object(obj))) == hash(obj)


def _pod(spec: object = None, **meta: object) -> dict[str, object]:
    obj: dict[str, object] = {"meta": {"name": "p", **meta}}
    if spec is not None:
        obj["spec"] = spec
    return {"kind": "Pod", "object": obj}


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "Widget", "object": {}}, "unknown kind 'Widget'"),
        ({"kind": ["Pod"], "object": {}}, r"unknown kind \['Pod'\]"),
        ({"object": {}}, "unknown kind None"),
        ({"kind": "Pod", "object": [1, 2]}, "Pod: expected a mapping, got list"),
        ({"kind": "Pod", "object": {}}, r"Pod\.meta: required, but missing"),
        ({"kind": "Pod", "object": {"meta": "p"}}, r"Pod\.meta: expected a mapping, got str"),
        (_pod(labels=["a"]), r"ObjectMeta\.labels: expected a mapping, got list"),
        (_pod({"containers": "c"}), r"PodSpec\.containers: expected a list, got str"),
        (_pod({"containers": [1]}), r"PodSpec\.containers: expected a mapping, got int"),
        (_pod({"containers": [{"image": "i"}]}), r"Container\.name: required, but missing"),
        (
            _pod({"containers": [{"name": "c", "requests": ["cpu"]}]}),
            r"Container\.requests: expected a mapping of milli-units, got list",
        ),
        (
            _pod({"containers": [{"name": "c", "requests": {"cpu": "lots"}}]}),
            r"Container\.requests: expected integer milli-units",
        ),
        (
            {"kind": "Job", "object": {"meta": {"name": "j"}, "plugins": {"svc": 1}}},
            r"Job\.plugins: expected a list, got int",
        ),
    ],
)
def test_bad_payloads_are_rejected_naming_the_class_and_field(data, message) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_object(data)


def test_absent_fields_take_defaults_and_unknown_keys_are_ignored() -> None:
    data = {"meta": {"name": "p", "added_later": 1}, "spec": {"node_name": "n1"}}
    assert decode(Pod, data) == Pod(meta=ObjectMeta(name="p"), spec=PodSpec(node_name="n1"))


def test_lenient_values_decode_as_they_always_have() -> None:
    meta = decode(ObjectMeta, {"name": ["a", {"b": [1]}], "creation_timestamp": 5, "uid": None})
    assert meta.name == ("a", FrozenMap({"b": (1,)}))  # a container where a scalar belongs is frozen
    assert type(meta.creation_timestamp) is float  # JSON may write a whole float as an int
    assert meta.uid is None  # None stays None whatever the hint
    hash(meta)


@dataclass(frozen=True)
class _OneField:
    name: str


def test_a_dataclass_of_one_field_decodes() -> None:
    assert decode(_OneField, {"name": "x"}) == _OneField("x")
