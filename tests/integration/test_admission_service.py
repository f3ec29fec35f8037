"""The admission service against real nats-server and etcd: the request/reply API, the intake stream,
dry runs, per-object compare-and-set between two instances, and traces starting at the request."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.waiting import Eventually

from contracts.bus_messages import DeadLetter
from contracts.payloads import JobSecretCreated
from services.admission.service import AdmissionConfig, AdmissionService
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.poison import read_dead_letters
from shared.bus.streams import events_stream, intake_stream
from shared.bus.subjects import EVENTS_STREAM, INTAKE_STREAM, intake_subject
from shared.security.sealing import open_job_secret
from shared.security.secret_keys import issue_secrets_keys, load_private_key
from shared.servers import EtcdServer, NatsServer, free_port
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry
from shared.telemetry.tracing import setup_tracing

REJECTED = "lahar.ev.rejection.admission.ManifestRejected"  # + .<namespace>.<name>

REPO = Path(__file__).resolve().parents[2]

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def job_yaml(
    name: str = "train",
    replicas: int = 2,
    queue: str = "default",
    namespace: str = "default",
    min_available: int = 1,
) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  queue: {queue}
  minAvailable: {min_available}
  tasks:
    - name: worker
      replicas: {replicas}
      template:
        spec:
          containers:
            - name: main
              image: busybox
              command: [sleep, "1"]
              resources: {{requests: {{cpu: 500m}}}}
"""


QUEUE_YAML = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 2}
"""

Make = Callable[..., AdmissionService]


@pytest.fixture
async def make(bus: Bus, etcd: Etcd) -> AsyncIterator[Make]:
    await bus.ensure_streams([events_stream(), intake_stream()])
    made: list[AdmissionService] = []

    def build(**overrides: Any) -> AdmissionService:
        config = AdmissionConfig(reconcile_interval_s=0.5, checkpoint_every_s=3600, **overrides)
        service = AdmissionService(bus, etcd, config, registry=Registry())
        made.append(service)
        return service

    yield build
    for service in made:
        await service.shutdown()


@pytest.fixture
async def admission(make: Make) -> AdmissionService:
    service = make(max_request_bytes=64 * 1024)
    await service.run_until_idle(15)
    return service


async def request(bus: Bus, verb: str, body: str | bytes | dict[str, Any], **headers: str) -> dict[str, Any]:
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    data = data.encode() if isinstance(data, str) else data
    reply = await bus.nc.request(f"lahar.api.{verb}", data, timeout=10, headers=headers or None)
    return json.loads(reply.data)


async def events(bus: Bus) -> list[tuple[str, str, Envelope]]:
    return [(r.subject, r.envelope().type, r.envelope()) async for r in bus.replay(EVENTS_STREAM)]


async def test_apply_appends_the_accepted_events_and_answers_with_each_object(
    bus: Bus, admission: AdmissionService
) -> None:
    answer = await request(
        bus, "apply", QUEUE_YAML + "---\n" + job_yaml(queue="research"), traceparent=TRACEPARENT
    )
    assert answer["accepted"] and answer["code"] == "ok" and answer["errors"] == []
    assert answer["objects"] == [
        {"kind": "Queue", "namespace": "", "name": "research", "action": "created"},
        {"kind": "Job", "namespace": "default", "name": "train", "action": "created"},
    ]
    log = await events(bus)
    assert [(s, t) for s, t, _ in log] == [
        ("lahar.ev.queue.admission.QueueApplied._.research", "QueueApplied"),
        ("lahar.ev.job.admission.JobSubmitted.default.train", "JobSubmitted"),
    ]
    job = log[1][2]
    assert answer["seq"] == 2 and admission.seq == 2  # answered once the view holds its own events
    assert job.producer == "admission" and job.correlation_id == "default/train"
    assert job.payload["object"]["object"]["queue"] == "research"
    assert job.payload["object"]["object"]["meta"]["uid"]  # identity given on creation
    # the job's trace starts at the request (here a child of the caller's trace)
    assert job.traceparent is not None and job.traceparent.split("-")[1] == TRACEPARENT.split("-")[1]

    again = await request(bus, "apply", job_yaml(queue="research"))
    assert again["objects"][0]["action"] == "unchanged" and await bus.last_seq(EVENTS_STREAM) == 2
    scaled = await request(bus, "apply", job_yaml(queue="research", replicas=3))
    assert scaled["objects"][0]["action"] == "configured"
    assert [t for _, t, _ in await events(bus)][-1] == "JobUpdated"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("kind: Job\nmetadata: [unclosed", "YAML syntax error"),
        ("apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n", "expected one of"),
        (job_yaml(replicas=-1), "replicas"),
        (job_yaml(queue="nowhere"), "nowhere"),
        ("a: &x [1]\nb: *x\n", "aliases"),
        # a plain pod nobody here would schedule (no schedulerName: Kubernetes' default scheduler)
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n", "no scheduler"),
        ("", "holds no object"),
        (b"\xff\xfe\x00junk", "not UTF-8"),
        ("x" * 70_000, "limit is 65536"),
        (QUEUE_YAML + "---\n" + job_yaml(replicas=-1), "replicas"),  # one bad document refuses all
    ],
)
async def test_bad_apply_requests_get_every_error_and_leave_no_trace(
    bus: Bus, admission: AdmissionService, body: str | bytes, fragment: str
) -> None:
    before = await bus.last_seq(EVENTS_STREAM)
    answer = await request(bus, "apply", body)
    assert not answer["accepted"] and answer["code"] == "invalid" and answer["objects"] == []
    assert any(fragment in e["message"] or fragment in e["path"] for e in answer["errors"]), answer
    assert await bus.last_seq(EVENTS_STREAM) == before


async def test_every_error_of_a_document_is_reported_with_its_path(
    bus: Bus, admission: AdmissionService
) -> None:
    answer = await request(bus, "apply", job_yaml(min_available=5, queue="nowhere"))
    paths = {e["path"] for e in answer["errors"]}
    assert {"spec.minAvailable", "spec.queue"} <= paths, answer
    assert all(e["document"].startswith("request#1 (Job default/train)") for e in answer["errors"])


async def test_dry_run_decides_without_writing(bus: Bus, admission: AdmissionService) -> None:
    answer = await request(bus, "apply", job_yaml(), **{"Lahar-Dry-Run": "true"})
    assert answer["accepted"] and answer["dry_run"] and answer["objects"][0]["action"] == "created"
    assert await bus.last_seq(EVENTS_STREAM) == 0


MPI_PLUGINS = "  plugins: {mpi: [--master=master, --worker=worker]}\n"


def mpi_job_yaml(replicas: int = 2) -> str:
    master = job_yaml(replicas=1).split("  tasks:\n")[1].replace("name: worker", "name: master", 1)
    return job_yaml(replicas=replicas).replace("  tasks:\n", MPI_PLUGINS + "  tasks:\n" + master, 1)


async def test_a_job_with_the_ssh_plugin_gets_one_key_pair_with_its_submission(
    bus: Bus, admission: AdmissionService
) -> None:
    answer = await request(bus, "apply", mpi_job_yaml())
    assert answer["accepted"], answer
    log = await events(bus)
    assert [(s, t) for s, t, _ in log] == [
        ("lahar.ev.job.admission.JobSubmitted.default.train", "JobSubmitted"),
        ("lahar.ev.job.admission.JobSecretCreated.default.train", "JobSecretCreated"),
    ]
    submitted, secret = log[0][2], log[1][2]
    assert "ssh" in submitted.payload["object"]["object"]["plugins"]  # the mpi plugin brings ssh
    assert secret.payload["name"] == "train-ssh"
    assert secret.payload["uid"] == submitted.payload["object"]["object"]["meta"]["uid"]
    private, public = secret.payload["data"]["id_rsa"], secret.payload["data"]["id_rsa.pub"]
    assert private.startswith("-----BEGIN RSA PRIVATE KEY-----") and public.startswith("ssh-rsa ")
    assert secret.correlation_id == "default/train"

    scaled = await request(bus, "apply", mpi_job_yaml(replicas=3))  # an update keeps the pair
    assert scaled["objects"][0]["action"] == "configured"
    assert [t for _, t, _ in await events(bus)][2:] == ["JobUpdated"]
    plain = await request(bus, "apply", job_yaml(name="plain"))
    assert plain["accepted"] and [t for _, t, _ in await events(bus)][3:] == ["JobSubmitted"]


async def test_with_the_node_agents_key_the_pair_is_written_sealed_to_it(
    bus: Bus, make: Make, tmp_path: Path
) -> None:
    keys = issue_secrets_keys(tmp_path / "creds")
    service = make(secrets_public_key=str(keys.public))
    await service.run_until_idle(15)
    answer = await request(bus, "apply", mpi_job_yaml())
    assert answer["accepted"], answer
    (_, _, submitted), (_, _, secret) = await events(bus)
    payload = msgspec.convert(dict(secret.payload), JobSecretCreated)
    assert payload.data == {} and b"PRIVATE KEY" not in msgspec.json.encode(payload)
    uid = submitted.payload["object"]["object"]["meta"]["uid"]
    opened = open_job_secret(load_private_key(keys.private), "default", "train", payload)
    assert opened["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----") and secret.payload["uid"] == uid


async def test_without_a_key_generator_an_ssh_job_is_refused_for_now_and_nothing_is_written(
    bus: Bus, make: Make, tmp_path: Path
) -> None:
    service = make(ssh_keygen=str(tmp_path / "no-ssh-keygen"))
    await service.run_until_idle(15)
    answer = await request(bus, "apply", mpi_job_yaml())
    assert not answer["accepted"] and answer["code"] == "unavailable"
    assert "ssh key pair" in answer["errors"][0]["message"]
    assert await bus.last_seq(EVENTS_STREAM) == 0


async def test_delete_and_commands(bus: Bus, admission: AdmissionService) -> None:
    assert (await request(bus, "apply", QUEUE_YAML + "---\n" + job_yaml()))["accepted"]
    suspended = await request(bus, "command", {"action": "suspend", "namespace": "default", "name": "train"})
    assert suspended["accepted"] and suspended["objects"][0]["action"] == "issued"
    closed = await request(bus, "command", {"action": "close", "name": "research"})
    reweighted = await request(bus, "command", {"action": "update", "name": "research", "weight": 5})
    assert closed["accepted"] and reweighted["accepted"], (closed, reweighted)
    deleted = await request(bus, "delete", {"kind": "Job", "namespace": "default", "name": "train"})
    assert deleted["objects"] == [
        {"kind": "Job", "namespace": "default", "name": "train", "action": "deleted"}
    ]
    log = await events(bus)
    command = log[2][2]
    assert command.type == "CommandIssued" and command.correlation_id == "default/train"
    assert dict(command.payload) == {"action": "AbortJob", "target_kind": "Job", "target": "default/train"}
    assert log[3][2].payload["action"] == "CloseQueue" and log[3][2].payload["target"] == "research"
    assert log[4][1] == "QueueApplied" and log[4][2].payload["object"]["object"]["weight"] == 5
    assert (log[5][0], log[5][1]) == ("lahar.ev.job.admission.JobDeleted.default.train", "JobDeleted")

    reopened = await request(bus, "command", {"action": "OpenQueue", "name": "research"})  # Volcano's name
    assert reopened["accepted"] and reopened["objects"][0]["name"] == "research-openqueue", reopened

    before = await bus.last_seq(EVENTS_STREAM)
    refused = [
        await request(bus, "delete", {"kind": "Job", "namespace": "default", "name": "train"}),
        await request(bus, "delete", {"kind": "Queue", "name": "default"}),
        await request(bus, "delete", {"kind": "Gadget", "name": "x"}),
        await request(bus, "delete", b"not json"),
        await request(bus, "command", {"action": "suspend", "name": "ghost"}),
        await request(bus, "command", {"action": "update", "name": "research", "weight": 0}),
        await request(bus, "command", {"action": "Explode", "name": "research", "target_kind": "Queue"}),
    ]
    assert all(not r["accepted"] and r["errors"] for r in refused), refused
    assert "not found" in refused[0]["errors"][0]["message"]
    assert await bus.last_seq(EVENTS_STREAM) == before


async def test_intake_admits_valid_manifests_and_records_rejections(
    bus: Bus, admission: AdmissionService, eventually: Eventually
) -> None:
    subject = intake_subject("job", "default", "train")
    await bus.js.publish(subject, job_yaml().encode(), headers={"traceparent": TRACEPARENT})
    await bus.js.publish(intake_subject("job", "default", "lost"), job_yaml("lost", queue="nowhere").encode())
    garbage = [b"\x00\x01\x02\xff" * 64, b"", b"[1, 2, 3]", b"kind: Job\n" + b"#" * 70_000]
    for index, data in enumerate(garbage):
        await bus.js.publish(intake_subject("job", "default", f"junk{index}"), data)
    await bus.js.publish("lahar.intake.not-an-object", b"{}")

    async def settled() -> bool:
        info = await bus.jsm.stream_info(INTAKE_STREAM)
        return info.state.messages == 0 and await admission.idle()

    await eventually(settled, what="every intake message admitted or rejected and acknowledged")
    log = await events(bus)
    assert (log[0][0], log[0][1]) == ("lahar.ev.job.admission.JobSubmitted.default.train", "JobSubmitted")
    assert log[0][2].traceparent.split("-")[1] == TRACEPARENT.split("-")[1]  # type: ignore[union-attr]
    rejections = {s: e for s, t, e in log if t == "ManifestRejected"}
    assert set(rejections) == {
        f"{REJECTED}.default.lost",
        *(f"{REJECTED}.default.junk{i}" for i in range(len(garbage))),
        f"{REJECTED}._.intake-7",  # the 7th message of the stream
    }
    lost = rejections[f"{REJECTED}.default.lost"]
    assert lost.correlation_id == "default/lost" and lost.payload["source"].startswith(
        "lahar.intake.job.default.lost#"
    )
    assert any("nowhere" in e["message"] for e in lost.payload["errors"])
    assert all(e.payload["errors"] for e in rejections.values())
    assert admission.health()["ok"]


async def test_two_instances_cannot_both_create_one_job(bus: Bus, make: Make, eventually: Eventually) -> None:
    first, second = make(), make()
    await asyncio.gather(first.run_until_idle(15), second.run_until_idle(15))
    answers = await asyncio.gather(
        *(
            service.api.answer("apply", job_yaml(replicas=r).encode(), {})
            for service, r in ((first, 2), (second, 2), (first, 2), (second, 2))
        )
    )
    assert all(a["accepted"] for a in answers), answers
    assert sorted(a["objects"][0]["action"] for a in answers) == [
        "created",
        "unchanged",
        "unchanged",
        "unchanged",
    ]
    # without the per-object guard both first decisions (on the same empty view) would be stored
    assert [t for _, t, _ in await events(bus)] == ["JobSubmitted"]


async def test_a_restarted_instance_rebuilds_its_view_from_the_checkpoint_and_the_log(
    bus: Bus, make: Make
) -> None:
    first = make(checkpoint_every_events=1)
    await first.run_until_idle(15)
    assert (
        await first.api.answer("apply", (QUEUE_YAML + "---\n" + job_yaml(queue="research")).encode(), {})
    )["accepted"]
    await first.shutdown()
    second = make()
    await second.run_until_idle(15)
    assert second.context().jobs["default/train"].queue == "research"
    assert second.state.subject_seq("job", "default", "train") == 2
    again = await second.api.answer("apply", job_yaml(queue="research").encode(), {})
    assert again["objects"][0]["action"] == "unchanged"


async def test_the_service_process_serves_health_metrics_and_the_api_and_stops_on_sigterm(
    bus: Bus, nats_server: NatsServer, etcd_server: EtcdServer, eventually: Eventually
) -> None:
    """As `lahar up` runs it: python -m services.admission --nats-url --etcd-endpoint --metrics-port N."""
    host, port = etcd_server.endpoint
    metrics_port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.admission",
        "--nats-url",
        nats_server.url,
        "--etcd-endpoint",
        f"{host}:{port}",
        "--metrics-port",
        str(metrics_port),
        cwd=REPO,
        stderr=asyncio.subprocess.PIPE,
    )
    try:

        async def healthy() -> Any:
            status, body = await asyncio.to_thread(http_get, metrics_port, "/healthz")
            return status == 200 and json.loads(body)["api_serving"]

        await eventually(healthy, what="admission to be healthy and serving", timeout_s=30)
        answer = await request(bus, "apply", job_yaml())
        assert answer["accepted"], answer
        _, metrics = await asyncio.to_thread(http_get, metrics_port, "/metrics")
        assert b'lahar_admission_requests_total{result="accepted",verb="apply"} 1.0' in metrics
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def http_get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


async def test_each_request_is_a_span_and_its_events_are_its_children(bus: Bus, etcd: Etcd) -> None:
    await bus.ensure_streams([events_stream(), intake_stream()])
    exporter = InMemorySpanExporter()
    tracer = setup_tracing("admission", exporter, set_global=False).get_tracer("test")
    service = AdmissionService(bus, etcd, AdmissionConfig(), registry=Registry(), tracer=tracer)
    await service.run_until_idle(15)
    try:
        assert (await request(bus, "apply", job_yaml(), traceparent=TRACEPARENT))["accepted"]
        await bus.js.publish(intake_subject("job", "default", "other"), job_yaml("other").encode())
        await service.run_until_idle(15)
    finally:
        await service.shutdown()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    apply, intake = spans["admission apply"], spans["admission intake"]
    assert apply.parent is not None and apply.parent.span_id == int(TRACEPARENT.split("-")[2], 16)
    assert apply.attributes is not None and apply.attributes["lahar.job"] == "default/train"
    log = await events(bus)
    for (_, _, envelope), span in zip(log, (apply, intake), strict=True):
        _, trace_id, span_id, _ = (envelope.traceparent or "").split("-")
        assert (int(trace_id, 16), int(span_id, 16)) == (span.context.trace_id, span.context.span_id)
    assert intake.parent is None  # a producer without a trace: the job's trace starts at admission


# --- bounded input: no message stops admission, every request is answered ---------------------------

MEGABYTE_KIND = "K" * 1_000_000  # quoted whole, twice, its rejection was twice NATS's max payload


def manifest_of_kind(kind: str) -> str:
    return f"apiVersion: v1\nkind: {kind}\nmetadata: {{name: huge}}\n"


async def settled(bus: Bus, admission: AdmissionService) -> bool:
    info = await bus.jsm.stream_info(INTAKE_STREAM)
    return info.state.messages == 0 and await admission.idle()


async def test_a_megabyte_kind_on_the_intake_is_rejected_in_a_bounded_event_and_admission_stays_up(
    bus: Bus, make: Make, eventually: Eventually
) -> None:
    admission = make()  # the default max_request_bytes, 1 MiB: the message is admitted to be read
    await admission.run_until_idle(15)
    await bus.js.publish(intake_subject("job", "default", "huge"), manifest_of_kind(MEGABYTE_KIND).encode())
    await bus.js.publish(intake_subject("job", "default", "train"), job_yaml().encode())
    await eventually(lambda: settled(bus, admission), what="both intake messages settled")

    log = await events(bus)
    # the next one was admitted too (a batch's rejections and admissions are written in either order)
    assert sorted(t for _, t, _ in log) == ["JobSubmitted", "ManifestRejected"]
    [(subject, _, rejected)] = [entry for entry in log if entry[1] == "ManifestRejected"]
    assert subject == f"{REJECTED}.default.huge"
    (error,) = rejected.payload["errors"]
    assert error["path"] == "kind" and "(1000000 characters)" in error["message"]
    assert len(rejected.encode()) < 2_000  # the megabyte is quoted as 64 characters and its length
    assert admission.health()["ok"] and admission.intake is not None
    assert admission.admission_metrics.intake.labels("rejected").value == 1


@pytest.mark.parametrize(
    ("manifest", "path", "fragment"),
    [
        (
            job_yaml(replicas=9223372036854775807),
            "spec.tasks[0].replicas",
            "<= 2147483647 (a 32-bit integer)",
        ),
        (job_yaml(replicas=10_001), "spec.tasks[0].replicas", "max_pods_per_job"),
        (
            job_yaml().replace("cpu: 500m", "cpu: 1e400"),
            "spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
            "at most 9223372036854775807 milli-units",
        ),
    ],
    ids=["replicas-int64", "replicas-over-the-cap", "cpu-1e400"],
)
async def test_values_too_large_are_refused_with_their_field_by_the_api_and_the_intake(
    bus: Bus, admission: AdmissionService, eventually: Eventually, manifest: str, path: str, fragment: str
) -> None:
    answer = await request(bus, "apply", manifest)
    assert answer["code"] == "invalid" and not answer["accepted"], answer  # not "error": no internal failure
    assert [(e["path"], fragment in e["message"]) for e in answer["errors"]] == [(path, True)], answer

    await bus.js.publish(intake_subject("job", "default", "train"), manifest.encode())
    await eventually(lambda: settled(bus, admission), what="the intake message settled")
    ((subject, kind, rejected),) = await events(bus)  # nothing reaches the job-controller
    assert (subject, kind) == (f"{REJECTED}.default.train", "ManifestRejected")
    assert [(e["path"], fragment in e["message"]) for e in rejected.payload["errors"]] == [(path, True)]


@pytest.mark.slow  # admission validates 300 documents of a hundred bad tasks: seconds of CPU
async def test_requests_whose_rejection_would_exceed_the_max_payload_get_a_bounded_reply(
    bus: Bus, make: Make
) -> None:
    admission = make()
    await admission.run_until_idle(15)
    limit = bus.nc.max_payload
    huge_kind = await bus.nc.request("lahar.api.apply", manifest_of_kind(MEGABYTE_KIND).encode(), timeout=10)
    huge_name = await bus.nc.request(
        "lahar.api.delete", json.dumps({"kind": "Job", "name": "n" * 1_000_000}).encode(), timeout=10
    )
    # a thousand documents, each with a hundred errors: far more than one reply holds
    bad_tasks = "".join(f"    - {{name: T{i}, replicas: -1}}\n" for i in range(100))
    bad_job = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
    # seconds of admission's CPU even on an idle machine; what counts is the size of the reply, not the time
    many_errors = await bus.nc.request(
        "lahar.api.apply", "---\n".join([bad_job + bad_tasks] * 300).encode(), timeout=60
    )
    for reply in (huge_kind, huge_name, many_errors):
        assert len(reply.data) < limit // 2
        answer = json.loads(reply.data)
        assert answer["code"] == "invalid" and answer["errors"], answer
    assert json.loads(huge_kind.data)["errors"][0]["path"] == "kind"
    assert json.loads(huge_name.data)["errors"][0]["path"] == "metadata.name"
    listed = json.loads(many_errors.data)["errors"]
    assert len(listed) == 101 and listed[-1]["message"].startswith("and ")  # 100 and how many more
    assert admission.health()["ok"]


async def test_an_intake_rejection_that_cannot_be_published_ends_in_the_dead_letters_not_a_crash(
    bus: Bus, admission: AdmissionService, eventually: Eventually, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish = bus.publish

    async def refuse_rejections(envelope: Envelope, subject: str, **kwargs: Any) -> Any:
        if envelope.type == "ManifestRejected":  # as NATS refuses a message over its max payload
            raise nats.errors.MaxPayloadError
        return await publish(envelope, subject, **kwargs)

    monkeypatch.setattr(bus, "publish", refuse_rejections)
    lost = job_yaml("lost", queue="nowhere").encode()
    await bus.js.publish(intake_subject("job", "default", "lost"), lost)
    await bus.js.publish(intake_subject("job", "default", "train"), job_yaml().encode())

    async def dead_lettered() -> list[DeadLetter] | None:
        letters = [letter for _, letter in await read_dead_letters(bus)]
        return letters if letters and await settled(bus, admission) else None

    (letter,) = await eventually(dead_lettered, what="the unrejectable manifest dead-lettered", timeout_s=20)
    assert (letter.data, letter.reason, letter.error_type) == (lost, "handling_failed", "MaxPayloadError")
    assert [t for _, t, _ in await events(bus)] == ["JobSubmitted"]  # the next manifest was admitted
    assert admission.admission_metrics.intake.labels("dead_letter").value == 1
    assert admission.health()["ok"]


async def test_a_valid_manifest_whose_event_would_not_fit_a_message_is_refused_not_fatal(
    bus: Bus, make: Make, eventually: Eventually
) -> None:
    admission = make()
    await admission.run_until_idle(15)
    # within max_request_bytes, but its JobSubmitted (the job, defaulted) is larger than a message holds
    padding = "x" * (bus.nc.max_payload - len(job_yaml()) - 200)
    manifest = job_yaml().replace('command: [sleep, "1"]', f'command: [sleep, "1", "{padding}"]')
    assert len(manifest) < bus.nc.max_payload
    answer = await request(bus, "apply", manifest)
    assert answer["code"] == "invalid" and "bytes a bus message holds" in answer["errors"][0]["message"]

    await bus.js.publish(intake_subject("job", "default", "train"), manifest.encode())
    await bus.js.publish(intake_subject("job", "default", "next"), job_yaml("next").encode())
    await eventually(lambda: settled(bus, admission), what="both intake messages settled")
    log = await events(bus)
    assert sorted(t for _, t, _ in log) == ["JobSubmitted", "ManifestRejected"]
    rejected = next(e for _, t, e in log if t == "ManifestRejected")
    assert "bytes a bus message holds" in rejected.payload["errors"][0]["message"]
    assert admission.health()["ok"]
