"""The view decodes the pod a PodCreated carries as the generic codec does, building each distinct spec and
status once (services/scheduler/pod_decode.py)."""

from __future__ import annotations

import pytest
from support.builders import pod
from support.events import EventLog

from contracts.codec import encode_object
from contracts.objects import Pod, Toleration
from services.scheduler import pod_decode
from services.scheduler.pod_decode import PodDecoder
from services.scheduler.view import SchedulerView
from services.scheduler.view_events import event_object
from shared.bus.envelope import Envelope
from shared.bus.subjects import EventSubject
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
