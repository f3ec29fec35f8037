"""Bundles on a real nats-server: a service folds a bundle's events one by one (a bad one set aside
alone), and the events it writes about one job's pods go out as one message that it reads back."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import msgpack
import pytest

from contracts import payloads
from shared.bus.bundles import unpack
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.poison import read_quarantine
from shared.bus.streams import events_stream
from shared.bus.subjects import EVENTS_STREAM, event_filter, event_subject, parse_event_subject
from shared.runner import EventSourcedService, RunnerConfig
from shared.runner_types import Event, Output, deterministic_id
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry

QUIET = RunnerConfig(reconcile_interval_s=0.2, checkpoint_every_events=1_000_000, checkpoint_every_s=3600)


@dataclass
class Seen:
    bound: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # pod -> (event id, node, seq)
    running: dict[str, str] = field(default_factory=dict)  # pod -> event id
    jobs: dict[str, str] = field(default_factory=dict)  # pod -> the job its events correlate with


class StartsWhatIsBound:
    """Folds PodBound and PodRunning; asks for a PodRunning of every bound pod that has none."""

    name = "starter"
    reads = ("PodBound", "PodRunning")

    def initial(self) -> Seen:
        return Seen()

    def apply(self, state: Seen, event: Event) -> Seen:
        assert event.kind == "pod" and event.namespace == "default"
        if event.type == "PodBound":
            node = event.payload_as(payloads.PodBound).node
            state.bound[event.name] = (event.id, node, event.seq)
            state.jobs[event.name] = event.correlation_id
        else:
            state.running[event.name] = event.id
        return state

    def touched(self, state: Seen, event: Event) -> list[str]:
        return [event.name]

    def due(self, state: Seen, now: float) -> list[str]:
        return []

    def reconcile(self, state: Seen, now: float, keys: Collection[str] | None = None) -> list[Output]:
        names = state.bound if keys is None else [k for k in keys if k in state.bound]
        return [
            Output(
                type="PodRunning",
                kind="pod",
                namespace="default",
                name=name,
                id=deterministic_id(self.name, "PodRunning", name),
                correlation_id=state.jobs[name],
                payload=payloads.PodRunning(node=state.bound[name][1], started_at=now),
                causation_id=state.bound[name][0],
            )
            for name in sorted(names)
            if name not in state.running
        ]

    def dump(self, state: Seen) -> bytes:
        return msgpack.packb([state.bound, state.running, state.jobs])

    def load(self, data: bytes) -> Seen:
        bound, running, jobs = msgpack.unpackb(data, raw=False)
        return Seen({k: tuple(v) for k, v in bound.items()}, running, jobs)


def item(name: str, payload: dict[str, object]) -> dict[str, object]:
    return {"name": name, "id": deterministic_id("binder", "PodBound", name), "payload": payload}


@pytest.fixture
async def service(bus: Bus, etcd: Etcd) -> EventSourcedService[Seen]:
    await bus.ensure_streams([events_stream()])
    made = EventSourcedService(StartsWhatIsBound(), bus, etcd, QUIET, registry=Registry())
    yield made
    if made._task is not None and not made._task.done():
        await made.shutdown()


async def test_a_bundles_events_are_folded_one_by_one_and_its_written_events_come_back_as_one(
    bus: Bus, service: EventSourcedService[Seen]
) -> None:
    bundle = Envelope.create(
        "PodsBound",
        time=1.0,
        producer="binder",
        correlation_id="default/train",
        payload={
            "events": [
                item("train-0", {"node": "node-1", "plan": "p"}),
                item("train-1", {"node": "", "plan": "p"}),  # not a PodBound: set aside alone
                item("train-2", {"node": "node-2", "plan": "p"}),
            ]
        },
        causation_id="p",
    )
    seq = (await bus.publish(bundle, event_subject("pods", "default", "train", "PodsBound", "binder"))).seq
    await service.run_until_idle(20)

    state = service.state
    assert {name: (i, node) for name, (i, node, _) in state.bound.items()} == {
        "train-0": (deterministic_id("binder", "PodBound", "train-0"), "node-1"),
        "train-2": (deterministic_id("binder", "PodBound", "train-2"), "node-2"),
    }
    assert {s for _, _, s in state.bound.values()} == {seq}  # the bundle's place in the log
    assert service.metrics.events_skipped.labels("starter", "invalid_payload").value == 1
    ((_, record),) = await read_quarantine(bus, "starter")
    assert (record.seq, record.type) == (seq, "PodBound") and "node" in record.error

    # Its two PodRunning went out as one bundle, and came back as two events with their own ids.
    assert state.running == {name: deterministic_id("starter", "PodRunning", name) for name in state.bound}
    written = [r async for r in bus.replay(EVENTS_STREAM, subject_filter=event_filter("pods", "default"))]
    assert [r.subject.split(".")[4] for r in written] == ["PodsBound", "PodsRunning"]
    assert service.publisher.inflight == 0


async def test_one_decision_about_pods_of_several_jobs_is_one_message_each_event_keeping_its_job(
    bus: Bus, service: EventSourcedService[Seen]
) -> None:
    serve = dict(item("serve-0", {"node": "node-3", "plan": "q"}), correlation_id="default/serve")
    bundle = Envelope.create(
        "PodsBound",
        time=1.0,
        producer="binder",
        correlation_id="default/train",
        payload={"events": [item("train-0", {"node": "node-1", "plan": "p"}), serve]},
    )
    await bus.publish(bundle, event_subject("pods", "default", "all", "PodsBound", "binder"))
    await service.run_until_idle(20)

    assert service.state.jobs == {"train-0": "default/train", "serve-0": "default/serve"}
    written = [r async for r in bus.replay(EVENTS_STREAM, subject_filter=event_filter("pods", "default"))]
    assert [r.subject.split(".")[4] for r in written] == ["PodsBound", "PodsRunning"]
    ref, env = parse_event_subject(written[1].subject), written[1].envelope()
    assert [(r.name, e.correlation_id) for r, e in unpack(ref, env)] == [
        ("serve-0", "default/serve"),
        ("train-0", "default/train"),
    ]
    # counted as two events in one message
    assert service.metrics.outputs.labels("starter", "PodRunning", "stored").value == 2
    assert service.metrics.messages.labels("starter", "stored").value == 1
