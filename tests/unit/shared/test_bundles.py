"""Bundles (contracts/bundles.py, shared/bus/bundles.py): a reader sees exactly the events that were
bundled, what is not a bundle is refused, and a bundle is sent again exactly as it went (which outputs
travel together: test_bundle_groups.py)."""

from __future__ import annotations

import msgpack
import msgspec
import pytest
from support.builders import pod
from support.bundle_outputs import names, out, status
from support.payload_examples import EXAMPLES

from contracts import payloads
from contracts.codec import encode_object
from contracts.identity import WrongObject
from contracts.payloads import PayloadError
from contracts.typed_events import decode_payload
from shared.bus.bundles import bundle_envelope, group_for_bundles, read_bundle, record_events, unpack
from shared.bus.envelope import Envelope, EnvelopeError
from shared.bus.errors import EventRefused
from shared.bus.identity_check import refuse_wrong_object
from shared.bus.subjects import EventSubject, event_subject, parse_event_subject
from shared.runner.events import bundled_event, to_event
from shared.runner_types import Output, deterministic_id

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def bundled(
    outputs: list[Output], traceparents: list[str | None] | None = None
) -> tuple[EventSubject, Envelope]:
    traces = traceparents or [None] * len(outputs)
    env, bundle_type, name = bundle_envelope(outputs, time=5.0, producer="binder", traceparents=traces)
    subject = event_subject("pods", "default", name, bundle_type, "binder")
    return parse_event_subject(subject), Envelope.decode(env.encode())


def test_a_reader_sees_each_bundled_event_as_if_it_had_been_written_alone() -> None:
    outputs = [out("PodBound", "a"), out("PodBound", "b", causation_id="other-cause")]
    ref, env = bundled(outputs, [TRACE, None])
    assert (ref.kind, ref.type, ref.name, env.type) == ("pods", "PodsBound", "all", "PodsBound")
    events = unpack(ref, env)
    assert [(r.kind, r.type, r.namespace, r.name) for r, _ in events] == [
        ("pod", "PodBound", "default", "a"),
        ("pod", "PodBound", "default", "b"),
    ]
    for (_, item), output in zip(events, outputs, strict=True):
        assert (item.type, item.id, item.causation_id, item.time, item.producer) == (
            "PodBound",
            output.id,
            output.causation_id,
            5.0,
            "binder",
        )
        assert item.correlation_id == "default/train" and dict(item.payload) == {
            "node": "node-1",
            "plan": "p",
        }
    assert events[0][1].traceparent == TRACE
    assert record_events(ref, env) == events
    alone = parse_event_subject(event_subject("pod", "default", "a", "PodBound", "binder"))
    assert record_events(alone, env)[0][0] is alone


def test_the_same_events_bundled_again_are_the_same_message() -> None:
    outputs = [out("PodBound", "a"), out("PodBound", "b")]
    assert bundled(outputs)[1].id == bundled(list(outputs))[1].id  # the stream deduplicates a retry
    assert bundled(outputs)[1].id != bundled([*outputs, out("PodBound", "c")])[1].id


def test_a_writer_cannot_bundle_an_event_its_type_does_not_allow() -> None:
    wrong = out("PodBound", "b", payload={"node": ""})
    with pytest.raises(PayloadError, match="node"):
        bundle_envelope([out("PodBound", "a"), wrong], time=1.0, producer="binder", traceparents=[None, None])
    elsewhere = out("PodCreated", "b", payload=payloads.PodCreated(object=encode_object(pod("c", "train"))))
    with pytest.raises(PayloadError, match="'default/c'"):
        bundle_envelope(
            [out("PodCreated", "a"), elsewhere],
            time=1.0,
            producer="job-controller",
            traceparents=[None, None],
        )


def raw_bundle(events: object, subject_kind: str = "pods") -> tuple[EventSubject, Envelope]:
    env = Envelope(
        type="PodsBound",
        id=deterministic_id("t", "x"),
        time=1.0,
        producer="binder",
        correlation_id="default/train",
        payload={"events": events},
    )
    ref = parse_event_subject(event_subject(subject_kind, "default", "train", "PodsBound", "binder"))
    return ref, Envelope.decode(env.encode())


@pytest.mark.parametrize(
    ("events", "kind", "problem"),
    [
        ([], "pods", "at least one event"),
        ([{"name": "a", "id": "i", "payload": [1]}], "pods", "map payload"),
        ([{"name": "", "id": "i", "payload": {}}], "pods", "needs a name"),
        ([{"id": "i", "payload": {}}], "pods", "name"),
        ("not a list", "pods", "events"),
        ([{"name": "a", "id": "i", "payload": {}, "correlation_id": 7}], "pods", "correlation_id"),
        ([{"name": "a", "id": "i", "payload": {}}], "pod", "'pods' subject"),
    ],
)
def test_a_record_that_is_not_a_bundle_is_refused_by_its_readers(
    events: object, kind: str, problem: str
) -> None:
    ref, env = raw_bundle(events, kind)
    with pytest.raises(PayloadError, match=problem):
        unpack(ref, env)


def test_the_bus_refuses_a_bundle_whose_pod_names_another_object() -> None:
    env = Envelope(
        type="PodsCreated",
        id=deterministic_id("t", "y"),
        time=1.0,
        producer="job-controller",
        correlation_id="default/train",
        payload={
            "events": [
                {
                    "name": "a",
                    "id": deterministic_id("t", "a"),
                    "payload": msgpack.unpackb(msgpack.packb({"object": encode_object(pod("b", "train"))})),
                }
            ]
        },
    )
    subject = event_subject("pods", "default", "train", "PodsCreated", "job-controller")
    with pytest.raises(EventRefused, match="'default/b'"):
        refuse_wrong_object(env, subject)
    good = out("PodCreated", "a")
    env_ok, bundle_type, name = bundle_envelope(
        [good, out("PodCreated", "b")], time=1.0, producer="job-controller", traceparents=[None, None]
    )
    refuse_wrong_object(env_ok, event_subject("pods", "default", name, bundle_type, "job-controller"))


def test_the_bus_judges_a_bundle_read_back_from_bytes_and_one_of_no_bundle_shape_alike() -> None:
    subject = event_subject("pods", "default", "train", "PodsCreated", "job-controller")
    wrong = {
        "name": "a",
        "id": deterministic_id("t", "a"),
        "payload": {"object": encode_object(pod("b", "train"))},
    }
    plain = Envelope(
        type="PodsCreated",
        id=deterministic_id("t", "z"),
        time=1.0,
        producer="job-controller",
        correlation_id="default/train",
        payload={"events": [wrong]},
    )
    for env in (plain, Envelope.decode(plain.encode())):  # built in process, or as the bus carries it
        with pytest.raises(EventRefused, match="'default/b'"):
            refuse_wrong_object(env, subject)
    shapeless = msgspec.structs.replace(plain, payload={"events": [{"id": "x", "payload": {}}]})
    with pytest.raises(EventRefused, match="missing required field `name`"):
        refuse_wrong_object(shapeless, subject)


def test_a_bundle_whose_send_may_have_been_stored_goes_out_again_exactly_as_it_was() -> None:
    a, b, c = out("PodRunning", "a"), out("PodRunning", "b"), out("PodRunning", "c")
    first = group_for_bundles([a, b])
    pinned = {o.id: tuple(first[0]) for o in first[0]}
    # decided again, now beside c: a and b go out as the same bundle (the stream drops it if it was
    # stored), c in a bundle of its own
    again = group_for_bundles([c, b, a], pinned)
    assert names(again) == [["PodRunning:c"], ["PodRunning:a", "PodRunning:b"]]
    assert bundled(again[1])[1].id == bundled(first[0])[1].id
    # only b decided again: the pinned bundle still carries a
    assert names(group_for_bundles([b], pinned)) == [["PodRunning:a", "PodRunning:b"]]


def test_an_event_that_went_alone_goes_alone_again() -> None:
    a, b = out("PodSucceeded", "a"), out("PodSucceeded", "b")
    pinned = {a.id: (a,)}  # its send failed before b was decided
    assert names(group_for_bundles([a, b], pinned)) == [["PodSucceeded:a"], ["PodSucceeded:b"]]


def test_a_bundle_says_the_schema_version_of_its_events() -> None:
    ref, env = bundled([out("PodBound", "a"), out("PodBound", "b")])
    assert env.payload["item_version"] == 1
    assert {item.schema_version for _, item in unpack(ref, env)} == {1}
    bad = Envelope(
        type="PodsBound",
        id=deterministic_id("t", "v"),
        time=1.0,
        producer="binder",
        correlation_id="default/train",
        payload={"events": [{"name": "a", "id": "i", "payload": {}}], "item_version": 0},
    )
    with pytest.raises(PayloadError, match="item_version"):
        unpack(ref, Envelope.decode(bad.encode()))


def test_a_reader_sees_each_status_change_of_a_bundle_about_its_own_object_and_job() -> None:
    outputs = [status("PodGroupStatusChanged", "a"), status("PodGroupStatusChanged", "b")]
    env, bundle_type, name = bundle_envelope(outputs, time=5.0, producer="binder", traceparents=[None, None])
    subject = event_subject("objects", "default", name, bundle_type, "binder")
    assert subject == "lahar.ev.objects.binder.PodGroupStatusesChanged.default.all"
    ref = parse_event_subject(subject)
    events = unpack(ref, Envelope.decode(env.encode()))
    assert [(r.kind, r.type, r.namespace, r.name) for r, _ in events] == [
        ("podgroup", "PodGroupStatusChanged", "default", "a"),
        ("podgroup", "PodGroupStatusChanged", "default", "b"),
    ]
    assert [(e.id, e.correlation_id, e.causation_id) for _, e in events] == [
        (o.id, o.correlation_id, o.causation_id) for o in outputs
    ]
    item = events[1][1]
    assert decode_payload(item.type, item.schema_version, dict(item.payload)) == EXAMPLES[item.type]
    # an object bundle read on a pod bundle's subject is not one
    wrong = parse_event_subject(event_subject("pods", "default", "a", bundle_type, "binder"))
    with pytest.raises(PayloadError, match="'objects' subject"):
        unpack(wrong, env)


def test_the_loop_makes_each_bundled_event_as_a_reader_of_its_envelope_would() -> None:
    outputs = [
        out("PodCreated", "a"),
        out("PodCreated", "b", job="other", causation_id=None),
        out("PodCreated", "c", causation_id="own-cause"),
    ]
    ref, env = bundled(outputs, [TRACE, None, "00-" + "1" * 32 + "-" + "2" * 16 + "-01"])
    bundle = read_bundle(ref, env)
    straight = [bundled_event(9, bundle, item) for item in bundle.events]
    assert straight == [to_event(9, r, e) for r, e in unpack(ref, env)]
    assert [(e.correlation_id, e.causation_id) for e in straight] == [
        ("default/train", "cause"),
        ("default/other", None),
        ("default/train", "own-cause"),
    ]
    # an event without a trace of its own has the bundle's (its first event's)
    assert [e.traceparent for e in straight[:2]] == [TRACE, TRACE] and straight[2].traceparent != TRACE
    # a bundled event whose Pod is another object is refused, as a lone one is
    forged = msgspec.structs.replace(bundle.events[0], payload=bundle.events[2].payload)
    with pytest.raises(WrongObject, match="'default/c'"):
        bundled_event(1, bundle, forged)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [("id", "not-a-uuid", "id must be a UUID"), ("traceparent", "00-xyz", "traceparent")],
)
def test_a_bundled_event_whose_id_or_trace_an_envelope_refuses_makes_the_bundle_unreadable(
    field: str, value: str, problem: str
) -> None:
    event = {"name": "a", "id": deterministic_id("t", "a"), "payload": {"node": "n", "plan": "p"}}
    ref, env = raw_bundle([event, {**event, "name": "b", field: value}])
    with pytest.raises(EnvelopeError, match=problem):
        read_bundle(ref, env)


def test_a_bundled_event_id_in_another_uuid_form_is_read_as_an_envelope_reads_it() -> None:
    upper = deterministic_id("t", "a").upper()
    ref, env = raw_bundle([{"name": "a", "id": upper, "payload": {"node": "n", "plan": "p"}}])
    bundle = read_bundle(ref, env)
    assert bundled_event(1, bundle, bundle.events[0]).id == upper == unpack(ref, env)[0][1].id
