"""The pod a PodCreated carries is decoded as the generic codec decodes it, each distinct spec and status
built once (shared/pod_decode.py): by the scheduler's view when it folds the event, by a node agent when
the pod is bound to one of its nodes."""

from __future__ import annotations

import pytest
from support.builders import pod
from support.events import EventLog

from contracts.codec import encode_object
from contracts.objects import Pod, Toleration
from services.scheduler.view import SchedulerView
from services.scheduler.view_events import event_object
from shared import pod_decode
from shared.bus.envelope import Envelope
from shared.bus.subjects import EventSubject
from shared.evolve import evolve
from shared.pod_decode import PodBytes, PodDecoder
from shared.runner.events import to_event
from shared.runner_types import Event


def from_the_bus(p: Pod, seq: int = 1) -> Event:
    """A PodCreated as a service reads it: encoded, sent, decoded (its payload left as its bytes)."""
    env = Envelope.create(
        "PodCreated",
        time=1.0,
        producer="job-controller",
        correlation_id="default/job",
        payload={"object": encode_object(p)},
    )
    ref = EventSubject("pod", "job-controller", "PodCreated", p.meta.namespace, p.meta.name)
    return to_event(seq, ref, Envelope.decode(env.encode()))


def test_a_pod_decodes_as_the_codec_decodes_it() -> None:
    odd = pod("odd", "g", cpu=3, gpu=1, tolerations=[Toleration(key="k", operator="Exists")])
    for p in (pod("a", "g"), odd, pod("b", None, phase="Running", node_name="n1", priority=7)):
        event = from_the_bus(p)
        assert PodDecoder().pod(event) == event_object(event, Pod) == p


def test_pods_of_one_template_share_their_spec_and_status() -> None:
    decoder = PodDecoder()
    pods = [decoder.pod(from_the_bus(pod(f"w-{i}", "g"), seq=i + 1)) for i in range(10)]
    assert [p.meta.name for p in pods] == [f"w-{i}" for i in range(10)]
    assert decoder.decoded == 2  # one spec, one status, for ten pods
    assert all(p.spec is pods[0].spec and p.status is pods[0].status for p in pods)
    decoder.pod(from_the_bus(pod("big", "g", cpu=8)))
    assert decoder.decoded == 3  # a new spec; the status is the one already known


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pod_decode, "MEMO_LIMIT", 3)
    decoder = PodDecoder()
    for cpu in range(1, 11):
        assert decoder.pod(from_the_bus(pod(f"p{cpu}", "g", cpu=cpu))).spec == pod("x", "g", cpu=cpu).spec
    assert len(decoder._specs) <= 3
    assert decoder.decoded == 11  # ten specs and one status


def test_a_payload_not_from_the_bus_takes_the_codec() -> None:
    p = pod("a", "g")
    decoder = PodDecoder()
    assert decoder.pod(EventLog().created(p)) == p  # a plain payload (a checkpoint, a test)
    assert decoder.decoded == 0


def test_the_view_folds_pods_from_the_bus() -> None:
    view = SchedulerView()
    pods = [pod(f"w-{i}", "g") for i in range(3)]
    for i, p in enumerate(pods):
        view.apply(from_the_bus(p, seq=i + 1))
    assert view.pod_decoder.decoded == 2
    assert view.snapshot().pods == tuple(pods)


def test_a_pod_decoded_when_it_is_bound_is_the_codecs_pod_on_that_node() -> None:
    """What a node agent does: the plain object kept from the PodCreated, decoded at its PodBound."""
    decoder = PodDecoder()
    created = [pod(f"w-{i}", "g") for i in range(3)]
    bound = []
    for i, p in enumerate(created):
        event = from_the_bus(p, seq=i + 1)
        parts = decoder.pod_bytes(event)
        assert parts is not None
        bound.append(decoder.from_plain(event.data.object, parts, node_name=f"n{i}"))  # type: ignore[attr-defined]
    expected = [evolve(p, spec=evolve(p.spec, node_name=f"n{i}")) for i, p in enumerate(created)]
    assert bound == expected and decoder.decoded == 2
    # an object without its three parts is left to the generic codec, which names what is wrong
    assert decoder.from_plain({"kind": "Pod", "object": {"meta": {}}}, PodBytes(b"", b"")) is None


def test_a_podcreated_holding_another_kind_is_refused_naming_it() -> None:
    event = from_the_bus(pod("a", "g"))
    job_payload = {"object": {"kind": "Job", "object": {}}}
    env = Envelope.create("Unchecked", time=1.0, producer="job-controller", correlation_id="default/a")
    forged = Envelope(**{**env.to_dict(), "type": "PodCreated", "payload": job_payload})
    ref = EventSubject("pod", "job-controller", "PodCreated", "default", "a")
    with pytest.raises(ValueError, match="expected an encoded Pod"):
        PodDecoder().pod(to_event(1, ref, Envelope.decode(forged.encode())))
    assert PodDecoder().pod_bytes(event) is not None
