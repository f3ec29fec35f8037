"""Kubernetes defaults a container's missing requests to its limits, extended resources included, before
any scheduler sees the pod; GPU manifests are usually written with the GPU under `limits` only (Volcano's
MindSpore-GPU example). lahar defaults them as it parses, so such workers are placed on GPU nodes only."""

from __future__ import annotations

from contracts.objects import Job
from contracts.parse import load_documents
from contracts.resources import Resources, requests_defaulted_to_limits
from services.scheduler.core.conf import default_conf
from services.simulator.engine import simulate

GPU = "nvidia.com/gpu"

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: cpu-only}
status:
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-node}
status:
  allocatable: {cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "2"}
"""

GPU_IN_LIMITS_ONLY = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: default, annotations: {lahar.dev/sim-duration: 5s}}
spec:
  minAvailable: 2
  schedulerName: volcano
  tasks:
    - name: worker
      replicas: 3
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: main
              image: mindspore-gpu
              resources:
                requests: {cpu: "1"}
                limits: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "1"}
"""


def test_missing_requests_default_to_limits_and_given_ones_are_kept() -> None:
    limits = Resources.parse({"cpu": "2", "memory": "4Gi", GPU: "1"})
    assert requests_defaulted_to_limits(Resources.parse({"cpu": "1"}), limits) == Resources.parse(
        {"cpu": "1", "memory": "4Gi", GPU: "1"}
    )
    # an explicit zero is a request, as in Kubernetes
    zero_gpu = Resources.parse({GPU: "0"})
    assert requests_defaulted_to_limits(zero_gpu, limits)[GPU] == 0
    assert requests_defaulted_to_limits(Resources(), Resources()) == Resources()


def test_a_parsed_job_requests_the_gpu_it_only_limits() -> None:
    (job,) = load_documents(GPU_IN_LIMITS_ONLY, "job.yaml")
    assert isinstance(job, Job)
    container = job.tasks[0].template.spec.containers[0]
    assert container.requests[GPU] == 1000  # milli-units
    assert container.requests["cpu"] == 1000  # the request given stays, below its limit
    assert job.tasks[0].template.spec.effective_requests()[GPU] == 1000


def test_workers_with_the_gpu_in_limits_only_go_to_the_gpu_node_and_wait_for_room() -> None:
    objects = [*load_documents(CLUSTER, "cluster.yaml"), *load_documents(GPU_IN_LIMITS_ONLY, "job.yaml")]
    run = simulate(objects, default_conf())
    assert run.binds, "nothing was placed"
    # two GPUs: the gang of two runs on the GPU node, the third worker waits for a GPU, never cpu-only
    assert set(run.binds.values()) == {"gpu-node"}
