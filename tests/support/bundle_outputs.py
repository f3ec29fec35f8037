"""Outputs as the writers of bundled events make them, for the tests of bundles (shared/bus/bundles.py):
a pod's event (`out`), a Job's or PodGroup's (`status`), and the groups they were put in, by name."""

from __future__ import annotations

from dataclasses import replace

from contracts import payloads
from contracts.codec import encode_object
from shared.runner_types import Output, deterministic_id
from support.builders import pod, podgroup
from support.payload_examples import EXAMPLES


def out(kind_type: str, name: str, job: str = "train", **fields: object) -> Output:
    payload: payloads.Payload
    if kind_type == "PodBound":
        payload = payloads.PodBound(node="node-1", plan="p")
    elif kind_type == "PodRunning":
        payload = payloads.PodRunning(node="node-1", started_at=1.0)
    elif kind_type == "PodSucceeded":
        payload = payloads.PodSucceeded(node="node-1", finished_at=2.0)
    elif kind_type == "PodCreated":
        payload = payloads.PodCreated(object=encode_object(pod(name, job)))
    else:
        payload = payloads.PodFailed(node="node-1")
    base = Output(
        type=kind_type,
        kind="pod",
        namespace="default",
        name=name,
        id=deterministic_id("test", kind_type, name),
        correlation_id=f"default/{job}",
        payload=payload,
        causation_id="cause",
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def names(groups: list[list[Output]]) -> list[list[str]]:
    return [[f"{o.type}:{o.name}" for o in group] for group in groups]


def podgroup_created(job: str) -> payloads.PodGroupCreated:
    return payloads.PodGroupCreated(object=encode_object(podgroup(job)))


def status(event_type: str, job: str, **fields: object) -> Output:
    """A status change of the job's Job (JobStatusChanged) or PodGroup (PodGroupStatusChanged)."""
    base = Output(
        type=event_type,
        kind="job" if event_type == "JobStatusChanged" else "podgroup",
        namespace="default",
        name=job,
        id=deterministic_id("test", event_type, job),
        correlation_id=f"default/{job}",
        payload=EXAMPLES[event_type],
        causation_id=f"plan-{job}",
    )
    return replace(base, **fields)  # type: ignore[arg-type]
