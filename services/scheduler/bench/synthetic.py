"""A synthetic cluster and workload for `lahar bench core`, generated from a seed.

Nodes: 32 cpu / 256Gi; one in four also carries 8 GPUs. Pods: pending gangs of mixed sizes (1–64) over
weighted queues; about one gang in ten asks for GPUs. The total demand is kept near the cluster's
capacity so that the run ends with every placeable pod placed. History: gangs of the same kind that ran
and finished (Completed PodGroups, Succeeded pods).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from contracts.objects import (
    Container,
    Node,
    ObjectMeta,
    Pod,
    PodGroup,
    PodGroupStatus,
    PodSpec,
    PodStatus,
    Queue,
    frozen_map,
)
from contracts.resources import Resources
from contracts.usage import NodeUsage

GANG_SIZES = (1, 1, 2, 4, 8, 8, 16, 32, 64)
GROUP_NAME = "scheduling.k8s.io/group-name"


@dataclass(frozen=True, slots=True)
class Workload:
    nodes: list[Node]
    queues: list[Queue]
    podgroups: list[PodGroup]
    pods: list[Pod]


def make_nodes(count: int) -> list[Node]:
    nodes = []
    for i in range(count):
        spec: dict[str, str | int] = {"cpu": 32, "memory": "256Gi", "pods": 110}
        if i % 4 == 0:
            spec["nvidia.com/gpu"] = 8
        allocatable = Resources.parse(spec)
        labels = {"topology.kubernetes.io/zone": f"zone-{i % 3}", "node-type": "gpu" if i % 4 == 0 else "cpu"}
        nodes.append(
            Node(
                meta=ObjectMeta(
                    name=f"node-{i:05d}", namespace="", uid=f"node-{i:05d}", labels=frozen_map(labels)
                ),
                allocatable=allocatable,
                capacity=allocatable,
            )
        )
    return nodes


def make_workload(node_count: int, pod_count: int, queue_count: int = 20, seed: int = 0) -> Workload:
    rng = random.Random(seed)
    nodes = make_nodes(node_count)
    queues = [
        Queue(
            meta=ObjectMeta(name=f"q{i:02d}", namespace="", uid=f"q{i:02d}", creation_timestamp=float(i)),
            weight=1 + i % 5,
        )
        for i in range(queue_count)
    ]
    podgroups, pods = _gangs(pod_count, queues, rng)
    return Workload(nodes, queues, podgroups, pods)


def make_history(pod_count: int, nodes: Sequence[Node], queues: Sequence[Queue], seed: int = 0) -> list[Any]:
    """Gangs that ran and finished: Completed PodGroups, each followed by its Succeeded pods (spread over
    the nodes), `pod_count` pods in all."""
    podgroups, pods = _gangs(pod_count, queues, random.Random(seed + 1), prefix="done", ran_on=nodes)
    by_group: dict[str, list[Pod]] = {}
    for pod in pods:
        by_group.setdefault(pod.meta.annotations[GROUP_NAME], []).append(pod)
    return [obj for pg in podgroups for obj in (pg, *by_group[pg.meta.name])]


def _gangs(
    pod_count: int,
    queues: Sequence[Queue],
    rng: random.Random,
    *,
    prefix: str = "job",
    ran_on: Sequence[Node] = (),
) -> tuple[list[PodGroup], list[Pod]]:
    """Gangs of GANG_SIZES pods over the queues in turn: pending, or finished on the nodes `ran_on`."""
    podgroups: list[PodGroup] = []
    pods: list[Pod] = []
    created = 0
    gang_index = 0
    while created < pod_count:
        size = min(rng.choice(GANG_SIZES), pod_count - created)
        name = f"{prefix}-{gang_index:06d}"
        queue = queues[gang_index % len(queues)].meta.name
        gpu = rng.random() < 0.1
        request = {"cpu": rng.choice((1, 2, 2, 4)), "memory": f"{rng.choice((2, 4, 8, 16))}Gi"}
        if gpu:
            request["nvidia.com/gpu"] = rng.choice((1, 2))
        requests = Resources.parse(request)
        # one spec object per gang, as pods stamped from one template are alike
        spec = PodSpec(containers=(Container(name="main", requests=requests),), scheduler_name="volcano")
        podgroups.append(
            PodGroup(
                meta=ObjectMeta(name=name, namespace="bench", uid=name, creation_timestamp=float(gang_index)),
                min_member=size,
                queue=queue,
                min_resources=requests.times(size),
                status=PodGroupStatus(phase="Completed" if ran_on else "Pending"),
            )
        )
        annotations = frozen_map({GROUP_NAME: name, "volcano.sh/task-spec": "worker"})
        for i in range(size):
            pod_name = f"{name}-worker-{i}"
            pod_spec, status = spec, PodStatus(phase="Pending")
            if ran_on:
                pod_spec = replace(spec, node_name=ran_on[(created + i) % len(ran_on)].meta.name)
                status = PodStatus(phase="Succeeded", exit_code=0)
            pods.append(
                Pod(
                    meta=ObjectMeta(
                        name=pod_name,
                        namespace="bench",
                        uid=pod_name,
                        annotations=annotations,
                        creation_timestamp=float(gang_index),
                    ),
                    spec=pod_spec,
                    status=status,
                )
            )
        created += size
        gang_index += 1
    return podgroups, pods


def node_usage(nodes: Sequence[Node], seed: int) -> dict[str, NodeUsage]:
    """A usage sample per node, up to half its cpu and memory busy (seeded), listing no pod: every pod on
    a node is one the usage plugin estimates."""
    rng = random.Random(seed)
    samples = {}
    for node in nodes:
        cpu = round(node.allocatable.get("cpu", 0) * rng.uniform(0, 0.5))
        memory = round(node.allocatable.get("memory", 0) / 1000 * rng.uniform(0, 0.5))
        samples[node.meta.name] = NodeUsage(
            node=node.meta.name,
            time=0.0,
            cpu_milli=cpu,
            memory_bytes=memory,
            cpu_avg_milli=cpu,
            memory_avg_bytes=memory,
            window_s=120.0,
        )
    return samples
