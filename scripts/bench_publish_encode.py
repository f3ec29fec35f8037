"""What a publisher pays to turn a gang's PodCreated outputs into the bytes of their bundle, per event
(docs/benchmarks.md, "Encoding what is published"): grouping into bundles (which measures each
PodCreated's payload), building the bundle's envelope (each payload checked as its own type), and
encoding the envelope.

    PYTHONPATH=. python scripts/bench_publish_encode.py

Gangs of 8 pods of a two-task job; medians of 9 rounds, each the best of 3 repeats.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable

from contracts import codec, payloads
from contracts.job_shape import default_job
from contracts.objects import Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec
from contracts.resources import Resources
from services.job_controller.core.expand import pod_for
from shared.bus.bundles import bundle_envelope, group_for_bundles
from shared.runner_types import Output

ROUNDS = 9
GANG = 8


def gang_outputs() -> list[Output]:
    spec = PodSpec(
        containers=(Container(name="main", image="busybox", requests=Resources.parse({"cpu": "1"})),)
    )
    tasks = tuple(
        TaskSpec(name=name, replicas=replicas, template=PodTemplate(spec=spec))
        for name, replicas in (("ps", 1), ("worker", GANG - 1))
    )
    job = default_job(Job(meta=ObjectMeta(name="train", namespace="team-a"), tasks=tasks))
    outputs = []
    for task in job.tasks:
        for index in range(task.replicas):
            pod = pod_for(job, task, index, created_at=1.0)
            outputs.append(
                Output(
                    type="PodCreated",
                    kind="pod",
                    namespace="team-a",
                    name=pod.meta.name,
                    id=f"created-{pod.meta.name}",
                    correlation_id="team-a/train",
                    payload=payloads.PodCreated(object=codec.encode_object(pod)),
                )
            )
    return outputs


def per_event_us(fn: Callable[[], object], events: int, number: int = 200) -> float:
    return min(timeit.repeat(fn, number=number, repeat=3)) / number / events * 1e6


def main() -> None:
    outputs = gang_outputs()
    (group,) = group_for_bundles(outputs, {})
    envelope = bundle_envelope(group, time=1.0, producer="job-controller", traceparents=[None] * len(group))[
        0
    ]

    def grouping() -> object:
        return group_for_bundles(outputs, {})

    def building() -> object:
        return bundle_envelope(group, time=1.0, producer="job-controller", traceparents=[None] * len(group))

    figures = {
        "group_for_bundles": grouping,
        "bundle_envelope": building,
        "Envelope.encode": envelope.encode,
    }
    medians = {
        name: statistics.median(per_event_us(fn, len(outputs)) for _ in range(ROUNDS))
        for name, fn in figures.items()
    }
    for name, value in medians.items():
        print(f"{name:18s} {value:6.2f} us per event")
    print(f"{'all':18s} {sum(medians.values()):6.2f} us per event")


if __name__ == "__main__":
    main()
