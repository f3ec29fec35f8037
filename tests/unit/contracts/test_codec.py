from __future__ import annotations

import msgpack
import orjson
import pytest

from contracts.codec import DecodeError, decode_object, encode_object
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


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "Widget", "object": {}}, "unknown kind 'Widget'"),
        ({"kind": "Pod", "object": [1, 2]}, "Pod: expected a mapping"),
    ],
)
def test_bad_payloads_are_rejected(data, message) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_object(data)
