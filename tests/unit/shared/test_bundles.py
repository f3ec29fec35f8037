"""Bundles (contracts/bundles.py, shared/bus/bundles.py): which outputs travel together, and that a
reader sees exactly the events that were bundled."""

from __future__ import annotations

import random
from dataclasses import replace

import msgpack
import msgspec
import pytest
from support.builders import pod, podgroup
from support.payload_examples import EXAMPLES

from contracts import payloads
from contracts.bundles import MAX_BUNDLE_BYTES
from contracts.codec import encode_object
from contracts.payloads import PayloadError
from contracts.typed_events import decode_payload
from shared.bus.bundles import bundle_envelope, group_for_bundles, record_events, unpack
from shared.bus.envelope import Envelope
from shared.bus.errors import EventRefused
from shared.bus.identity_check import refuse_wrong_object
from shared.bus.subjects import EventSubject, event_subject, parse_event_subject
from shared.runner_types import Output, deterministic_id

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def out(kind_type: str, name: str, job: str = "train", **fields: object) -> Output:
    payload: payloads.Payload
    if kind_type == "PodBound":
        payload = payloads.PodBound(node="node-1", plan="p")
    elif kind_type == "PodRunning":
        payload = payloads.PodRunning(node="node-1", started_at=1.0)
    elif kind_type == "PodSucceeded":
        payload = payloads.PodSucceeded(node="node-1", finished_at=2.0)
    elif kind_type == "PodCreated":
        payload = payloads.PodCreated(object=encode_object(pod(name, job)))
    else:
        payload = payloads.PodFailed(node="node-1")
    base = Output(
        type=kind_type,
        kind="pod",
        namespace="default",
        name=name,
        id=deterministic_id("test", kind_type, name),
        correlation_id=f"default/{job}",
        payload=payload,
        causation_id="cause",
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def names(groups: list[list[Output]]) -> list[list[str]]:
    return [[f"{o.type}:{o.name}" for o in group] for group in groups]


def test_events_of_one_type_about_one_namespaces_pods_travel_together_where_the_first_was() -> None:
    outputs = [
        out("PodBound", "a"),
        out("PodBound", "x", job="other"),
        out("PodBound", "b"),
        out("PodBound", "z", job="other", namespace="elsewhere", correlation_id="elsewhere/other"),
        out("PodBound", "y", job="other"),
        out("PodBound", "c"),
    ]
    assert names(group_for_bundles(outputs)) == [
        ["PodBound:a", "PodBound:x", "PodBound:b", "PodBound:y", "PodBound:c"],
        ["PodBound:z"],
    ]


def test_an_event_never_moves_past_another_event_of_its_job_or_its_pod() -> None:
    train_status = status("PodGroupStatusChanged", "train")
    outputs = [
        out("PodRunning", "a", job="ja"),
        out("PodSucceeded", "a", job="ja"),
        out("PodRunning", "b", job="jb"),
        out("PodSucceeded", "b", job="jb"),
        out("PodFailed", "c", job="jc"),
        out("PodRunning", "c", job="jc"),
        out("PodBound", "t0"),
        train_status,
        out("PodBound", "t1"),  # not before train's status into the first PodBound bundle
    ]
    groups = group_for_bundles(outputs)
    assert names(groups) == [
        ["PodRunning:a", "PodRunning:b"],
        ["PodSucceeded:a", "PodSucceeded:b"],
        ["PodFailed:c"],
        ["PodRunning:c"],  # after c's PodFailed: not moved before it into the first bundle
        ["PodBound:t0"],
        ["PodGroupStatusChanged:train"],
        ["PodBound:t1"],
    ]
    order = [o.id for group in groups for o in group]
    for job in ("default/ja", "default/jb", "default/jc", "default/train"):
        mine = [o.id for o in outputs if o.correlation_id == job]
        assert [i for i in order if i in mine] == mine


@pytest.mark.parametrize(
    "other",
    [
        {"expected_last_subject_seq": 0},  # a compare-and-set goes alone
        {"namespace": None},  # a cluster-scoped object
        {"kind": "podgroup"},  # not the object a bundle of pods' events carries
    ],
)
def test_what_cannot_be_bundled_goes_alone(other: dict[str, object]) -> None:
    outputs = [out("PodBound", "a", **other), out("PodBound", "b", **other)]
    assert names(group_for_bundles(outputs)) == [["PodBound:a"], ["PodBound:b"]]


def test_a_bundle_is_cut_before_it_outgrows_a_message() -> None:
    big = pod("big", "train")
    big = replace(big, meta=replace(big.meta, annotations={"pad": "x" * (MAX_BUNDLE_BYTES // 3)}))
    outputs = [
        out(
            "PodCreated",
            f"p{i}",
            payload=payloads.PodCreated(
                object=encode_object(replace(big, meta=replace(big.meta, name=f"p{i}")))
            ),
        )
        for i in range(7)
    ]
    groups = group_for_bundles(outputs)
    assert [len(g) for g in groups] == [2, 2, 2, 1]
    for group in groups[:-1]:
        env, _, _ = bundle_envelope(
            group, time=1.0, producer="job-controller", traceparents=[None] * len(group)
        )
        assert len(env.encode()) < MAX_BUNDLE_BYTES + 4096


def test_a_status_bundle_is_cut_by_what_its_statuses_say_not_by_their_count() -> None:
    # a PodGroup's Unschedulable condition can name why each of thousands of nodes did not fit
    example = EXAMPLES["PodGroupStatusChanged"]
    assert isinstance(example, payloads.PodGroupStatusChanged)
    reason = msgspec.structs.replace(example.conditions[0], message="x" * (MAX_BUNDLE_BYTES // 5))
    outputs = [
        status(
            "PodGroupStatusChanged",
            f"job-{i}",
            payload=payloads.PodGroupStatusChanged(phase="Pending", conditions=(reason,)),
        )
        for i in range(9)
    ]
    groups = group_for_bundles(outputs)
    assert [len(g) for g in groups] == [4, 4, 1]
    for group in groups:
        env, _, _ = bundle_envelope(group, time=1.0, producer="binder", traceparents=[None] * len(group))
        assert len(env.encode()) < MAX_BUNDLE_BYTES + 4096


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


def podgroup_created(job: str) -> payloads.PodGroupCreated:
    return payloads.PodGroupCreated(object=encode_object(podgroup(job)))


def status(event_type: str, job: str, **fields: object) -> Output:
    """A status change of the job's Job (JobStatusChanged) or PodGroup (PodGroupStatusChanged)."""
    base = Output(
        type=event_type,
        kind="job" if event_type == "JobStatusChanged" else "podgroup",
        namespace="default",
        name=job,
        id=deterministic_id("test", event_type, job),
        correlation_id=f"default/{job}",
        payload=EXAMPLES[event_type],
        causation_id=f"plan-{job}",
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def test_a_binders_commit_of_several_plans_is_one_bundle_of_binds_and_one_of_statuses() -> None:
    # each plan's binds, then its PodGroup's status
    outputs = [
        out("PodBound", "a0", job="a"),
        out("PodBound", "a1", job="a"),
        status("PodGroupStatusChanged", "a"),
        out("PodBound", "b0", job="b"),
        status("PodGroupStatusChanged", "b"),
        status("PodGroupStatusChanged", "c"),
        status("PodGroupStatusChanged", "d", namespace="other", correlation_id="other/d"),
    ]
    groups = group_for_bundles(outputs)
    assert names(groups) == [
        ["PodBound:a0", "PodBound:a1", "PodBound:b0"],
        ["PodGroupStatusChanged:a", "PodGroupStatusChanged:b", "PodGroupStatusChanged:c"],
        ["PodGroupStatusChanged:d"],  # another namespace: another subject
    ]


def test_statuses_move_after_other_jobs_binds_to_travel_together() -> None:
    outputs = [
        status("PodGroupStatusChanged", "a"),
        out("PodBound", "b0", job="b"),
        status("PodGroupStatusChanged", "b"),  # not before b0: a's status moves after it instead
    ]
    assert names(group_for_bundles(outputs)) == [
        ["PodBound:b0"],
        ["PodGroupStatusChanged:a", "PodGroupStatusChanged:b"],
    ]


def test_a_status_change_is_never_moved_past_another_event_of_its_job() -> None:
    outputs = [
        status("JobStatusChanged", "a"),
        out("PodCreated", "b0", job="b"),
        status("JobStatusChanged", "b"),  # not before b0: a's change moves after b0 to join it
        out("PodCreated", "a0", job="a"),  # about a: that group moves no further
        status("JobStatusChanged", "c"),
        status("PodGroupStatusChanged", "c"),
        status("JobStatusChanged", "d"),  # nothing about d yet: it joins c's change where that is
    ]
    groups = group_for_bundles(outputs)
    assert names(groups) == [
        ["PodCreated:b0"],
        ["JobStatusChanged:a", "JobStatusChanged:b"],
        ["PodCreated:a0"],
        ["JobStatusChanged:c", "JobStatusChanged:d"],
        ["PodGroupStatusChanged:c"],
    ]
    order = [o for group in groups for o in group]
    for job in "abcd":
        mine = [o.id for o in outputs if o.correlation_id == f"default/{job}"]
        assert [o.id for o in order if o.correlation_id == f"default/{job}"] == mine


def test_new_jobs_statuses_podgroups_and_pods_travel_in_three_bundles() -> None:
    # what the job-controller decides for new jobs: each one's Pending status, PodGroup and pods
    outputs = []
    for job in "abc":
        created = status("PodGroupStatusChanged", job, type="PodGroupCreated", payload=podgroup_created(job))
        outputs += [status("JobStatusChanged", job), created, out("PodCreated", f"{job}0", job=job)]
    assert names(group_for_bundles(outputs)) == [
        ["JobStatusChanged:a", "JobStatusChanged:b", "JobStatusChanged:c"],
        ["PodGroupCreated:a", "PodGroupCreated:b", "PodGroupCreated:c"],
        ["PodCreated:a0", "PodCreated:b0", "PodCreated:c0"],
    ]


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


def test_bundles_keep_every_jobs_events_in_order_whatever_the_mix() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        outputs = []
        for index in range(rng.randint(5, 40)):
            job = rng.choice("abcde")
            pick = rng.random()
            if pick < 0.4:
                outputs.append(status("JobStatusChanged", job, id=f"j{index}"))
            elif pick < 0.8:
                outputs.append(status("PodGroupStatusChanged", job, id=f"g{index}"))
            elif pick < 0.9:  # goes alone
                outputs.append(out("PodFailed", f"{job}{index % 3}", job=job, id=f"f{index}"))
            else:  # a pod bundle's
                outputs.append(out("PodRunning", f"{job}{index % 3}", job=job, id=f"r{index}"))
        groups = group_for_bundles(outputs)
        order = [o for group in groups for o in group]
        assert sorted(o.id for o in order) == sorted(o.id for o in outputs), seed
        for job in "abcde":
            mine = [o.id for o in outputs if o.correlation_id == f"default/{job}"]
            assert [o.id for o in order if o.correlation_id == f"default/{job}"] == mine, seed
        assert len(groups) < len(outputs) or len(outputs) < 8, seed  # they do travel together
