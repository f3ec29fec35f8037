"""The cluster commands of `lahar` (apply, get, delete, wait, events, logs, job, queue) as a user runs them
(tests/integration/cli_harness.py): the JSON output is parsed and the exit codes checked."""

from __future__ import annotations

import asyncio
import json
import signal
from dataclasses import replace
from typing import Any

import pytest
from cli_harness import Cli, store

from contracts.bus_messages import DeadLetter, QuarantineRecord, ReconcileFailure
from contracts.objects import Job, JobState, JobStatus, Queue, QueueStatus
from contracts.parse import parse_object
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.poison import encoded, record_quarantined, record_reconcile_failure
from shared.bus.streams import deadletter_stream, quarantine_stream
from shared.bus.subjects import EVENTS_STREAM, dead_letter_subject, event_subject
from shared.store.etcd import Etcd
from shared.store.read_model import ReadModel

JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "default", "labels": {"volcano.sh/job-type": "Train"}},
    "spec": {
        "minAvailable": 2,
        "queue": "research",
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}
                },
            }
        ],
    },
}
QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "research"},
    "spec": {"weight": 2},
}


def stored_job(phase: str, **counts: int) -> Job:
    job = parse_object(JOB, "test")
    assert isinstance(job, Job)
    status = JobStatus(state=JobState(phase=phase), **counts)
    return replace(job, meta=replace(job.meta, creation_timestamp=1_700_000_000.0), status=status)


async def log_types(bus: Bus) -> list[str]:
    return [record.envelope().type async for record in bus.replay(EVENTS_STREAM)]


async def test_apply_reports_each_object_and_refuses_bad_files_with_exit_1(cli: Cli, bus: Bus) -> None:
    good = cli.file("good.yaml", QUEUE, JOB)
    dry = await cli.json("apply", "-f", good, "--dry-run", "-o", "json")
    assert dry["accepted"] and dry["results"][0]["dry_run"] and await log_types(bus) == []

    answer = await cli.json("apply", "-f", good, "-o", "json")
    assert answer["accepted"] and answer["results"][0]["source"] == good
    assert [(o["kind"], o["action"]) for o in answer["results"][0]["objects"]] == [
        ("Queue", "created"),
        ("Job", "created"),
    ]
    assert await log_types(bus) == ["QueueApplied", "JobSubmitted"]

    code, out, _ = await cli("apply", "-f", good)
    assert code == 0 and out.splitlines() == ["queue/research unchanged", "job/train unchanged"]

    bad_job = {**JOB, "spec": {**JOB["spec"], "queue": "nowhere", "minAvailable": 9}}
    bad = cli.file("bad.yaml", bad_job)
    code, out, err = await cli("apply", "-f", bad)
    assert code == 1 and out == ""
    assert f"error: {bad}#1 (Job default/train): spec.queue:" in err and "spec.minAvailable" in err
    assert len(await log_types(bus)) == 2

    code, _, err = await cli("apply", "-f", str(cli.tmp / "missing.yaml"))
    assert code == 1 and "cannot read the file" in err


@pytest.mark.slow  # one CLI process per command
async def test_get_reads_the_read_model_as_tables_and_json(cli: Cli, etcd: Etcd) -> None:
    await store(etcd, stored_job("Running", running=2), seq=5)
    await store(etcd, replace(parse_object(QUEUE, "q"), status=QueueStatus(running=1)), seq=3)

    listing = await cli.json("get", "vcjob", "-o", "json")
    assert listing["kind"] == "List" and [i["metadata"]["name"] for i in listing["items"]] == ["train"]
    one = await cli.json("get", "job", "train", "-o", "json")
    assert one["kind"] == "Job" and one["status"]["state"]["phase"] == "Running"

    code, out, _ = await cli("get", "jobs", "-A", "-o", "wide")
    header, row = out.splitlines()
    base = ["NAMESPACE", "NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE"]
    assert header.split() == [*base, "QUEUE", "PENDING", "SUCCEEDED", "FAILED"]
    assert row.split()[:5] == ["default", "train", "Running", "2", "2"] and code == 0
    code, out, _ = await cli("get", "q")
    assert code == 0 and out.splitlines()[1].split()[:4] == ["research", "2", "Open", "root"]

    code, _, err = await cli("get", "job", "ghost")
    assert code == 1 and 'job "ghost" not found' in err
    code, _, err = await cli("get", "gadgets")
    assert code == 2 and "unknown kind" in err
    code, out, err = await cli("get", "pods", "-n", "elsewhere")
    assert (code, out, err.strip()) == (0, "", "No resources found in elsewhere namespace.")


async def test_get_watch_prints_each_change_until_interrupted(cli: Cli, etcd: Etcd) -> None:
    await store(etcd, stored_job("Pending"), seq=1)
    proc = await cli.start("get", "jobs", "-w", "-o", "json")
    assert proc.stdout is not None
    try:
        first = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        assert first["type"] == "ADDED" and first["object"]["status"]["state"]["phase"] == "Pending"
        await store(etcd, stored_job("Running", running=2), seq=2)
        second = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        assert second["type"] == "MODIFIED" and second["object"]["status"]["running"] == 2
        await ReadModel(etcd).delete("job", "default", "train", seq=3)
        third = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        assert third["type"] == "DELETED"
    finally:
        proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0


@pytest.mark.slow  # one CLI process per command
async def test_job_commands_follow_vcctl(cli: Cli, bus: Bus, etcd: Etcd) -> None:
    code, out, _ = await cli("job", "run", "-N", "hello", "-r", "3", "-m", "2", "--", "sh", "-c", "echo hi")
    assert code == 0 and out.strip() == "run job hello successfully"
    (submitted,) = [r.envelope() async for r in bus.replay(EVENTS_STREAM)]
    spec = submitted.payload["object"]["object"]
    assert spec["min_available"] == 2 and spec["tasks"][0]["replicas"] == 3
    container = spec["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["command"] == ["sh", "-c", "echo hi"] and container["requests"] == {
        "cpu": 1000,
        "memory": 100 * 1024 * 1024 * 1000,
    }

    assert (await cli("job", "suspend", "-N", "hello"))[0] == 0
    assert (await cli("job", "resume", "-N", "hello"))[0] == 0
    code, _, err = await cli("job", "suspend", "-N", "ghost")
    assert code == 1 and "not found" in err
    assert (await cli("job", "delete", "-N", "hello"))[0] == 0
    assert await log_types(bus) == ["JobSubmitted", "CommandIssued", "CommandIssued", "JobDeleted"]
    code, _, err = await cli("job", "run")
    assert code == 2 and "-N NAME" in err

    await store(etcd, stored_job("Running", running=2, pending=1, retry_count=1), seq=9)
    code, out, _ = await cli("job", "list")
    header, row = out.splitlines()
    assert header.split() == [
        "Name",
        "Creation",
        "Phase",
        "JobType",
        "Replicas",
        "Min",
        "Pending",
        "Running",
        "Succeeded",
        "Failed",
        "Unknown",
        "RetryCount",
    ]
    assert row.split() == ["train", "2023-11-14", "Running", "Train", "2", "2", "1", "2", "0", "0", "0", "1"]
    code, out, err = await cli("job", "list", "--name-contains", "nothing-like-it")
    assert (code, out, err.strip()) == (0, "", "No resources found.")
    code, out, _ = await cli("job", "view", "-N", "train")
    assert code == 0 and "Phase:          Running" in out and "worker" in out
    assert (await cli.json("job", "view", "-N", "train", "-o", "json"))["metadata"]["name"] == "train"


@pytest.mark.slow  # one CLI process per command
async def test_queue_commands_follow_vcctl(cli: Cli, bus: Bus, etcd: Etcd) -> None:
    code, out, _ = await cli("queue", "create", "-n", "q1", "-w", "3")
    assert code == 0 and out.strip() == "create queue q1 successfully"
    assert (await cli("queue", "operate", "-n", "q1", "-a", "close"))[0] == 0
    assert (await cli("queue", "operate", "-n", "q1", "-a", "update", "-w", "7"))[0] == 0
    code, _, err = await cli("queue", "operate", "-n", "q1", "-a", "update")
    assert code == 2 and "-w WEIGHT" in err
    envelopes = [r.envelope() async for r in bus.replay(EVENTS_STREAM)]
    assert [e.type for e in envelopes] == ["QueueApplied", "CommandIssued", "QueueApplied"]
    assert envelopes[1].payload["action"] == "CloseQueue"
    assert envelopes[2].payload["object"]["object"]["weight"] == 7

    queue = parse_object(QUEUE, "q")
    assert isinstance(queue, Queue)
    await store(
        etcd, replace(queue, status=QueueStatus(state="Open", inqueue=1, pending=2, running=3)), seq=4
    )
    code, out, _ = await cli("queue", "list")
    rows = [line.split() for line in out.splitlines()]
    assert rows == [
        ["Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed"],
        ["research", "2", "Open", "root", "1", "2", "3", "0", "0"],
    ]
    assert (await cli.json("queue", "get", "-n", "research", "-o", "json"))["spec"]["weight"] == 2
    assert (await cli("queue", "get", "-n", "ghost"))[0] == 1
    assert (await cli("queue", "delete", "-n", "q1"))[0] == 0
    code, _, err = await cli("queue", "delete", "-n", "default")
    assert code == 1 and "can not be deleted" in err


async def test_wait_exits_0_when_reached_1_on_another_final_phase_2_on_timeout(cli: Cli, etcd: Etcd) -> None:
    await store(etcd, stored_job("Running", running=2), seq=1)
    waiter = await cli.start("wait", "job", "train", "--for", "Completed", "--timeout", "30s")
    assert waiter.stderr is not None
    progress = await asyncio.wait_for(waiter.stderr.readline(), 30)  # "waiting up to ..."
    progress = await asyncio.wait_for(waiter.stderr.readline(), 30)
    assert progress.startswith(b"job default/train: Running (pending 0, running 2"), progress
    await store(etcd, stored_job("Completed", succeeded=2), seq=2)
    assert await asyncio.wait_for(waiter.wait(), 30) == 0

    await store(etcd, stored_job("Failed", failed=2), seq=3)
    code, _, err = await cli("wait", "job", "train", "--timeout", "5s")
    assert code == 1 and "ended Failed, not Completed" in err
    await store(etcd, stored_job("Running"), seq=4)
    code, out, err = await cli("wait", "job", "train", "--timeout", "0.5s", "-o", "json")
    assert code == 2 and json.loads(out) == {"reached": False, "phase": "Running", "timed_out": True}
    assert "timed out" in err


def encoded_pod(name: str) -> dict[str, Any]:
    return {"kind": "Pod", "object": {"meta": {"name": name, "namespace": "default"}}}


async def test_events_shows_a_jobs_history_with_producers_and_causes(cli: Cli, bus: Bus) -> None:
    assert (await cli("apply", "-f", cli.file("job.yaml", QUEUE, JOB)))[0] == 0
    submitted = [r.envelope() async for r in bus.replay(EVENTS_STREAM)][1]
    pod = Envelope.create(
        "PodCreated",
        time=submitted.time + 1,
        producer="job-controller",
        correlation_id="default/train",
        payload={"object": encoded_pod("train-worker-0")},
        causation_id=submitted.id,
    )
    await bus.publish(pod, event_subject("pod", "default", "train-worker-0", pod.type, pod.producer))
    other = Envelope.create(
        "PodCreated",
        time=1.0,
        producer="job-controller",
        correlation_id="default/x",
        payload={"object": encoded_pod("x-worker-0")},
    )
    await bus.publish(other, event_subject("pod", "default", "x-worker-0", other.type, other.producer))

    history = await cli.json("events", "train", "-o", "json")
    assert [(e["type"], e["object"], e["producer"]) for e in history] == [
        ("JobSubmitted", "job/train", "admission"),
        ("PodCreated", "pod/train-worker-0", "job-controller"),
    ]
    assert history[0]["cause"].startswith("request ") and history[1]["cause"] == "JobSubmitted job/train"
    code, out, _ = await cli("events", "train")
    assert code == 0 and out.splitlines()[0].split() == [
        "TIME",
        "EVENT",
        "OBJECT",
        "PRODUCER",
        "CAUSE",
        "DETAIL",
    ]
    code, _, err = await cli("events", "ghost")
    assert code == 1 and "no events" in err


async def test_logs_reads_the_pods_output_from_its_node_agent(cli: Cli, bus: Bus) -> None:
    output = "line one\nline two\n"

    async def agent(msg: Any) -> None:  # the node agent's side of lahar.logs.<ns>.<pod>
        offset = json.loads(msg.data)["offset"]
        await msg.respond(json.dumps({"data": output[offset:], "offset": len(output), "done": True}).encode())

    sub = await bus.nc.subscribe("lahar.logs.default.train-worker-0", cb=agent)
    try:
        code, out, _ = await cli("logs", "train-worker-0", "-f")
        assert code == 0 and out == output
    finally:
        await sub.unsubscribe()
    code, _, err = await cli("logs", "nobody-0")
    assert code == 3 and "no node agent" in err


async def test_an_unreachable_cluster_exits_3(cli: Cli) -> None:
    code, _, err = await cli("get", "jobs", "--nats-url", "nats://127.0.0.1:1")
    assert code == 3 and "cannot reach NATS" in err
    env = {k: v for k, v in cli.env.items() if k not in ("LAHAR_NATS_URL", "LAHAR_ETCD_ENDPOINT")}
    code, _, err = await Cli(env, cli.tmp)("job", "list")
    assert code == 3 and "no running lahar stack" in err


async def test_quarantine_and_dead_letters_list_what_the_services_set_aside(cli: Cli, bus: Bus) -> None:
    assert await cli.json("quarantine", "-o", "json") == []  # the streams need not exist yet
    await bus.ensure_streams([quarantine_stream(), deadletter_stream()])
    for service, seq in (("job-controller", 12), ("binder", 30)):
        record = QuarantineRecord(
            service=service,
            seq=seq,
            subject="lahar.ev.job.job-controller.JobStatusChanged.default.train",
            type="JobStatusChanged",
            reason="invalid_payload",
            error_type="PayloadError",
            error="missing required field `counts`",
            time=1_700_000_000.0,
        )
        assert await record_quarantined(bus, record)
        assert not await record_quarantined(bus, record)  # once per (service, seq)
    manifest = b"kind: Job\nmetadata: {name: train}\n"
    letter = DeadLetter(
        stream="LAHAR_INTAKE",
        consumer="admission",
        seq=4,
        subject="lahar.intake.job.default.train",
        headers={},
        data=manifest,
        deliveries=3,
        reason="handling_failed",
        error_type="RuntimeError",
        error="boom",
        answer="ManifestRejected",
        time=1_700_000_000.0,
    )
    await bus.js.publish(dead_letter_subject("LAHAR_INTAKE", "admission"), encoded(letter))

    failure = ReconcileFailure(
        service="job-controller",
        key="('job', 'default/train')",
        seq=12,
        error_type="KeyError",
        error="'counts'",
        time=1_700_000_000.0,
    )
    assert await record_reconcile_failure(bus, failure)

    listed = await cli.json("quarantine", "--service", "job-controller", "-o", "json")
    assert [(r["service"], r["seq"], r["reason"]) for r in listed] == [
        ("job-controller", 12, "invalid_payload")
    ]
    code, out, _ = await cli("quarantine")
    assert code == 0 and "job-controller" in out and "binder" in out and "PayloadError: missing" in out
    (failing,) = await cli.json("quarantine", "--reconciles", "-o", "json")
    assert (failing["service"], failing["key"], failing["error_type"]) == (
        "job-controller",
        "('job', 'default/train')",
        "KeyError",
    )
    code, out, _ = await cli("quarantine", "--reconciles")
    assert code == 0 and "('job', 'default/train')" in out and "KeyError: 'counts'" in out
    (dead,) = await cli.json("dead-letters", "-o", "json")
    assert (dead["reason"], dead["deliveries"], dead["text"]) == ("handling_failed", 3, manifest.decode())
    code, out, _ = await cli("dead-letters")
    assert code == 0 and out.splitlines()[1].split()[2:7] == [
        "LAHAR_INTAKE",
        "4",
        "admission",
        "handling_failed",
        "3",
    ]
