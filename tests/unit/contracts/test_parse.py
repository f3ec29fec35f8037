"""Manifests to typed objects: every kind from a realistic manifest, and complete error reports."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from contracts.errors import FieldError, ManifestError
from contracts.objects import (
    Command,
    HyperNode,
    Job,
    LabelSelector,
    Node,
    NodeSelectorTerm,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    SelectorRequirement,
    Taint,
    Toleration,
)
from contracts.parse import duration_seconds, load_documents, load_files, parse_documents, parse_object
from contracts.resources import Resources

GI = 2**30 * 1000
MI = 2**20 * 1000


def load(text: str) -> list:
    return load_documents(textwrap.dedent(text), "test.yaml")


def load_one(text: str):
    (obj,) = load(text)
    return obj


def problems(text: str) -> set[tuple[str, str]]:
    """(path, message) of every error the manifest produces."""
    with pytest.raises(ManifestError) as caught:
        load(text)
    return {(error.path, error.message) for error in caught.value.errors}


# --- every kind ---------------------------------------------------------------------------------------


def test_node() -> None:
    node = load_one(
        """
        apiVersion: v1
        kind: Node
        metadata:
          name: te1
          namespace: ignored-for-cluster-scoped
          labels: {kubernetes.io/hostname: te1, topology.kubernetes.io/zone: z1}
        spec:
          unschedulable: true
          taints:
          - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
          - {key: dedicated}
        status:
          capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: 4}
          allocatable: {cpu: 7800m, memory: 30Gi, pods: 110, nvidia.com/gpu: 4}
          conditions:
          - {type: MemoryPressure, status: "False"}
          - {type: Ready, status: "False"}
        """
    )
    assert isinstance(node, Node)
    assert node.meta.name == "te1" and node.meta.namespace == ""
    assert node.meta.labels["topology.kubernetes.io/zone"] == "z1"
    assert node.allocatable == Resources(
        {"cpu": 7800, "memory": 30 * GI, "pods": 110_000, "nvidia.com/gpu": 4000}
    )
    assert node.capacity["cpu"] == 8000
    assert node.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"), Taint("dedicated"))
    assert node.unschedulable is True
    assert node.ready is False


def test_node_without_ready_condition_is_ready() -> None:
    node = load_one("{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: 2}}}")
    assert node.ready is True and node.unschedulable is False and node.taints == ()


def test_pod() -> None:
    pod = load_one(
        """
        apiVersion: v1
        kind: Pod
        metadata:
          name: trainer-0
          namespace: ml
          uid: 5d6c
          annotations: {scheduling.k8s.io/group-name: trainer}
          creationTimestamp: "2024-01-02T03:04:05Z"
        spec:
          schedulerName: volcano
          priorityClassName: high
          priority: 1000
          preemptionPolicy: Never
          restartPolicy: OnFailure
          nodeName: te2
          nodeSelector: {accelerator: a100}
          hostname: trainer-0
          subdomain: trainer
          terminationGracePeriodSeconds: 30
          overhead: {cpu: 100m}
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: zone, operator: In, values: [z1, z2]}
                  matchFields:
                  - {key: metadata.name, operator: NotIn, values: [te9]}
              preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 20
                preference:
                  matchExpressions:
                  - {key: gpu-count, operator: Gt, values: ["3"]}
          tolerations:
          - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
          - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
          initContainers:
          - name: fetch
            image: busybox
            resources: {requests: {cpu: "2", memory: 1Gi}}
          - name: log-shipper
            image: fluent-bit
            restartPolicy: Always
            resources: {requests: {cpu: 200m, memory: 64Mi}}
          containers:
          - name: main
            image: pytorch:2.3
            command: [python, train.py]
            args: ["--epochs", "3"]
            workingDir: /workspace
            env:
            - {name: WORLD_SIZE, value: "4"}
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            resources:
              requests: {cpu: "1", memory: 4Gi, nvidia.com/gpu: 1}
              limits: {cpu: "2", memory: 4Gi, nvidia.com/gpu: 1}
        status:
          phase: Failed
          startTime: "2024-01-02T03:05:00Z"
          containerStatuses:
          - {name: sidecar, state: {terminated: {exitCode: 0}}}
          - {name: main, state: {terminated: {exitCode: 137, reason: OOMKilled}}}
        """
    )
    assert isinstance(pod, Pod)
    assert pod.meta.key == "ml/trainer-0" and pod.meta.uid == "5d6c"
    assert pod.meta.creation_timestamp == 1704164645.0
    spec = pod.spec
    assert (spec.scheduler_name, spec.priority_class_name, spec.priority) == ("volcano", "high", 1000)
    assert (spec.preemption_policy, spec.restart_policy, spec.node_name) == ("Never", "OnFailure", "te2")
    assert spec.node_selector == {"accelerator": "a100"}
    assert (spec.hostname, spec.subdomain, spec.termination_grace_period_seconds) == (
        "trainer-0",
        "trainer",
        30,
    )
    assert spec.node_affinity is not None
    assert spec.node_affinity.required == (
        NodeSelectorTerm(
            match_expressions=(SelectorRequirement("zone", "In", ("z1", "z2")),),
            match_fields=(SelectorRequirement("metadata.name", "NotIn", ("te9",)),),
        ),
    )
    (preferred,) = spec.node_affinity.preferred
    assert preferred.weight == 20
    assert preferred.preference.match_expressions == (SelectorRequirement("gpu-count", "Gt", ("3",)),)
    assert spec.tolerations == (
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 300),
    )
    (main,) = spec.containers
    assert (main.name, main.image, main.working_dir) == ("main", "pytorch:2.3", "/workspace")
    assert main.command == ("python", "train.py") and main.args == ("--epochs", "3")
    assert [(env.name, env.value) for env in main.env] == [("WORLD_SIZE", "4"), ("POD_NAME", "")]
    assert main.requests == Resources({"cpu": 1000, "memory": 4 * GI, "nvidia.com/gpu": 1000})
    assert main.limits["cpu"] == 2000
    fetch, shipper = spec.init_containers
    assert fetch.restart_policy == "" and shipper.restart_policy == "Always"
    assert spec.overhead == Resources({"cpu": 100})
    # max(main + sidecar, fetch) + overhead: the init container's 2 cpu dominates, memory is main + sidecar
    assert spec.effective_requests() == Resources(
        {"cpu": 2100, "memory": 4 * GI + 64 * MI, "nvidia.com/gpu": 1000}
    )
    assert pod.status.phase == "Failed"
    assert pod.status.exit_code == 137
    assert pod.status.start_time == 1704164700.0


def test_minimal_pod_keeps_dataclass_defaults() -> None:
    pod = load_one("{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}")
    assert pod.meta.namespace == "default"
    assert pod.spec.scheduler_name == "default-scheduler" and pod.spec.restart_policy == "Always"
    assert pod.spec.node_affinity is None and pod.spec.priority is None
    assert pod.status.phase == "Pending" and pod.status.exit_code is None


def test_priority_class() -> None:
    pc = load_one(
        """
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: high-priority}
        value: 1000000
        globalDefault: false
        preemptionPolicy: Never
        description: for production jobs
        """
    )
    assert isinstance(pc, PriorityClass)
    assert (pc.meta.key, pc.value, pc.global_default) == ("high-priority", 1000000, False)
    assert (pc.preemption_policy, pc.description) == ("Never", "for production jobs")


def test_podgroup() -> None:
    pg = load_one(
        """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: distcc-7f3a, namespace: build}
        spec:
          minMember: 6
          minTaskMember: {master: 1, worker: 5}
          queue: distcc
          priorityClassName: high-priority
          minResources: {cpu: "9", memory: 2Gi}
          networkTopology: {mode: soft, highestTierAllowed: 2}
          subGroupPolicy:
          - name: ranks
            subGroupSize: 4
            minSubGroups: 1
            networkTopology: {mode: hard, highestTierName: rack}
            labelSelector:
              matchLabels: {role: worker}
              matchExpressions: [{key: rank, operator: Exists}]
            matchLabelKeys: [volcano.sh/partition-id]
        status:
          phase: Inqueue
          running: 2
          conditions:
          - type: Unschedulable
            status: "True"
            transitionID: 9c1e
            lastTransitionTime: 2024-01-02T03:04:05Z
            reason: NotEnoughResources
            message: 4/6 tasks in gang unschedulable
        """
    )
    assert isinstance(pg, PodGroup)
    assert (pg.meta.key, pg.min_member, pg.queue, pg.priority_class_name) == (
        "build/distcc-7f3a",
        6,
        "distcc",
        "high-priority",
    )
    assert pg.min_task_member == {"master": 1, "worker": 5}
    assert pg.min_resources == Resources({"cpu": 9000, "memory": 2 * GI})
    assert pg.network_topology is not None
    assert (pg.network_topology.mode, pg.network_topology.highest_tier_allowed) == ("soft", 2)
    (sub,) = pg.sub_group_policy
    assert (sub.name, sub.sub_group_size, sub.min_sub_groups, sub.match_label_keys) == (
        "ranks",
        4,
        1,
        ("volcano.sh/partition-id",),
    )
    assert sub.network_topology is not None and sub.network_topology.highest_tier_name == "rack"
    assert sub.label_selector == LabelSelector({"role": "worker"}, (SelectorRequirement("rank", "Exists"),))
    assert (pg.status.phase, pg.status.running) == ("Inqueue", 2)
    (condition,) = pg.status.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "Unschedulable",
        "True",
        "NotEnoughResources",
    )
    assert condition.transition_id == "9c1e" and condition.last_transition_time == 1704164645.0


def test_podgroup_without_min_resources_keeps_none() -> None:
    pg = load_one("{apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: g}}")
    assert pg.min_resources is None and pg.network_topology is None and pg.queue == "default"


def test_queue() -> None:
    queue = load_one(
        """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: research}
        spec:
          weight: 3
          capability: {cpu: "64", nvidia.com/gpu: 8}
          deserved: {cpu: "32"}
          guarantee: {resource: {cpu: "8", memory: 16Gi}}
          reclaimable: false
          parent: root
          priority: 5
          type: training
          dequeueStrategy: fifo
          extendClusters:
          - {name: cluster-b, weight: 2, capacity: {cpu: "100"}}
          affinity:
            nodeGroupAffinity:
              requiredDuringSchedulingIgnoredDuringExecution: [gpu-pool]
              preferredDuringSchedulingIgnoredDuringExecution: [gpu-pool-b]
            nodeGroupAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution: [cpu-pool]
        status:
          state: Closing
          running: 3
          allocated: {cpu: 12}
        """
    )
    assert isinstance(queue, Queue)
    assert (queue.meta.key, queue.weight, queue.priority, queue.parent) == ("research", 3, 5, "root")
    assert queue.capability == Resources({"cpu": 64000, "nvidia.com/gpu": 8000})
    assert queue.deserved == Resources({"cpu": 32000})
    assert queue.guarantee == Resources({"cpu": 8000, "memory": 16 * GI})
    assert queue.reclaimable is False and not queue.is_reclaimable
    assert (queue.type, queue.dequeue_strategy) == ("training", "fifo")
    (cluster,) = queue.extend_clusters
    assert cluster["name"] == "cluster-b" and cluster["capacity"]["cpu"] == "100"
    with pytest.raises(TypeError):
        cluster["name"] = "other"  # type: ignore[index]
    assert queue.affinity is not None and queue.affinity.node_group_affinity is not None
    assert queue.affinity.node_group_affinity.required == ("gpu-pool",)
    assert queue.affinity.node_group_affinity.preferred == ("gpu-pool-b",)
    assert queue.affinity.node_group_anti_affinity is not None
    assert queue.affinity.node_group_anti_affinity.required == ("cpu-pool",)
    assert (queue.status.state, queue.status.running) == ("Closing", 3)
    assert queue.status.allocated == Resources({"cpu": 12000})
    hash(queue)  # a value, even with free-form extendClusters inside


def test_minimal_queue_leaves_caps_unset() -> None:
    queue = load_one("{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q}}")
    assert queue.weight == 1 and queue.capability is None and queue.guarantee is None
    assert queue.reclaimable is None and queue.is_reclaimable and queue.status.state == "Open"


def test_hypernode() -> None:
    first, second = load(
        """
        apiVersion: topology.volcano.sh/v1alpha1
        kind: HyperNode
        metadata: {name: s0-rack-1}
        spec:
          tier: 1
          tierName: rack
          members:
          - {type: Node, selector: {exactMatch: {name: te1}}}
          - {type: Node, selector: {regexMatch: {pattern: "^te[2-4]$"}}}
          - type: Node
            selector:
              labelMatch:
                matchLabels: {rack: r1}
                matchExpressions: [{key: pool, operator: NotIn, values: [cpu]}]
        ---
        apiVersion: topology.volcano.sh/v1alpha1
        kind: HyperNode
        metadata: {name: s0}
        spec:
          tier: 2
          members:
          - {type: HyperNode, selector: {exactMatch: {name: s0-rack-1}}}
        """
    )
    assert isinstance(first, HyperNode)
    assert (first.meta.key, first.meta.namespace, first.tier, first.tier_name) == ("s0-rack-1", "", 1, "rack")
    exact, regex, labels = first.members
    assert (exact.type, exact.exact_name, exact.regex_pattern, exact.label_selector) == (
        "Node",
        "te1",
        "",
        None,
    )
    assert (regex.exact_name, regex.regex_pattern) == ("", "^te[2-4]$")
    assert labels.label_selector == LabelSelector(
        {"rack": "r1"}, (SelectorRequirement("pool", "NotIn", ("cpu",)),)
    )
    assert second.tier == 2 and second.members[0].type == "HyperNode"


JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: distcc
  namespace: build
  labels: {volcano.sh/job-type: COMPILER}
spec:
  minAvailable: 6
  schedulerName: volcano
  queue: distcc
  maxRetry: 5
  ttlSecondsAfterFinished: 600
  priorityClassName: high-priority
  minSuccess: 2
  runningEstimate: 1h30m
  networkTopology: {mode: hard, highestTierAllowed: 2}
  plugins: {svc: ["--disable-network-policy=true"], env: [], ssh: null}
  volumes:
  - {mountPath: /cache, volumeClaimName: ccache}
  - mountPath: /scratch
    volumeClaim: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
  policies:
  - {event: PodEvicted, action: RestartJob}
  - {events: [PodFailed, Unknown], action: AbortJob, timeout: 1m30s}
  - {exitCode: 3, action: TerminateJob}
  tasks:
  - name: master
    replicas: 1
    minAvailable: 1
    maxRetry: -1
    topologyPolicy: single-numa-node
    policies:
    - {event: TaskCompleted, action: CompleteJob}
    template:
      metadata:
        labels: {role: master}
        annotations: {volcano.sh/preemptable: "false"}
      spec:
        restartPolicy: OnFailure
        containers:
        - name: master
          image: distcc:latest
          command: ["/bin/sh", "-c", "make -j"]
          resources: {requests: {cpu: 4}, limits: {cpu: 4}}
  - name: worker
    replicas: 10
    dependsOn: {name: [master], iteration: any}
    partitionPolicy:
      totalPartitions: 2
      partitionSize: 5
      minPartitions: 1
      networkTopology: {mode: soft}
    template:
      spec:
        containers:
        - {name: worker, image: distcc:latest, resources: {requests: {cpu: 500m, memory: 256Mi}}}
"""


def test_job() -> None:
    job = load_one(JOB)
    assert isinstance(job, Job)
    assert (job.meta.key, job.meta.labels["volcano.sh/job-type"]) == ("build/distcc", "COMPILER")
    assert (job.min_available, job.scheduler_name, job.queue, job.max_retry) == (6, "volcano", "distcc", 5)
    assert (job.ttl_seconds_after_finished, job.priority_class_name, job.min_success) == (
        600,
        "high-priority",
        2,
    )
    assert job.running_estimate == 5400.0
    assert job.network_topology is not None and job.network_topology.highest_tier_allowed == 2
    assert job.plugins == {"svc": ("--disable-network-policy=true",), "env": (), "ssh": ()}
    cache, scratch = job.volumes
    assert (cache.mount_path, cache.volume_claim_name, cache.volume_claim) == ("/cache", "ccache", None)
    assert scratch.volume_claim is not None and scratch.volume_claim["accessModes"] == ("ReadWriteOnce",)
    evicted, failed, exit_code = job.policies
    assert (evicted.event, evicted.action, evicted.timeout_seconds) == ("PodEvicted", "RestartJob", None)
    assert failed.all_events() == ("PodFailed", "Unknown") and failed.timeout_seconds == 90.0
    assert (exit_code.exit_code, exit_code.action) == (3, "TerminateJob")
    master, worker = job.tasks
    assert (master.name, master.replicas, master.min_available, master.max_retry) == ("master", 1, 1, -1)
    assert master.topology_policy == "single-numa-node"
    assert master.policies[0].event == "TaskCompleted" and master.policies[0].action == "CompleteJob"
    assert master.template.labels == {"role": "master"}
    assert master.template.annotations == {"volcano.sh/preemptable": "false"}
    assert master.template.spec.restart_policy == "OnFailure"
    assert master.template.spec.containers[0].requests == Resources({"cpu": 4000})
    assert (worker.replicas, worker.min_available, worker.max_retry) == (10, None, 0)
    assert worker.depends_on is not None
    assert (worker.depends_on.name, worker.depends_on.iteration) == (("master",), "any")
    partition = worker.partition_policy
    assert partition is not None
    assert (partition.total_partitions, partition.partition_size, partition.min_partitions) == (2, 5, 1)
    assert partition.network_topology is not None and partition.network_topology.mode == "soft"
    assert worker.template.spec.containers[0].requests == Resources({"cpu": 500, "memory": 256 * MI})
    # parsed objects are values: free-form parts such as volumeClaim are frozen too
    assert hash(job) == hash(load_one(JOB))


def test_minimal_job_keeps_dataclass_defaults() -> None:
    job = load_one(
        """
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: j}
        spec:
          tasks: [{name: t, template: {spec: {containers: [{name: c}]}}}]
        """
    )
    assert (job.min_available, job.queue, job.max_retry, job.scheduler_name) == (
        None,
        "default",
        3,
        "volcano",
    )
    assert job.running_estimate is None and job.network_topology is None and job.plugins == {}
    (task,) = job.tasks
    assert (task.replicas, task.min_available, task.depends_on, task.partition_policy) == (
        1,
        None,
        None,
        None,
    )


def test_command() -> None:
    command = load_one(
        """
        apiVersion: bus.volcano.sh/v1alpha1
        kind: Command
        metadata: {name: distcc-abortjob-x7k2p, namespace: build}
        action: AbortJob
        target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: distcc, uid: 1f2e}
        reason: user request
        message: suspended from the CLI
        """
    )
    assert isinstance(command, Command)
    assert (command.meta.key, command.action, command.reason) == (
        "build/distcc-abortjob-x7k2p",
        "AbortJob",
        "user request",
    )
    assert command.target is not None
    assert (command.target.kind, command.target.name, command.target.api_version, command.target.uid) == (
        "Job",
        "distcc",
        "batch.volcano.sh/v1alpha1",
        "1f2e",
    )


def test_json_documents_parse() -> None:
    manifest = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "json-queue"},
        "spec": {"weight": 2, "capability": {"cpu": "4", "memory": "8Gi"}},
    }
    (queue,) = load_documents(json.dumps(manifest, indent=2), "queue.json")
    assert queue.weight == 2 and queue.capability == Resources({"cpu": 4000, "memory": 8 * GI})


def test_parse_object_takes_a_mapping_directly() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "1"}},
    }
    node = parse_object(doc, "inline")
    assert isinstance(node, Node) and node.allocatable == Resources({"cpu": 1000})


def test_server_set_metadata_is_accepted_and_nulls_are_defaults() -> None:
    queue = load_one(
        """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: q, resourceVersion: "42", managedFields: [{manager: kubectl}]}
        spec: {weight: null, capability: null}
        """
    )
    assert queue.weight == 1 and queue.capability is None


def test_unknown_fields_are_passed_over_when_not_validated() -> None:
    text = """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: q}
        spec: {weight: 3, futureField: {nested: true}}
        extra: 1
        """
    (parsed,), errors = parse_documents(textwrap.dedent(text), "q.yaml", validate="ignore")
    assert errors == [] and parsed.warnings == () and parsed.object.weight == 3


def test_empty_documents_are_skipped() -> None:
    objects = load(
        """
        ---
        # only a comment
        ---
        {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: a}}
        ---
        ---
        {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: b}}
        """
    )
    assert [obj.meta.name for obj in objects] == ["a", "b"]


# --- errors -------------------------------------------------------------------------------------------

BROKEN_JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: distcc
  labels: {volcano.sh/job-type: 7}
spec:
  minAvailable: -1
  queue: [distcc]
  policies:
  - {event: PodFaild, action: RestartJob, timeout: soon}
  tasks:
  - replicas: 1
    template:
      spec:
        containers:
        - name: master
          resources: {requests: {cpu: four, nvidia.com/gpu: 1Gb}}
  - name: worker
    replicas: three
    dependsOn: {name: [master], iteration: some}
    template:
      spec:
        restartPolicy: Sometimes
        tolerations:
        - {key: dedicated, operator: Equals, effect: NoSchedule}
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions: [{key: zone, operator: Within, values: [z1]}]
        containers: {name: worker}
  networkTopology: {mode: strict}
"""


def test_broken_job_reports_every_problem_at_once() -> None:
    with pytest.raises(ManifestError) as caught:
        load_documents(BROKEN_JOB, "jobs.yaml")
    found = {(error.path, error.message) for error in caught.value.errors}
    assert found == {
        ("metadata.labels[volcano.sh/job-type]", "expected a string, got number 7"),
        ("spec.minAvailable", "expected an integer >= 0, got -1"),
        ("spec.queue", "expected a string, got a list"),
        (
            "spec.policies[0].event",
            "expected one of *, PodFailed, PodEvicted, PodPending, Unknown, TaskCompleted, TaskFailed,"
            " JobUpdated, got 'PodFaild'",
        ),
        ("spec.policies[0].timeout", "expected a duration such as 30s, 1m30s or 250ms, got 'soon'"),
        (
            "spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
            "expected a quantity such as 500m, 2, 1.5, 1Gi or 1e3, got 'four'",
        ),
        (
            "spec.tasks[0].template.spec.containers[0].resources.requests[nvidia.com/gpu]",
            "expected a quantity such as 500m, 2, 1.5, 1Gi or 1e3, got '1Gb'",
        ),
        ("spec.tasks[1].replicas", "expected an integer, got 'three'"),
        ("spec.tasks[1].dependsOn.iteration", "expected one of any, all, got 'some'"),
        (
            "spec.tasks[1].template.spec.restartPolicy",
            "expected one of Always, OnFailure, Never, got 'Sometimes'",
        ),
        (
            "spec.tasks[1].template.spec.tolerations[0].operator",
            "expected one of Equal, Exists, got 'Equals'",
        ),
        (
            "spec.tasks[1].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator",
            "expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt, got 'Within'",
        ),
        ("spec.tasks[1].template.spec.containers", "expected a list, got a mapping"),
        ("spec.networkTopology.mode", "expected one of hard, soft, got 'strict'"),
    }
    assert {error.document for error in caught.value.errors} == {"jobs.yaml#1 (Job default/distcc)"}


def test_manifest_error_lists_one_problem_per_line() -> None:
    with pytest.raises(ManifestError) as caught:
        load_documents(BROKEN_JOB, "jobs.yaml")
    lines = str(caught.value).splitlines()
    assert len(lines) == len(caught.value.errors) == 14
    assert (
        "jobs.yaml#1 (Job default/distcc): spec.tasks[1].replicas: expected an integer, got 'three'" in lines
    )
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("manifest", "path", "message"),
    [
        (
            "{apiVersion: v1, kind: Node, metadata: {name: n}, spec: {taints: [{key: k, effect: NoRun}]}}",
            "spec.taints[0].effect",
            "expected one of NoSchedule, PreferNoSchedule, NoExecute, got 'NoRun'",
        ),
        (
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Done}}",
            "status.phase",
            "expected one of Pending, Running, Succeeded, Failed, Unknown, got 'Done'",
        ),
        (
            "{apiVersion: v1, kind: Node, metadata: {name: n}, status: {allocatable: {cpu: -2}}}",
            "status.allocatable.cpu",
            "expected a non-negative quantity, got -2",
        ),
        (
            "{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: pc}}",
            "value",
            "required field is missing",
        ),
        (
            "{apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: g},"
            " spec: {minTaskMember: {worker: -1}}}",
            "spec.minTaskMember.worker",
            "expected an integer >= 0, got -1",
        ),
        (
            "{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q},"
            " spec: {weight: 0}}",
            "spec.weight",
            "expected an integer >= 1, got 0",
        ),
        (
            "{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q},"
            " spec: {reclaimable: 'no'}}",
            "spec.reclaimable",
            "expected true or false, got 'no'",
        ),
        (
            "{apiVersion: topology.volcano.sh/v1alpha1, kind: HyperNode, metadata: {name: h},"
            " spec: {members: []}}",
            "spec.tier",
            "required field is missing",
        ),
        (
            "{apiVersion: topology.volcano.sh/v1alpha1, kind: HyperNode, metadata: {name: h},"
            " spec: {tier: 1, members: [{type: Node,"
            " selector: {exactMatch: {name: a}, regexMatch: {pattern: b}}}]}}",
            "spec.members[0].selector",
            "expected exactly one of exactMatch, regexMatch, labelMatch, got exactMatch, regexMatch",
        ),
        (
            "{apiVersion: topology.volcano.sh/v1alpha1, kind: HyperNode, metadata: {name: h},"
            " spec: {tier: 1, members: [{type: Switch, selector: {exactMatch: {name: a}}}]}}",
            "spec.members[0].type",
            "expected one of Node, HyperNode, got 'Switch'",
        ),
        (
            "{apiVersion: bus.volcano.sh/v1alpha1, kind: Command, metadata: {name: c}, action: Pause}",
            "action",
            "expected one of AbortJob, RestartJob, RestartTask, RestartPod, RestartPartition, TerminateJob,"
            " CompleteJob, ResumeJob, SyncJob, EnqueueJob, SyncQueue, OpenQueue, CloseQueue, got 'Pause'",
        ),
        (
            "{apiVersion: v1, kind: Pod, metadata: {namespace: x}}",
            "metadata.name",
            "required field is missing",
        ),
        (
            "{apiVersion: v1, kind: Pod, metadata: {name: p, creationTimestamp: yesterday}}",
            "metadata.creationTimestamp",
            "expected an RFC 3339 timestamp such as 2024-01-02T03:04:05Z, got 'yesterday'",
        ),
        (
            "{apiVersion: v1, kind: Pod, metadata: {name: p, deletionTimestamp: .inf}}",
            "metadata.deletionTimestamp",
            "expected an RFC 3339 timestamp such as 2024-01-02T03:04:05Z, got number inf",
        ),
    ],
)
def test_single_problem(manifest: str, path: str, message: str) -> None:
    assert problems(manifest) == {(path, message)}


def test_hypernode_member_regex_must_compile() -> None:
    (error,) = problems(
        "{apiVersion: topology.volcano.sh/v1alpha1, kind: HyperNode, metadata: {name: h},"
        " spec: {tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: 'te[1-'}}}]}}"
    )
    assert error[0] == "spec.members[0].selector.regexMatch.pattern"
    assert error[1].startswith("expected a regular expression, got 'te[1-'")


def test_unknown_kind_is_named() -> None:
    assert problems(
        "{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: x}}"
    ) == {
        (
            "kind",
            "expected one of Command, CronJob, HyperNode, Job, JobFlow, JobTemplate, Node, Pod, PodGroup,"
            " PriorityClass, Queue, got 'Deployment'",
        )
    }


def test_wrong_api_version_is_reported_with_the_other_problems() -> None:
    assert problems("{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {maxRetry: -2}}") == {
        ("apiVersion", "expected 'batch.volcano.sh/v1alpha1' for kind Job, got 'batch/v1'"),
        ("spec.maxRetry", "expected an integer >= 0, got -2"),
    }


def test_missing_kind_and_api_version() -> None:
    assert problems("{metadata: {name: x}}") == {
        ("kind", "required field is missing"),
        ("apiVersion", "required field is missing"),
    }


def test_document_that_is_not_a_mapping() -> None:
    with pytest.raises(ManifestError) as caught:
        load_documents("- a\n- b\n", "list.yaml")
    assert caught.value.errors == (
        FieldError("list.yaml#1", "", "expected a mapping (an API object), got a list"),
    )
    assert str(caught.value) == "list.yaml#1: expected a mapping (an API object), got a list"


def test_yaml_syntax_error_has_location_and_earlier_documents_are_still_checked() -> None:
    text = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {unschedulable: maybe}\n"
        "---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: [m\n"
    )
    with pytest.raises(ManifestError) as caught:
        load_documents(text, "nodes.yaml")
    first, second = caught.value.errors
    assert first == FieldError(
        "nodes.yaml#1 (Node n)", "spec.unschedulable", "expected true or false, got 'maybe'"
    )
    assert second.document == "nodes.yaml#2" and second.path == ""
    assert second.message.startswith("YAML syntax error at line 9, column 1:")


def test_errors_from_all_documents_are_collected() -> None:
    text = """
    apiVersion: scheduling.volcano.sh/v1beta1
    kind: Queue
    metadata: {name: q1}
    spec: {weight: heavy}
    ---
    apiVersion: scheduling.volcano.sh/v1beta1
    kind: Queue
    metadata: {name: q2}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: p, namespace: ml}
    spec: {containers: [{name: c, resources: {limits: {memory: lots}}}]}
    """
    with pytest.raises(ManifestError) as caught:
        load(text)
    assert [(e.document, e.path) for e in caught.value.errors] == [
        ("test.yaml#1 (Queue q1)", "spec.weight"),
        ("test.yaml#3 (Pod ml/p)", "spec.containers[0].resources.limits.memory"),
    ]


# --- load_files ---------------------------------------------------------------------------------------


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_load_files_assigns_document_order_and_uids(tmp_path: Path) -> None:
    queues = write(
        tmp_path,
        "queues.yaml",
        """
        {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: research}}
        ---
        {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: given, uid: q-123}}
        """,
    )
    jobs = write(
        tmp_path,
        "jobs.yaml",
        """
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: first, namespace: team-a}
        spec: {tasks: [{name: t}]}
        ---
        ---
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: stamped, creationTimestamp: "2024-01-02T03:04:05Z"}
        spec: {tasks: [{name: t}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: early, creationTimestamp: 1970-01-01T00:00:00Z}
        """,
    )
    objects = load_files([queues, str(jobs)])
    identities = [
        (obj.kind, obj.meta.namespace, obj.meta.uid, obj.meta.creation_timestamp) for obj in objects
    ]
    assert identities == [
        ("Queue", "", "research", 0.0),
        ("Queue", "", "q-123", 1.0),
        ("Job", "team-a", "team-a-first", 2.0),
        ("Job", "default", "default-stamped", 1704164645.0),
        # an explicit epoch timestamp is kept, not mistaken for an absent one
        ("Pod", "default", "default-early", 0.0),
    ]


def test_load_files_collects_errors_from_every_file(tmp_path: Path) -> None:
    bad_queue = write(
        tmp_path,
        "a.yaml",
        "{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: q}, spec: {priority: -1}}",
    )
    bad_yaml = write(tmp_path, "b.yaml", "kind: Node\nmetadata: {name: n\n")
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ManifestError) as caught:
        load_files([bad_queue, bad_yaml, missing])
    documents = [error.document for error in caught.value.errors]
    assert documents == [f"{bad_queue}#1 (Queue q)", f"{bad_yaml}#1", str(missing)]
    assert caught.value.errors[0].path == "spec.priority"
    assert caught.value.errors[2].message.startswith("cannot read the file")


# --- durations ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("1m", 60.0),
        ("1h30m", 5400.0),
        ("1m30s", 90.0),
        ("250ms", 0.25),
        ("1.5h", 5400.0),
        ("2h45m10.5s", 9910.5),
        ("100us", 0.0001),
        ("0", 0.0),
        ("-1m", -60.0),
    ],
)
def test_duration_seconds(text: str, seconds: float) -> None:
    assert duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "10", "1d", "m", "1 m", "1h-30m", "1.2.3s", "s10"])
def test_duration_seconds_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        duration_seconds(bad)


def test_an_unnamed_task_parses_and_is_left_for_admission_to_name() -> None:
    # Volcano's mutating webhook names it default<i>; the parser must not reject it first
    job = parse_object(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {"tasks": [{"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}]},
        },
        "unnamed.yaml#1",
    )
    assert job.tasks[0].name == ""


def test_a_priority_class_of_an_older_api_version_is_read_as_the_current_one() -> None:
    for version in ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha1", "scheduling.k8s.io/v1"):
        text = f"apiVersion: {version}\nkind: PriorityClass\nmetadata: {{name: high}}\nvalue: 1000\n"
        (pc,) = load_documents(text, "pc.yaml")
        assert isinstance(pc, PriorityClass) and pc.value == 1000
    with pytest.raises(ManifestError) as refused:
        load_documents("apiVersion: scheduling.k8s.io/v2\nkind: PriorityClass\nmetadata: {name: x}\n", "pc")
    message = str(refused.value)
    assert "scheduling.k8s.io/v1beta1" in message and "apiVersion" in message
