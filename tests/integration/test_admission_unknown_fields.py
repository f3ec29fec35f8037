"""Unknown fields through the admission service against real nats-server and etcd: the apply API refuses a
typo with the nearest known field and writes nothing, accepts it with `Lahar-Validate: warn` and says
so in the reply's warnings; the intake rejects it (a ManifestRejected naming the field) unless its
message carries the same header."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.waiting import Eventually

from services.admission.service import AdmissionConfig, AdmissionService
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream, intake_stream
from shared.bus.subjects import EVENTS_STREAM, INTAKE_STREAM, intake_subject
from shared.client import LaharClient
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry


def job_yaml(name: str) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  minAvaliable: 1
  tasks:
    - name: worker
      replicas: 1
      template:
        spec:
          containers:
            - name: main
              image: busybox
              resoures: {{requests: {{cpu: 500m}}}}
"""


MIN_AVAILABLE = {
    "path": "spec.minAvaliable",
    "message": 'unknown field "minAvaliable"; did you mean "minAvailable"?',
}
RESOURCES = {
    "path": "spec.tasks[0].template.spec.containers[0].resoures",
    "message": 'unknown field "resoures"; did you mean "resources"?',
}


@pytest.fixture
async def admission(bus: Bus, etcd: Etcd) -> AsyncIterator[AdmissionService]:
    await bus.ensure_streams([events_stream(), intake_stream()])
    config = AdmissionConfig(reconcile_interval_s=0.5, checkpoint_every_s=3600)
    service = AdmissionService(bus, etcd, config, registry=Registry())
    await service.run_until_idle(15)
    yield service
    await service.shutdown()


async def apply(bus: Bus, text: str, **headers: str) -> dict[str, Any]:
    reply = await bus.nc.request("lahar.api.apply", text.encode(), timeout=10, headers=headers or None)
    return json.loads(reply.data)


def located(entries: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"path": e["path"], "message": e["message"]} for e in entries]


async def test_the_api_refuses_a_typo_naming_the_field_it_meant_and_writes_nothing(
    bus: Bus, admission: AdmissionService
) -> None:
    for headers in ({}, {"Lahar-Validate": "strict"}, {"Lahar-Validate": "true"}):
        answer = await apply(bus, job_yaml("train"), **headers)
        assert (answer["accepted"], answer["code"]) == (False, "invalid")
        assert located(answer["errors"]) == [MIN_AVAILABLE, RESOURCES]
        assert answer["errors"][0]["document"] == "request#1 (Job default/train)"
    assert await bus.last_seq(EVENTS_STREAM) == 0


async def test_the_api_accepts_a_typo_with_warn_and_returns_the_warnings(
    bus: Bus, etcd: Etcd, admission: AdmissionService
) -> None:
    answer = await apply(bus, job_yaml("train"), **{"Lahar-Validate": "warn"})
    assert answer["accepted"] and answer["code"] == "ok" and answer["errors"] == []
    assert located(answer["warnings"]) == [MIN_AVAILABLE, RESOURCES]
    assert answer["objects"] == [
        {"kind": "Job", "namespace": "default", "name": "train", "action": "created"}
    ]
    # the client sends the header and reads the warnings back
    client = LaharClient(bus, etcd)
    again = await client.apply(job_yaml("again"), validate="warn", source="job.yaml")
    assert again.accepted and [w["path"] for w in again.warnings] == [
        MIN_AVAILABLE["path"],
        RESOURCES["path"],
    ]
    assert again.warnings[0]["document"] == "job.yaml#1 (Job default/again)"
    ignored = await client.apply(job_yaml("ignored"), validate="ignore")
    assert ignored.accepted and ignored.warnings == ()
    refused = await client.apply(job_yaml("refused"))
    assert not refused.accepted and [e["path"] for e in refused.errors][:1] == [MIN_AVAILABLE["path"]]


async def test_the_api_names_a_mode_it_does_not_know(bus: Bus, admission: AdmissionService) -> None:
    answer = await apply(bus, job_yaml("train"), **{"Lahar-Validate": "lenient"})
    assert answer["code"] == "invalid"
    assert [(e["path"], e["message"]) for e in answer["errors"]] == [
        ("Lahar-Validate", "expected strict, warn or ignore (or true, false), got 'lenient'")
    ]


async def test_the_intake_rejects_a_typo_unless_the_message_asks_for_warnings(
    bus: Bus, admission: AdmissionService, eventually: Eventually
) -> None:
    await bus.js.publish(intake_subject("job", "default", "strict"), job_yaml("strict").encode())
    await bus.js.publish(
        intake_subject("job", "default", "warned"),
        job_yaml("warned").encode(),
        headers={"Lahar-Validate": "warn"},
    )

    async def settled() -> bool:
        info = await bus.jsm.stream_info(INTAKE_STREAM)
        return info.state.messages == 0 and await admission.idle()

    await eventually(settled, what="both intake messages admitted or rejected and acknowledged")
    log = [(r.subject, r.envelope()) async for r in bus.replay(EVENTS_STREAM)]
    assert {(subject, envelope.type) for subject, envelope in log} == {
        ("lahar.ev.rejection.admission.ManifestRejected.default.strict", "ManifestRejected"),
        ("lahar.ev.job.admission.JobSubmitted.default.warned", "JobSubmitted"),
    }
    (rejection,) = [envelope for _, envelope in log if envelope.type == "ManifestRejected"]
    assert located(rejection.payload["errors"]) == [MIN_AVAILABLE, RESOURCES]
