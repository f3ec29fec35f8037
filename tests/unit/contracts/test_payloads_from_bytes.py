"""Payloads read from the bus are decoded straight from their MessagePack bytes (RawPayload) into their
typed class, and their plain form is built only when read: what a reader gets must be what the eager
reading (bytes -> plain dicts -> typed class) gave, for every catalogued type, and a refused payload
must still name every offending field."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import msgpack
import msgspec
import pytest
from support.payload_examples import EXAMPLES

from contracts import payloads
from contracts.events import EVENT_TYPES
from contracts.typed_events import PayloadError, RawPayload, decode_payload, encode_payload
from shared.bus.envelope import Envelope, EnvelopeError
from shared.bus.subjects import EventSubject
from shared.runner.events import to_event

WRONG_TYPE = [1]  # no payload field is a list of integers


def written(name: str, payload: Any, *, version: int | None = None) -> bytes:
    """An event as a writer puts it on the bus, with any payload (not checked as Envelope.create would)."""
    doc = Envelope.create("Unchecked", time=1_700_000_000.0, producer="tests", correlation_id="default/x")
    catalogued = EVENT_TYPES.get(name)
    current = catalogued.version if catalogued is not None else 1
    doc = doc.to_dict() | {"type": name, "schema_version": version or current, "payload": payload}
    return msgpack.packb(doc, use_bin_type=True)  # type: ignore[no-any-return]


def read(data: bytes, namespace: str | None = "default", name: str = "x") -> Any:
    """The event a service's loop makes of the bytes (the same path as shared.runner.service), on the
    subject of (namespace, name)."""
    env = Envelope.decode(data)
    ref = EventSubject(kind="pod", producer="tests", type=env.type, namespace=namespace, name=name)
    return to_event(3, ref, env)


def subject_object(plain: dict[str, Any]) -> tuple[str | None, str]:
    """The (namespace, name) a payload's subject must name: its object's, when it carries one (the
    reader refuses any other, contracts/identity.py); None as the namespace of a cluster-scoped one."""
    carried = plain.get("object")
    if not isinstance(carried, dict):
        return "default", "x"
    meta = carried["object"]["meta"]
    return meta.get("namespace") or None, meta["name"]


def eager_plain(data: bytes) -> dict[str, Any]:
    """The payload as the reader before RawPayload built it for every event."""
    return msgspec.msgpack.decode(data, type=dict[str, Any])["payload"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
def test_the_typed_and_the_plain_payload_are_what_the_eager_reading_gave(name: str) -> None:
    data = written(name, encode_payload(EXAMPLES[name]))
    plain = eager_plain(data)
    event = read(data, *subject_object(plain))
    assert isinstance(event.payload, RawPayload)
    assert event.data == EXAMPLES[name] == msgspec.convert(plain, type(EXAMPLES[name]))
    assert event.payload == plain and dict(event.payload) == plain
    assert event.payload.plain is event.payload.plain  # decoded once, then kept
    assert Envelope.decode(data).to_dict()["payload"] == plain


def required_fields(name: str) -> list[str]:
    cls = EVENT_TYPES[name].payload_class
    return [f.encode_name for f in msgspec.structs.fields(cls) if f.required]


def test_every_offending_field_is_named_when_read_from_bytes() -> None:
    payload = {"node": 5, "started_at": "soon"}  # PodRunning: both fields of the wrong type
    with pytest.raises(PayloadError) as info:
        read(written("PodRunning", payload))
    assert "node:" in str(info.value) and "started_at:" in str(info.value)
    status = {**encode_payload(EXAMPLES["JobStatusChanged"]), "phase": 1, "restart": "x"}
    del status["counts"]
    with pytest.raises(PayloadError) as info:
        read(written("JobStatusChanged", status))
    for field in ("phase:", "restart:", "counts: missing"):
        assert field in str(info.value)


@pytest.mark.parametrize("name", sorted(n for n in EVENT_TYPES if required_fields(n)))
def test_bytes_and_plain_data_refuse_the_same_payloads_with_the_same_words(name: str) -> None:
    plain = encode_payload(EXAMPLES[name])
    version = EVENT_TYPES[name].version
    for field in required_fields(name):
        for bad in ({k: v for k, v in plain.items() if k != field}, {**plain, field: WRONG_TYPE}):
            with pytest.raises(PayloadError) as from_plain:
                decode_payload(name, version, bad)
            with pytest.raises(PayloadError) as from_bytes:
                read(written(name, bad))
            assert str(from_bytes.value) == str(from_plain.value)
            assert field in str(from_bytes.value)


def test_an_object_of_another_kind_is_refused_from_bytes() -> None:
    pod = encode_payload(EXAMPLES["PodCreated"])
    with pytest.raises(PayloadError, match="expected an encoded Job"):
        read(written("JobSubmitted", pod))


def test_an_events_object_is_decoded_once_for_all_its_readers_and_is_not_part_of_the_payload() -> None:
    event = read(written("JobSubmitted", encode_payload(EXAMPLES["JobSubmitted"])), name="train")
    submitted = event.payload_as(payloads.JobSubmitted)
    job = submitted.decoded()
    assert submitted.decoded() is job and job == EXAMPLES["JobSubmitted"].decoded()
    # what is kept beside the fields is neither written nor compared
    assert msgspec.msgpack.encode(submitted) == msgspec.msgpack.encode(EXAMPLES["JobSubmitted"])
    assert submitted == EXAMPLES["JobSubmitted"]


def test_an_old_version_read_from_bytes_is_upcast() -> None:
    event = read(written("JobStatusChanged", {"phase": "Running", "counts": {"running": 2}}, version=1))
    assert event.version == 1
    status = event.payload_as(payloads.JobStatusChanged)
    assert (status.phase, status.counts, status.restart, status.retry_count) == (
        "Running",
        {"running": 2},
        (),
        0,
    )
    assert event.payload == {"phase": "Running", "counts": {"running": 2}}  # the plain form as written


def test_unknown_payload_fields_are_ignored_and_kept_in_the_plain_form() -> None:
    plain = {**encode_payload(EXAMPLES["PodBound"]), "added_later": {"x": [1]}}
    event = read(written("PodBound", plain))
    assert event.data == EXAMPLES["PodBound"]
    assert event.payload == plain


def test_an_uncatalogued_type_gets_its_plain_payload() -> None:
    event = read(written("SomethingNew", {"a": [1, {"b": b"\x00"}]}))
    assert isinstance(event.data, payloads.Uncatalogued)
    assert event.payload == {"a": [1, {"b": b"\x00"}]}


def test_a_payload_that_is_not_plain_data_is_refused_for_any_type() -> None:
    # a map used as a map key: MessagePack can carry it, no reader can make a dict of it
    for name in ("PodBound", "SomethingNew"):
        data = written(name, {}).replace(b"\xa7payload\x80", b"\xa7payload\x81\x80\x01")
        assert data != written(name, {})
        with pytest.raises(PayloadError, match="not plain data"):
            read(data)


@pytest.mark.parametrize("payload", [[], 5, "x", None])
def test_a_payload_that_is_not_a_map_is_not_an_envelope(payload: Any) -> None:
    with pytest.raises(EnvelopeError, match="payload must be a map"):
        Envelope.decode(written("PodBound", payload))


def test_a_raw_payload_copied_or_pickled_is_its_plain_form() -> None:
    raw = Envelope.decode(written("PodBound", encode_payload(EXAMPLES["PodBound"]))).payload
    for copied in (copy.deepcopy(raw), copy.copy(raw), pickle.loads(pickle.dumps(raw))):
        assert type(copied) is dict and copied == raw


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_payloads_plain_form_writes_the_bytes_its_full_copy_writes(name: str) -> None:
    # a payload that is only an encoded object shares it rather than copying it (encode_payload): the
    # bytes on the bus, and the typed payload read back, are the same as from a full copy
    payload = EXAMPLES[name]
    shared, copied = encode_payload(payload), msgspec.to_builtins(payload)
    assert msgspec.msgpack.encode(shared) == msgspec.msgpack.encode(copied)
    assert decode_payload(name, 0, shared) == decode_payload(name, 0, copied) == payload
    if type(payload).__struct_fields__ == ("object",):
        assert shared["object"] is payload.object  # type: ignore[attr-defined]
