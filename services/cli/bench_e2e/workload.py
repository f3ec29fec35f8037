"""The e2e benchmark's workload (pure): gang jobs of min_pods..max_pods pods, each pod asking 1 cpu, all of
one job's pods a gang (minAvailable = replicas), running `duration` on the sim runtime, and when each job is
published (a burst, or a steady pod arrival rate)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

NAMESPACE = "bench"


@dataclass(frozen=True, slots=True)
class BenchJob:
    name: str
    pods: int
    manifest: dict[str, Any]


def bench_jobs(
    count: int, *, min_pods: int, max_pods: int, duration: str, seed: int, prefix: str = "bench"
) -> list[BenchJob]:
    """`count` jobs with a pod count drawn uniformly from min_pods..max_pods (seeded: the same arguments
    give the same workload)."""
    if not 1 <= min_pods <= max_pods:
        raise ValueError(f"pods per job: expected 1 <= min <= max, got {min_pods}..{max_pods}")
    rng = random.Random(seed)
    jobs = []
    for index in range(count):
        pods = rng.randint(min_pods, max_pods)
        name = f"{prefix}-{index:06d}"
        jobs.append(BenchJob(name, pods, job_manifest(name, pods, duration)))
    return jobs


def job_manifest(name: str, pods: int, duration: str) -> dict[str, Any]:
    container = {
        "name": "work",
        "image": "busybox",
        "command": ["sh", "-c", "true"],
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "annotations": {"lahar.dev/sim-duration": duration},
        },
        "spec": {
            "minAvailable": pods,
            "queue": "default",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": pods,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


def arrival_offsets(jobs: list[BenchJob], pods_per_s: float | None) -> list[float]:
    """When each job is published, in seconds from the first: all at 0 for a burst; otherwise each job
    once the pods before it have arrived at pods_per_s."""
    if pods_per_s is None:
        return [0.0] * len(jobs)
    if pods_per_s <= 0:
        raise ValueError(f"arrival rate: expected a positive number of pods/s, got {pods_per_s}")
    offsets, before = [], 0
    for job in jobs:
        offsets.append(before / pods_per_s)
        before += job.pods
    return offsets
