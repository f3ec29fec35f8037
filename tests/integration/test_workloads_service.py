"""The job-controller asks admission for the jobs of CronJobs and JobFlows, against real nats-server and
etcd with both services in this process: the jobs are admission's events, with the ids the requests
derive; a refused request is asked again after a wait, and succeeds once the cluster allows it; deleting
a CronJob deletes its jobs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.waiting import Eventually

from contracts.codec import decode_object
from services.admission.service import AdmissionConfig, AdmissionService
from services.job_controller.service import JobControllerConfig, JobControllerService
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream, intake_stream
from shared.bus.subjects import EVENTS_STREAM, parse_event_subject
from shared.runner_types import derived_event_id
from shared.store.etcd import Etcd
from shared.store.read_model import ReadModel
from shared.telemetry.metrics import Registry

FAST: dict[str, Any] = {"reconcile_interval_s": 0.2, "checkpoint_every_s": 3600, "leader_lease_ttl_s": 1}


def spec(priority: str = "", indent: str = "  ") -> str:
    lines = [
        "queue: default",
        "tasks:",
        "  - name: worker",
        "    replicas: 1",
        "    template:",
        "      spec:",
        *([f"        priorityClassName: {priority}"] if priority else []),
        "        containers: [{name: main, image: busybox, command: [sleep, '1']}]",
    ]
    return "".join(f"\n{indent}{line}" for line in lines)


TEMPLATE = (
    "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nmetadata: {name: prepare}\nspec:" + spec()
)
JOBFLOW = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: nightly}
spec: {flows: [{name: prepare}]}
"""


def cronjob(*, every: str, priority: str) -> str:
    head = "apiVersion: batch.volcano.sh/v1alpha1\nkind: CronJob\nmetadata: {name: tick}\nspec:\n"
    return head + f"  schedule: '@every {every}'\n  jobTemplate:\n    spec:" + spec(priority, "      ")


PRIORITY = "{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 10}"


@pytest.fixture
async def services(bus: Bus, etcd: Etcd) -> AsyncIterator[tuple[AdmissionService, JobControllerService]]:
    await bus.ensure_streams([events_stream(), intake_stream()])
    admission = AdmissionService(bus, etcd, AdmissionConfig(**FAST), registry=Registry())
    controller = JobControllerService(
        bus, etcd, JobControllerConfig(instance_id="a", **FAST), registry=Registry()
    )
    await admission.run_until_idle(15)
    await controller.run_until_idle(15)
    yield admission, controller
    await controller.shutdown()
    await admission.shutdown()


async def apply(bus: Bus, text: str) -> dict[str, Any]:
    reply = await bus.nc.request("lahar.api.apply", text.encode(), timeout=10)
    answer = json.loads(reply.data)
    assert answer["accepted"], answer
    return answer


async def delete(bus: Bus, kind: str, name: str) -> None:
    body = json.dumps({"kind": kind, "namespace": "default", "name": name}).encode()
    answer = json.loads((await bus.nc.request("lahar.api.delete", body, timeout=10)).data)
    assert answer["accepted"], answer


async def job_events(bus: Bus) -> list[tuple[str, str, str, str | None]]:
    """(type, job name, event id, causation id) of every JobSubmitted and JobDeleted."""
    found = []
    async for record in bus.replay(EVENTS_STREAM):
        ref = parse_event_subject(record.subject)
        if ref.type in ("JobSubmitted", "JobDeleted"):
            env = record.envelope()
            found.append((ref.type, ref.name, env.id, env.causation_id))
    return found


async def test_a_flows_jobs_are_admissions_events_with_the_requests_ids(
    bus: Bus, etcd: Etcd, services: tuple[AdmissionService, JobControllerService], eventually: Eventually
) -> None:
    await apply(bus, TEMPLATE)
    await apply(bus, JOBFLOW)

    async def submitted() -> list[Any]:
        return [e for e in await job_events(bus) if e[0] == "JobSubmitted"]

    ((_, name, event_id, cause),) = await eventually(submitted, what="the flow's job")
    assert name == "nightly-prepare" and cause is not None and event_id == derived_event_id(cause, 0)
    model = ReadModel(etcd)

    async def shown() -> Any:
        stored = await model.get("jobflow", "default", "nightly")
        return stored and decode_object(stored.object).status.pending_jobs == ("nightly-prepare",)

    await eventually(shown, what="the flow's status in the read model")
    stored = await model.get("jobtemplate", "default", "prepare")
    assert stored is not None and decode_object(stored.object).status.job_depends_on_list == (
        "nightly-prepare",
    )


async def test_a_refused_create_is_asked_again_and_deleting_the_cronjob_deletes_its_jobs(
    bus: Bus, services: tuple[AdmissionService, JobControllerService], eventually: Eventually
) -> None:
    _, controller = services
    await apply(bus, PRIORITY)
    # its jobs need the PriorityClass, removed before the first run (3 s after the CronJob): admission
    # refuses them, and the controller asks again after a wait
    await apply(bus, cronjob(every="3s", priority="high"))
    await delete(bus, "PriorityClass", "high")
    outputs = controller.metrics.outputs

    def refused() -> float:
        return outputs.labels(controller.name, "JobSubmitted", "refused").value

    created = len([e for e in await job_events(bus) if e[0] == "JobSubmitted"])
    await eventually(lambda: refused() >= 1, what="a refused create")
    await apply(bus, PRIORITY)

    async def more_jobs() -> bool:
        return len([e for e in await job_events(bus) if e[0] == "JobSubmitted"]) > created

    await eventually(more_jobs, what="the create asked again", timeout_s=30)
    await delete(bus, "CronJob", "tick")

    async def all_deleted() -> bool:
        events = await job_events(bus)
        made = {name for t, name, _, _ in events if t == "JobSubmitted"}
        return made == {name for t, name, _, _ in events if t == "JobDeleted"}

    await eventually(all_deleted, what="the CronJob's jobs deleted", timeout_s=30)
