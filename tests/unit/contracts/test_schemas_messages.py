"""The bus messages that are not event payloads (contracts/bus_messages.py) against what the services'
own codecs write and accept: the envelope, event headers, plans, heartbeats, the admission and logs APIs.
A codec that changes without its description fails here."""

from __future__ import annotations

import json
from typing import Any

import msgpack
import msgspec
import pytest
from support.schemas import load, problems

from contracts import bus_messages
from contracts.errors import FieldError
from contracts.objects import PodGroupCondition
from contracts.plans import Bind, Eviction, PlanError, PlanMessage, PodGroupUpdate, decode_plan, plan_to_plain
from contracts.schema_gen import message_path
from services.admission.api import command_requests, delete_requests, reply
from services.admission.context_core import Outcome, Plan
from services.admission.core.tenants import Tenant, parse_tenant
from services.admission.intake import Invalid
from services.node_agent.logs_api import PodLogs, answer
from shared.bus import heartbeats, poison
from shared.bus.envelope import Envelope, EnvelopeError
from shared.bus.jetstream import _headers
from shared.bus.subjects import guard_subject

ENVELOPE = Envelope.create(
    "PodBound",
    time=1_700_000_000.0,
    producer="binder",
    correlation_id="default/train",
    payload={"node": "node-1", "plan": "p-1"},
    causation_id="0e6b9d4c-7a51-4e8f-a0b2-3c4d5e6f7a8b",
    traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
)


def packed(value: dict[str, Any]) -> bytes:
    return msgpack.packb(value, use_bin_type=True)  # type: ignore[no-any-return]


# --- the envelope --------------------------------------------------------------------------------------


def test_the_envelope_schema_lists_the_envelopes_fields() -> None:
    schema = load(message_path("Envelope"))
    assert set(schema["properties"]) == {f.name for f in msgspec.structs.fields(Envelope)}
    assert set(schema["required"]) == {
        "type",
        "schema_version",
        "id",
        "time",
        "producer",
        "correlation_id",
        "payload",
    }


def test_a_written_envelope_fits_and_one_the_schema_refuses_is_refused_on_reading() -> None:
    plain = msgpack.unpackb(ENVELOPE.encode(), raw=False)
    assert problems(message_path("Envelope"), plain) == []
    for broken in (
        {k: v for k, v in plain.items() if k != "id"},
        {**plain, "schema_version": 0},
        {**plain, "traceparent": "not-a-trace"},
        {**plain, "producer": ""},
    ):
        assert problems(message_path("Envelope"), broken) != []
        with pytest.raises(EnvelopeError):
            Envelope.decode(packed(broken))


def test_an_envelope_from_another_language_with_a_whole_second_time_is_read() -> None:
    plain = {**msgpack.unpackb(ENVELOPE.encode(), raw=False), "time": 1_700_000_000}
    assert problems(message_path("Envelope"), plain) == []
    assert Envelope.decode(packed(plain)).time == 1_700_000_000.0


def test_event_headers_fit() -> None:
    guard = guard_subject("job", "default", "train", "admission")
    assert problems(message_path("EventHeaders"), _headers(ENVELOPE, 12, guard)) == []
    assert problems(message_path("EventHeaders"), _headers(ENVELOPE)) == []
    assert problems(message_path("EventHeaders"), {}) != []


# --- plans ---------------------------------------------------------------------------------------------

CONDITION = PodGroupCondition(type="Unschedulable", reason="NotEnoughResources", last_transition_time=5.0)
PLAN = PlanMessage(
    plan_id="8c1f3d2e-5b4a-5c6d-8e7f-9a0b1c2d3e4f",
    replica="scheduler-0",
    seq=1042,
    binds=(Bind("default/train-worker-0", "default/train", "node-1"),),
    evictions=(Eviction("default/low-0", "default/low", "node-1", "preempt"),),
    podgroups={"default/train": PodGroupUpdate("Running", (CONDITION,), 1, 0, 0, "rack-1")},
)


def test_a_plan_a_replica_sends_fits() -> None:
    assert problems(message_path("Plan"), msgpack.unpackb(packed(plan_to_plain(PLAN)), raw=False)) == []


@pytest.mark.parametrize(
    "broken",
    [
        {"binds": [{"pod": "default/a", "job": "default/a"}]},  # no node
        {"seq": -1},
        {"plan_id": ""},
        {"podgroups": {"default/train": {"phase": "Running", "running": "1"}}},
    ],
)
def test_a_plan_the_schema_refuses_the_binder_refuses(broken: dict[str, Any]) -> None:
    plain = {**plan_to_plain(PLAN), **broken}
    assert problems(message_path("Plan"), plain) != []
    with pytest.raises(PlanError):
        decode_plan(packed(plain))


# --- heartbeats ----------------------------------------------------------------------------------------


def test_heartbeats_fit_and_the_node_limit_is_the_senders() -> None:
    assert bus_messages.MAX_NODES_PER_HEARTBEAT == heartbeats.MAX_NODES_PER_HEARTBEAT
    for beat in heartbeats.heartbeats_for("agent-1", [f"node-{i}" for i in range(2500)], 1_700_000_000.5):
        assert problems(message_path("Heartbeat"), json.loads(heartbeats.encode_heartbeat(beat))) == []
    too_many = {"agent": "agent-1", "time": 1.0, "nodes": ["n"] * (heartbeats.MAX_NODES_PER_HEARTBEAT + 1)}
    assert problems(message_path("Heartbeat"), too_many) != []
    with pytest.raises(heartbeats.HeartbeatError):
        heartbeats.decode_heartbeat(json.dumps(too_many).encode())


# --- the admission API ---------------------------------------------------------------------------------


def test_admissions_replies_fit() -> None:
    accepted = Plan(accepted=True, outcomes=(Outcome("Job", "default", "train", "created"),))
    refused = [FieldError("request", "spec.queue", "unable to find job queue 'nowhere'")]
    for answer_ in (
        reply(accepted, code="invalid", dry_run=False, seq=1042),
        reply(None, code="invalid", dry_run=True, errors=refused),
        reply(None, code="unavailable", dry_run=False, errors=[FieldError("request", "", "stopping")]),
    ):
        assert problems(message_path("ApiReply"), json.loads(json.dumps(answer_))) == []


@pytest.mark.parametrize(
    ("path", "build", "body", "fits"),
    [
        ("DeleteRequest", delete_requests, {"kind": "job", "namespace": "default", "name": "train"}, True),
        ("DeleteRequest", delete_requests, {"kind": "queue", "name": "research"}, True),
        ("DeleteRequest", delete_requests, {"kind": "job", "namespace": "default"}, False),
        ("DeleteRequest", delete_requests, {"kind": "job", "name": "train", "namespace": 3}, False),
        ("CommandRequest", command_requests, {"action": "suspend", "name": "train"}, True),
        (
            "CommandRequest",
            command_requests,
            {"action": "close", "name": "research", "target_kind": "Queue"},
            True,
        ),
        ("CommandRequest", command_requests, {"action": "update", "name": "research", "weight": 0}, False),
        ("CommandRequest", command_requests, {"name": "train"}, False),
    ],
)
def test_a_request_the_schema_allows_admission_reads(
    path: str, build: Any, body: dict[str, Any], fits: bool
) -> None:
    assert (problems(message_path(path), body) == []) is fits
    if fits:
        build(body)
    else:
        with pytest.raises(Invalid):
            build(body)


KEY = "U" + "A" * 55


@pytest.mark.parametrize(
    ("body", "fits"),
    [
        ({"name": "team-a", "public_keys": [KEY], "namespaces": ["team-a"]}, True),
        ({"name": "team-a", "public_keys": [KEY], "namespaces": ["team-a"], "queues": ["qa"]}, True),
        ({"name": "team-a", "public_keys": [KEY], "namespaces": ["team-a"], "queues": None}, True),
        ({"name": "team-a", "namespaces": ["team-a"]}, False),
        ({"name": "team-a", "public_keys": [KEY], "namespaces": "team-a"}, False),
    ],
)
def test_a_tenant_registration_the_schema_allows_admission_reads(body: dict[str, Any], fits: bool) -> None:
    assert (problems(message_path("TenantApplyRequest"), body) == []) is fits
    assert (parse_tenant(body, {})[0] is not None) is fits


def test_a_forbidden_reply_and_the_tenant_listing_fit() -> None:
    forbidden = reply(
        None,
        code="forbidden",
        dry_run=False,
        errors=[FieldError("Job b/x", "metadata.namespace", "tenant 'a' may not write in namespace 'b'")],
    )
    assert problems(message_path("ApiReply"), json.loads(json.dumps(forbidden))) == []
    listing = {**reply(None, code="ok", dry_run=False), "accepted": True}
    listing["tenants"] = [Tenant("a", (KEY,), ("a",), None).to_dict()]
    assert problems(message_path("ApiReply"), listing) == []


# --- the logs API --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "fits", "answered"),
    [
        ({}, True, True),
        ({"container": "main", "offset": 0}, True, True),
        ({"container": "sidecar"}, True, False),  # the pod has no such container: an error reply
        ({"offset": -1}, False, False),
    ],
)
def test_logs_requests_and_replies_fit(request_: dict[str, Any], fits: bool, answered: bool) -> None:
    assert (problems(message_path("LogsRequest"), request_) == []) is fits
    reply_ = answer(PodLogs(directory=None, containers=("main",), done=True), json.dumps(request_).encode())
    assert problems(message_path("LogsReply"), reply_) == []
    assert ("data" in reply_) is answered


# --- poison messages: quarantine records and dead letters ----------------------------------------------


def test_quarantine_records_and_dead_letters_as_stored_fit_their_schemas() -> None:
    record = bus_messages.QuarantineRecord(
        service="job-controller",
        seq=42,
        subject="lahar.ev.job.job-controller.JobStatusChanged.default.train",
        type="JobStatusChanged",
        id="0e6b9d4c-7a51-4e8f-a0b2-3c4d5e6f7a8b",
        reason="invalid_payload",
        error_type="PayloadError",
        error="JobStatusChanged: missing required field `counts`",
        time=1_700_000_000.0,
    )
    letter = bus_messages.DeadLetter(
        stream="LAHAR_PLANS",
        consumer="binder",
        seq=7,
        subject="lahar.plan.scheduler-0",
        headers={"Nats-Msg-Id": "p-1"},
        data=b"\xc1 not msgpack",
        deliveries=1,
        reason="undecodable",
        error_type="PlanError",
        error="not a plan",
        answer="",
        time=1_700_000_000.0,
    )
    for name, value in (("QuarantineRecord", record), ("DeadLetter", letter)):
        plain = json.loads(poison.encoded(value))
        assert problems(message_path(name), plain) == []
        assert problems(message_path(name), {**plain, "reason": "because"}) != []
    assert json.loads(poison.encoded(letter))["data"] == "wSBub3QgbXNncGFjaw=="  # base64 of the bytes
