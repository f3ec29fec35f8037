"""The workload of tests/e2e/test_dashboards_stack.py: three hollow nodes, Volcano's tiers with the reclaim
action and the usage plugin, the descheduler in dry-run, and two tenants' gang jobs in a queue that is
reclaimed from and a capped one."""

from __future__ import annotations

NODES = "".join(
    f"""---
apiVersion: v1
kind: Node
metadata: {{name: node-{i}}}
status:
  allocatable: {{cpu: "8", memory: 32Gi, pods: "110"}}
"""
    for i in range(3)
)
# examples/queues/reclaim.conf (Volcano's tiers and the reclaim action), with the usage plugin scoring only,
# so the scheduler receives the node agents' usage reports
SCHEDULER_CONF = """
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: usage
    enablePredicate: false
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
# Seed 002's load-aware rebalancing on the node agents' samples, in dry-run: it classifies the nodes and
# says what it would evict, and evicts nothing
DESCHEDULER_POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args: {}
  - name: LoadAware
    args:
      metrics: {type: Lahar}
      thresholds: {cpu: 30, memory: 30}
      targetThresholds: {cpu: 80, memory: 85}
  plugins:
    balance:
      enabled: [LoadAware]
"""
QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: batch}
spec: {weight: 1, reclaimable: true}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: capped}
spec: {weight: 1, capability: {cpu: 6, memory: 24Gi}}
"""


def gang(name: str, namespace: str, queue: str, pods: int, cpu: int, seconds: int) -> str:
    """A Volcano Job of `pods` pods that all start together, each running `seconds` on a hollow node."""
    return f"""---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  annotations: {{lahar.dev/sim-duration: {seconds}s}}
spec:
  queue: {queue}
  minAvailable: {pods}
  tasks:
  - name: work
    replicas: {pods}
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: work, image: busybox, resources: {{requests: {{cpu: "{cpu}", memory: 2Gi}}}}}}]
"""


# the three batch jobs fill the 24 cpu; the capped queue's jobs then need what batch holds above its share
FILL = [gang(f"fill-{i}", ns, "batch", 4, 2, 20) for i, ns in enumerate(("research", "research", "prod"))]
ARRIVE = [gang("urgent", "prod", "capped", 3, 2, 5), gang("small", "research", "capped", 1, 1, 5)]
JOBS = {"fill-0", "fill-1", "fill-2", "urgent", "small"}
