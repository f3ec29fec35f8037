"""Intake messages admission cannot handle end in the dead letters, never in a crash loop or stranded on
the intake stream; against real nats-server and etcd.

Nothing a producer can publish makes admission raise today (every parse error is a rejection), so the
bug is simulated where one would surface: the port's submit_many, the one path from a manifest to the
log, raises for one chosen manifest."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence

import pytest
from support.waiting import Eventually

from contracts.bus_messages import DeadLetter
from services.admission import intake
from services.admission.intake import Unavailable
from services.admission.service import AdmissionConfig, AdmissionService
from services.admission.submission import Submission, Submitted
from shared.bus.jetstream import Bus
from shared.bus.poison import read_dead_letters
from shared.bus.streams import events_stream, intake_stream
from shared.bus.subjects import EVENTS_STREAM, INTAKE_STREAM, intake_subject
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry


def job_yaml(name: str) -> bytes:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  queue: default
  minAvailable: 1
  tasks:
    - name: worker
      replicas: 1
      template:
        spec:
          containers:
            - name: main
              image: busybox
              command: [sleep, "1"]
              resources: {{requests: {{cpu: 500m}}}}
""".encode()


def names(submission: Submission) -> set[str]:
    # an intake submission's requests do not depend on the context they are decided in
    return {r.object.meta.name for r in submission.build(None) if r.object is not None}  # type: ignore[arg-type]


async def admission_failing_on(bus: Bus, etcd: Etcd, poison: str, error: Exception) -> AdmissionService:
    """An admission service whose submissions raise `error` whenever they hold the job named poison."""
    await bus.ensure_streams([events_stream(), intake_stream()])
    service = AdmissionService(bus, etcd, AdmissionConfig(reconcile_interval_s=0.5), registry=Registry())
    assert service.intake is not None
    port = service.intake.port
    real = port.submit_many

    async def submit_many(submissions: Sequence[Submission]) -> list[Submitted | Exception]:
        if any(poison in names(s) for s in submissions):
            raise error
        return await real(submissions)

    service.intake.port = dataclasses.replace(port, submit_many=submit_many)
    return service


@pytest.fixture
async def cleanup() -> AsyncIterator[list[AdmissionService]]:
    services: list[AdmissionService] = []
    yield services
    for service in services:
        await service.shutdown()


async def settled(bus: Bus, letters: int) -> list[DeadLetter] | None:
    if (await bus.jsm.stream_info(INTAKE_STREAM)).state.messages:
        return None
    found = [letter for _, letter in await read_dead_letters(bus)]
    return found if len(found) == letters else None


async def types_by_subject(bus: Bus) -> dict[str, str]:
    return {r.subject: r.envelope().type async for r in bus.replay(EVENTS_STREAM)}


async def test_a_manifest_whose_handling_raises_is_tried_three_times_then_dead_lettered_and_rejected(
    bus: Bus, etcd: Etcd, cleanup: list[AdmissionService], eventually: Eventually
) -> None:
    service = await admission_failing_on(bus, etcd, "poison", RuntimeError("a bug this manifest reaches"))
    cleanup.append(service)
    await service.run_until_idle(15)
    await bus.js.publish(intake_subject("job", "default", "poison"), job_yaml("poison"))
    await bus.js.publish(intake_subject("job", "default", "train"), job_yaml("train"))

    (letter,) = await eventually(
        lambda: settled(bus, 1), what="the poison manifest dead-lettered", timeout_s=20
    )
    assert (letter.stream, letter.consumer, letter.reason) == (INTAKE_STREAM, "admission", "handling_failed")
    assert (
        letter.deliveries == 3 and letter.data == job_yaml("poison") and letter.answer == "ManifestRejected"
    )
    assert (
        letter.subject == intake_subject("job", "default", "poison") and letter.error_type == "RuntimeError"
    )
    log = await types_by_subject(bus)
    # the manifest fetched beside it was admitted: one bad manifest fails only itself
    assert log["lahar.ev.job.admission.JobSubmitted.default.train"] == "JobSubmitted"
    rejected = [r async for r in bus.replay(EVENTS_STREAM) if r.envelope().type == "ManifestRejected"]
    assert [r.subject for r in rejected] == ["lahar.ev.rejection.admission.ManifestRejected.default.poison"]
    (error,) = rejected[0].envelope().payload["errors"]
    assert "RuntimeError: a bug this manifest reaches" in error["message"]
    assert service.admission_metrics.intake.labels("dead_letter").value == 1
    assert service.admission_metrics.intake.labels("retried").value == 2
    assert service.health()["ok"]


async def test_a_manifest_whose_transient_failure_outlasts_its_deliveries_is_dead_lettered(
    bus: Bus,
    etcd: Etcd,
    cleanup: list[AdmissionService],
    eventually: Eventually,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(intake, "_MAX_DELIVER", 2)  # the consumer's bound, kept short for the test
    service = await admission_failing_on(bus, etcd, "stuck", Unavailable("the view lags the log"))
    cleanup.append(service)
    await service.run_until_idle(15)
    await bus.js.publish(intake_subject("job", "default", "stuck"), job_yaml("stuck"))

    (letter,) = await eventually(
        lambda: settled(bus, 1), what="the stuck manifest dead-lettered", timeout_s=20
    )
    assert (letter.reason, letter.deliveries, letter.error_type) == ("retries_exhausted", 2, "Unavailable")
    assert letter.answer == "ManifestRejected"
    assert list((await types_by_subject(bus)).values()) == ["ManifestRejected"]
