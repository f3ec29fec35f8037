"""Every event type's payload through its checked-in JSON Schema and the wire: a producer in another
language that writes what the schema allows is read by lahar, and what the schema refuses lahar refuses
too. Old events upcast on reading (contracts/upcasters.py)."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from support.builders import pod
from support.payload_examples import EXAMPLES
from support.schemas import load, problems, validator

from contracts import payloads
from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from contracts.schema_gen import event_path
from contracts.typed_events import PayloadError, decode_payload, encode_payload
from shared.bus.envelope import Envelope
from shared.runner_types import Event

WRONG_TYPE = [1]  # no payload field is a list of integers


def on_the_wire(plain: dict[str, Any]) -> dict[str, Any]:
    """What a reader gets: the payload as MessagePack and back."""
    return msgpack.unpackb(msgpack.packb(plain, use_bin_type=True), raw=False)  # type: ignore[no-any-return]


def wire_example(name: str) -> dict[str, Any]:
    return on_the_wire(encode_payload(EXAMPLES[name]))


def fields(name: str) -> list[tuple[str, str]]:
    schema = load(event_path(name))
    return [(name, field) for field in sorted(schema["properties"])]


def test_every_catalogued_event_type_has_an_example_of_its_payload_class() -> None:
    assert sorted(set(EVENT_TYPES) - set(EXAMPLES)) == [], (
        "add an example to tests/support/payload_examples.py"
    )
    assert sorted(set(EXAMPLES) - set(EVENT_TYPES)) == []
    wrong = [n for n, e in EXAMPLES.items() if type(e) is not EVENT_TYPES[n].payload_class]
    assert wrong == []


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
def test_an_example_fits_its_schema_and_comes_back_equal(name: str) -> None:
    example = EXAMPLES[name]
    plain = wire_example(name)
    assert problems(event_path(name), plain) == []
    assert decode_payload(name, EVENT_TYPES[name].version, plain) == example


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
def test_an_enveloped_event_fits_its_asyncapi_message(name: str) -> None:
    envelope = Envelope.create(
        name, time=1_700_000_000.0, producer="tests", correlation_id="default/train", payload=EXAMPLES[name]
    )
    read = Envelope.decode(envelope.encode())
    message = load("asyncapi.yaml")["channels"]["events"]["messages"][name]
    errors = [e.message for e in validator(message["payload"], "asyncapi.yaml").iter_errors(read.to_dict())]
    assert errors == []
    assert decode_payload(read.type, read.schema_version, read.payload) == EXAMPLES[name]


@pytest.mark.parametrize(("name", "field"), [f for name in sorted(EVENT_TYPES) for f in fields(name)])
def test_schema_and_reader_agree_on_what_a_field_may_be(name: str, field: str) -> None:
    plain = wire_example(name)
    required = field in load(event_path(name))["required"]
    without = {k: v for k, v in plain.items() if k != field}
    assert (problems(event_path(name), without) == []) is not required
    if required:
        with pytest.raises(PayloadError, match=f"{field}: missing"):
            decode_payload(name, EVENT_TYPES[name].version, without)
    else:
        assert _reads(name, without)
    wrong = {**plain, field: WRONG_TYPE}
    assert problems(event_path(name), wrong) != []
    assert not _reads(name, wrong)


def test_an_object_of_another_kind_is_refused_by_both() -> None:
    plain = {"object": encode_object(pod("not-a-job"))}
    assert problems(event_path("JobSubmitted"), on_the_wire(plain)) != []
    assert not _reads("JobSubmitted", plain)


def _reads(name: str, plain: dict[str, Any]) -> bool:
    try:
        decode_payload(name, EVENT_TYPES[name].version, plain)
    except PayloadError:
        return False
    return True


# --- versions ------------------------------------------------------------------------------------------

# JobStatusChanged as lahars before version 2 wrote it: the phase and the pod counts only
JOB_STATUS_V1 = {"phase": "Running", "counts": {"running": 2, "pending": 0}}
JOB_STATUS_V1_READ = payloads.JobStatusChanged(
    phase="Running",
    counts={"running": 2, "pending": 0},
    task_status_count={},
    min_available=0,
    retry_count=0,
    version=0,
    restart=(),
    handled=(),
    last_transition_time=None,
    conditions=(),
)


def test_a_version_1_job_status_is_read_at_the_current_version_with_the_documented_defaults() -> None:
    assert EVENT_TYPES["JobStatusChanged"].version == 2
    assert decode_payload("JobStatusChanged", 1, JOB_STATUS_V1) == JOB_STATUS_V1_READ
    # the current schema is version 2's: a version 1 payload needs the upcaster, not just the schema
    assert load(event_path("JobStatusChanged"))["x-lahar-schema-version"] == 2
    assert problems(event_path("JobStatusChanged"), JOB_STATUS_V1) != []


# JobSecretCreated as lahars before version 2 wrote it: the key pair in plain text
JOB_SECRET_V1 = {"name": "mpi-ssh", "uid": "u1", "data": {"id_rsa": "PRIVATE", "id_rsa.pub": "ssh-rsa A"}}


def test_a_version_1_job_secret_is_read_as_an_unsealed_one() -> None:
    assert EVENT_TYPES["JobSecretCreated"].version == 2
    assert decode_payload("JobSecretCreated", 1, JOB_SECRET_V1) == payloads.JobSecretCreated(
        name="mpi-ssh", uid="u1", data=JOB_SECRET_V1["data"], sealed=None
    )


SEALED = payloads.SealedSecret(
    algorithm="X25519-HKDF-SHA256-AES256GCM",
    key_id="sha256:0123456789abcdef0123456789abcdef",
    ephemeral_key="AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    nonce="AAAAAAAAAAAAAAAA",
    ciphertext="c2VhbGVk",
)


def test_a_job_secret_is_sealed_or_plain_never_both() -> None:
    sealed = on_the_wire(encode_payload(payloads.JobSecretCreated(name="mpi-ssh", uid="u1", sealed=SEALED)))
    assert sealed["data"] == {} and sealed["sealed"]["key_id"].startswith("sha256:")
    assert problems(event_path("JobSecretCreated"), sealed) == []
    assert decode_payload("JobSecretCreated", 2, sealed).sealed == SEALED
    assert problems(event_path("JobSecretCreated"), {**sealed, "sealed": {"key_id": "k"}}) != []
    with pytest.raises(PayloadError, match="data: must be empty when the secret is sealed"):
        decode_payload("JobSecretCreated", 2, {**sealed, "data": {"id_rsa": "PRIVATE"}})


def test_an_old_event_from_the_log_reaches_a_core_upcast() -> None:
    written = Envelope.create(
        "JobStatusChanged",
        time=1_600_000_000.0,
        producer="job-controller",
        correlation_id="default/train",
        payload=JOB_STATUS_V1,
        schema_version=1,
    )
    read = Envelope.decode(written.encode())
    assert read.schema_version == 1
    event = Event(
        seq=7,
        type=read.type,
        kind="job",
        namespace="default",
        name="train",
        payload=read.payload,
        id=read.id,
        time=read.time,
        correlation_id=read.correlation_id,
        version=read.schema_version,
    )
    assert event.payload_as(payloads.JobStatusChanged) == JOB_STATUS_V1_READ


def test_a_version_newer_than_the_catalogue_is_refused() -> None:
    with pytest.raises(PayloadError, match="newer than this lahar reads"):
        decode_payload("JobStatusChanged", 3, encode_payload(EXAMPLES["JobStatusChanged"]))
