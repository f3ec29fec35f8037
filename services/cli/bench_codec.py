"""`lahar bench codec`: microseconds per `encode_object` and `decode_object` call for the objects the
control plane moves most: a Volcano job's Pod (as the job-controller builds it), its PodGroup, the Job
and a Node.

Each kind is encoded N times, then its encoded form decoded N times; the first call of each is left out
of the timing, so one-off work (a codec compiling its per-class plan) does not count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from contracts.codec import decode_object, encode_object
from contracts.job_shape import default_job
from contracts.objects import ApiObject, Job, Node
from contracts.parse import load_documents
from services.job_controller.core.expand import pod_for, podgroup_for

# A job shaped like the examples': labels and annotations the pods inherit, plugins, a policy, and a
# container with a command, environment, requests and limits, so that every nested kind is on the path.
_MANIFESTS = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: train
  namespace: research
  labels: {volcano.sh/job-type: Training, team: vision}
  annotations: {lahar.dev/duration: 30s, volcano.sh/preemptable: "true"}
spec:
  minAvailable: 3
  queue: research
  plugins: {svc: [], env: [], ssh: []}
  policies: [{event: PodEvicted, action: RestartJob}]
  tasks:
  - name: ps
    replicas: 1
    template:
      metadata: {labels: {role: ps}}
      spec:
        containers:
        - {name: ps, image: "trainer:1.4", command: [python, -m, trainer.ps],
           resources: {requests: {cpu: "1", memory: 2Gi}}}
  - name: worker
    replicas: 4
    template:
      metadata: {labels: {role: worker}, annotations: {prometheus.io/scrape: "true"}}
      spec:
        restartPolicy: OnFailure
        nodeSelector: {accelerator: a100}
        tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
        containers:
        - name: worker
          image: "trainer:1.4"
          command: [python, -m, trainer.worker]
          args: [--epochs, "10", --batch-size, "256"]
          env: [{name: NCCL_DEBUG, value: INFO}, {name: OMP_NUM_THREADS, value: "8"}]
          workingDir: /workspace
          resources:
            requests: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
            limits: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-017
  labels: {kubernetes.io/hostname: gpu-node-017, accelerator: a100, topology.kubernetes.io/zone: zone-b}
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8", pods: "110"}
  allocatable: {cpu: "63", memory: 500Gi, nvidia.com/gpu: "8", pods: "110"}
"""


def sample_objects() -> dict[str, ApiObject]:
    """One object of each benchmarked kind, keyed by kind."""
    parsed = load_documents(_MANIFESTS, "bench-codec.yaml")
    job = default_job(next(o for o in parsed if isinstance(o, Job)))
    node = next(o for o in parsed if isinstance(o, Node))
    worker = next(t for t in job.tasks if t.name == "worker")
    pod = pod_for(job, worker, 2, created_at=1_700_000_000.5, generation=1)
    return {"Pod": pod, "PodGroup": podgroup_for(job), "Job": job, "Node": node}


def _microseconds_per_call(call: Callable[[], Any], iterations: int) -> float:
    call()  # warm-up: one-off work is not what a running service pays per event
    started = time.perf_counter()
    for _ in range(iterations):
        call()
    return (time.perf_counter() - started) / iterations * 1e6


def run_bench(iterations: int) -> dict[str, Any]:
    """µs per encode_object and per decode_object call, per kind."""
    per_kind = {}
    for kind, obj in sample_objects().items():
        data = encode_object(obj)

        def encode_once(obj: ApiObject = obj) -> dict[str, Any]:
            return encode_object(obj)

        def decode_once(data: dict[str, Any] = data) -> ApiObject:
            return decode_object(data)

        per_kind[kind] = {
            "encode": round(_microseconds_per_call(encode_once, iterations), 2),
            "decode": round(_microseconds_per_call(decode_once, iterations), 2),
        }
    return {"iterations": iterations, "us_per_call": per_kind}
