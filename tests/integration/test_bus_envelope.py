from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.bus import subjects
from shared.bus.envelope import Envelope, EnvelopeError, derived_event_id
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def make(**overrides: object) -> Envelope:
    fields: dict[str, object] = {
        "time": 1_700_000_000.25,
        "producer": "job-controller",
        "correlation_id": "default/train",
        "payload": {"replicas": 4, "resources": {"cpu": 4000}, "tags": ["a", "b"], "blob": b"\x00\x01"},
        "causation_id": "7f1f6b1e-2a52-4e9b-9a53-7e0f1d2c3b4a",
        "traceparent": TRACEPARENT,
        "tracestate": "vendor=1",
    }
    fields.update(overrides)
    return Envelope.create("JobCreated", **fields)  # type: ignore[arg-type]


def test_envelope_roundtrips_through_msgpack() -> None:
    env = make()
    assert Envelope.decode(env.encode()) == env


def test_optional_fields_may_be_absent() -> None:
    env = make(causation_id=None, traceparent=None, tracestate=None, payload=None)
    decoded = Envelope.decode(env.encode())
    assert decoded == env
    assert decoded.payload == {}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xc1garbage", "not a MessagePack document"),
        (msgpack.packb([1, 2, 3]), "must be a map"),
        (msgpack.packb({"type": "X"}), "missing field(s): schema_version, id, time"),
        (
            msgpack.packb(
                {
                    "type": "X",
                    "schema_version": 0,
                    "id": "nope",
                    "time": "now",
                    "producer": "p",
                    "correlation_id": "c",
                    "payload": [],
                }
            ),
            "schema_version must be an integer >= 1",
        ),
    ],
)
def test_decode_rejects_garbage_with_a_clear_error(data: bytes, reason: str) -> None:
    with pytest.raises(EnvelopeError) as info:
        Envelope.decode(data)
    assert reason in str(info.value)


def test_invalid_envelope_names_every_problem() -> None:
    with pytest.raises(EnvelopeError) as info:
        Envelope(type="", id="x", time=float("nan"), producer="p", correlation_id="c", traceparent="bad")
    message = str(info.value)
    for field in ("type", "id", "time", "traceparent"):
        assert field in message


def test_unknown_envelope_keys_are_tolerated() -> None:
    doc = make().to_dict() | {"added_by_a_newer_producer": 1}
    assert Envelope.decode(msgpack.packb(doc)) == make(id=doc["id"])


def test_an_integer_time_reads_as_float_seconds() -> None:
    # producers in other languages may write a whole second as an integer
    decoded = Envelope.decode(msgpack.packb(make().to_dict() | {"time": 1_700_000_000}))
    assert decoded.time == 1_700_000_000.0 and type(decoded.time) is float


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(
    payload=st.dictionaries(st.text(max_size=8), _VALUES, max_size=4),
    causation=st.none() | st.text(max_size=8),
    tracestate=st.none() | st.text(max_size=8),
    extra=st.dictionaries(st.sampled_from(["x", "y"]), _VALUES, max_size=2),
)
def test_the_fast_reading_and_the_checked_one_agree(
    payload: dict[str, object], causation: str | None, tracestate: str | None, extra: dict[str, object]
) -> None:
    doc = make(payload=payload, causation_id=causation, tracestate=tracestate).to_dict() | extra
    data = msgpack.packb(doc)
    assert Envelope.decode(data) == Envelope._decode_checked(data)


def test_derived_ids_are_stable_and_distinct() -> None:
    assert derived_event_id("cause", 0) == derived_event_id("cause", 0)
    assert derived_event_id("cause", 0) != derived_event_id("cause", 1)


@given(st.text(min_size=1, max_size=40))
def test_subject_tokens_roundtrip_and_are_valid(value: str) -> None:
    token = subjects.encode_token(value)
    assert subjects.decode_token(token) == value
    assert token and not any(ch in token for ch in ".*> \t\r\n")


def test_event_subjects() -> None:
    subject = subjects.event_subject("job", "team.a", "train *1*", "JobSubmitted", "admission")
    assert subject == "lahar.ev.job.admission.JobSubmitted.team%2Ea.train%20%2A1%2A"
    parsed = subjects.parse_event_subject(subject)
    assert parsed == subjects.EventSubject("job", "admission", "JobSubmitted", "team.a", "train *1*")
    assert parsed.ref == subjects.ObjectRef("job", "team.a", "train *1*")
    node = subjects.event_subject("node", None, "n1.example.com", "NodeRegistered", "node-agent.sim")
    assert node.startswith("lahar.ev.node.node-agent%2Esim.NodeRegistered._.")
    assert subjects.parse_event_subject(node).namespace is None
    assert subjects.parse_event_subject(node).producer == "node-agent.sim"
    assert subjects.parse_event_subject(subjects.event_subject("x", "_", "y", "T", "p")).namespace == "_"
    assert subjects.event_filter("job") == "lahar.ev.job.>"
    assert subjects.event_filter("job", "default") == "lahar.ev.job.*.*.default.>"
    assert subjects.event_filter("pod", event_type="PodBound") == "lahar.ev.pod.*.PodBound.>"
    assert subjects.event_filter(None, subjects.CLUSTER_SCOPE) == "lahar.ev.*.*.*._.>"
    guard = subjects.guard_subject("job", "default", "train", "admission")
    assert guard == "lahar.ev.job.admission.*.default.train"
    with pytest.raises(ValueError):
        subjects.parse_event_subject("lahar.ev.job.default.train")


async def test_envelope_roundtrips_through_the_stream_with_trace_headers(bus: Bus) -> None:
    await bus.ensure_streams([events_stream()])
    env = make()
    subject = subjects.event_subject("job", "default", "train", env.type, env.producer)
    ack = await bus.publish(env, subject)
    records = [r async for r in bus.replay(subjects.EVENTS_STREAM)]
    assert [(r.seq, r.subject) for r in records] == [(ack.seq, subject)]
    assert records[0].envelope() == env
    assert records[0].headers["Nats-Msg-Id"] == env.id
    assert records[0].headers["traceparent"] == TRACEPARENT
    assert records[0].headers["tracestate"] == "vendor=1"
