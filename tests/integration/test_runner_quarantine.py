"""Events a service cannot apply are quarantined, never a crash loop: the toy echo core, made to raise on
chosen events, against real nats-server and etcd."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import replace
from typing import Any

import pytest
from runner_toy import ToyCore, ToyState

from contracts import codec
from contracts.objects import ObjectMeta, Pod
from shared.bus.envelope import Envelope
from shared.bus.errors import EventRefused
from shared.bus.jetstream import Bus
from shared.bus.poison import read_quarantine
from shared.bus.streams import StreamSpec, events_stream
from shared.bus.subjects import EVENTS_STREAM, event_subject
from shared.runner import EventSourcedService, RunnerConfig
from shared.runner_types import Event, Output, deterministic_id
from shared.store.checkpoint import CheckpointStore
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry

QUIET = RunnerConfig(reconcile_interval_s=0.2, checkpoint_every_events=1_000_000, checkpoint_every_s=3600)
POISON_N = 13  # a Ping with this n makes PoisonCore.apply raise
BAD_KEYS_N = 7  # a Ping with this n makes PoisonCore.touched raise


class PoisonCore(ToyCore):
    """The toy core with two bugs: one event it cannot apply, one whose keys it cannot name."""

    def apply(self, state: ToyState, event: Event) -> ToyState:
        if event.type == "Ping" and event.payload["n"] == POISON_N:
            raise KeyError("counts")
        return super().apply(state, event)

    def touched(self, state: ToyState, event: Event) -> list[str]:
        if event.type == "Ping" and event.payload["n"] == BAD_KEYS_N:
            raise ValueError("no keys for seven")
        return super().touched(state, event)


Make = Callable[..., EventSourcedService[ToyState]]


@pytest.fixture
async def make(bus: Bus, etcd: Etcd) -> AsyncIterator[Make]:
    await bus.ensure_streams([events_stream()])
    made: list[EventSourcedService[ToyState]] = []

    def build(**kwargs: Any) -> EventSourcedService[ToyState]:
        service = EventSourcedService(PoisonCore(), bus, etcd, replace(QUIET, **kwargs), registry=Registry())
        made.append(service)
        return service

    yield build
    for service in made:
        if service._task is not None and not service._task.done():
            await service.shutdown()


async def ping(bus: Bus, name: str, n: int = 1) -> int:
    env = Envelope.create("Ping", time=1.0, producer="tests", correlation_id=name, payload={"n": n})
    return (await bus.publish(env, event_subject("toy", None, name, "Ping", "tests"))).seq


def skipped(service: EventSourcedService[ToyState], reason: str) -> float:
    return service.metrics.events_skipped.labels("toy", reason).value


def records(service: EventSourcedService[ToyState], result: str) -> float:
    return service.metrics.quarantine_records.labels("toy", result).value


async def test_an_event_the_core_cannot_apply_is_quarantined_once_across_restarts_and_replays(
    bus: Bus, etcd: Etcd, make: Make
) -> None:
    await ping(bus, "before", n=1)
    poison = await ping(bus, "poison", n=POISON_N)
    await ping(bus, "after", n=2)
    first = make()
    await first.run_until_idle(15)
    assert poison not in first.state.applied and first.seq >= poison
    assert set(first.state.echoes) == set(first.state.pings) and len(first.state.pings) == 2
    assert first.state.total == 3 and skipped(first, "apply_error") == 1
    assert first.health()["ok"] and records(first, "recorded") == 1

    (entry,) = await read_quarantine(bus, "toy")
    record = entry[1]
    assert (record.service, record.seq, record.reason, record.error_type) == (
        "toy",
        poison,
        "apply_error",
        "KeyError",
    )
    assert record.type == "Ping" and record.id and "counts" in record.error

    # Live: a later poison event is set aside too, and the loop goes on with what follows it.
    live_poison = await ping(bus, "poison-live", n=POISON_N)
    await ping(bus, "after-live", n=4)
    await first.run_until_idle(15)
    assert live_poison not in first.state.applied and first.state.total == 7
    assert set(first.state.echoes) == set(first.state.pings) and len(first.state.pings) == 3
    await first.shutdown()

    # A restart replays the whole log (no checkpoint): the same events are set aside, not recorded again.
    await CheckpointStore(etcd, "toy").delete()
    second = make()
    await second.run_until_idle(15)
    assert second.state == first.state and second.seq == first.seq
    assert skipped(second, "apply_error") == 2 and records(second, "duplicate") == 2
    assert records(second, "recorded") == 0
    assert sorted(r.seq for _, r in await read_quarantine(bus, "toy")) == [poison, live_poison]


async def test_an_event_whose_keys_the_core_cannot_name_is_applied_and_everything_reconciled(
    bus: Bus, make: Make
) -> None:
    service = make()
    await service.run_until_idle(15)
    seq = await ping(bus, "seven", n=BAD_KEYS_N)
    await ping(bus, "eight", n=8)
    await service.run_until_idle(15)
    assert seq in service.state.applied and service.state.total == 15
    # its echo comes from the full reconcile that replaced the keys the core could not name
    assert set(service.state.echoes) == set(service.state.pings) and len(service.state.pings) == 2
    assert service.metrics.touched_errors.value == 1 and skipped(service, "apply_error") == 0
    ((_, record),) = await read_quarantine(bus, "toy")
    assert (record.seq, record.reason, record.error_type) == (seq, "touched_error", "ValueError")


async def test_an_invalid_payload_and_a_record_that_is_no_event_are_quarantined_with_their_reason(
    bus: Bus, make: Make
) -> None:
    forged = Envelope(
        type="PodBound", id=str(uuid.uuid4()), time=1.0, producer="binder", correlation_id="x", payload={}
    )
    invalid = (await bus.publish(forged, event_subject("pod", "default", "x", "PodBound", "binder"))).seq
    garbage = (await bus.js.publish(event_subject("toy", None, "junk", "Ping", "tests"), b"\xc1 no")).seq
    await ping(bus, "after", n=3)
    service = make()
    await service.run_until_idle(15)
    assert service.state.total == 3 and skipped(service, "invalid_payload") == 1
    assert skipped(service, "not_an_event") == 1
    reasons = {record.seq: record.reason for _, record in await read_quarantine(bus)}
    assert reasons == {invalid: "invalid_payload", garbage: "not_an_event"}


async def test_a_record_the_quarantine_stream_cannot_take_waits_without_holding_up_the_loop(
    bus: Bus, make: Make
) -> None:
    # Another stream holds the quarantine's subjects, so LAHAR_QUARANTINE cannot be created for now.
    await bus.ensure_streams([StreamSpec(name="SQUATTER", subjects=("lahar.quarantine.>",))])
    poison = await ping(bus, "poison", n=POISON_N)
    await ping(bus, "after", n=2)
    service = make()
    with pytest.raises(TimeoutError):  # not idle while a record is unwritten...
        await service.run_until_idle(2)
    # ...but the loop went on: the events after the poison one are applied and echoed
    assert service.state.total == 2 and set(service.state.echoes) == set(service.state.pings)
    assert service.health()["ok"] and service.health()["quarantine_unwritten"] == 1
    await bus.jsm.delete_stream("SQUATTER")
    await service.run_until_idle(15)
    assert records(service, "recorded") == 1
    assert [r.seq for _, r in await read_quarantine(bus, "toy")] == [poison]


async def test_an_event_about_another_object_than_its_subject_is_refused_and_set_aside(
    bus: Bus, make: Make
) -> None:
    other = codec.encode_object(Pod(meta=ObjectMeta(name="victim", namespace="default")))
    forged = Envelope.create(
        "PodSubmitted", time=1.0, producer="admission", correlation_id="x", payload={"object": other}
    )
    subject = event_subject("pod", "default", "x", "PodSubmitted", "admission")
    with pytest.raises(EventRefused, match="'default/victim'"):  # the bus will not write it...
        await bus.publish(forged, subject)
    # ...but a writer that goes around it (another client, an older lahar) can
    wrong = (await bus.js.publish(subject, forged.encode(), headers={"Nats-Msg-Id": forged.id})).seq
    await ping(bus, "after", n=3)
    service = make()
    await service.run_until_idle(15)
    assert service.state.total == 3 and wrong not in service.state.applied
    assert skipped(service, "wrong_object") == 1
    ((_, record),) = await read_quarantine(bus, "toy")
    assert (record.seq, record.reason, record.error_type) == (wrong, "wrong_object", "WrongObject")
    assert "'default/victim'" in record.error and "'default/x'" in record.error


class ForgingCore(ToyCore):
    """The toy core with a bug in its outputs: for a ping named "forge" it also asks for a PodCreated
    on that pod's subject whose Pod is another one."""

    def reconcile(self, state: ToyState, now: float, keys: Collection[str] | None = None) -> list[Output]:
        outputs = super().reconcile(state, now, keys)
        for ping, (name, _) in state.pings.items():
            if name == "forge" and (keys is None or ping in keys) and not state.echoes.get(ping):
                pod = codec.encode_object(Pod(meta=ObjectMeta(name="victim", namespace="default")))
                forged = Output(
                    type="PodCreated",
                    kind="pod",
                    namespace="default",
                    name="forge",
                    id=deterministic_id("toy", "PodCreated", ping),
                    correlation_id="forge",
                    payload={"object": pod},
                )
                outputs.append(forged)
        return outputs


async def test_an_output_about_another_object_than_its_subject_is_refused_and_not_retried(
    bus: Bus, etcd: Etcd
) -> None:
    await bus.ensure_streams([events_stream()])
    service = EventSourcedService(ForgingCore(), bus, etcd, QUIET, registry=Registry())
    try:
        await ping(bus, "forge", n=1)
        await service.run_until_idle(15)
        # the echo is written; the forged PodCreated is not, and it cost one refusal, not a retry loop
        assert set(service.state.echoes) == set(service.state.pings)
        assert service.metrics.outputs.labels("toy", "PodCreated", "refused").value >= 1
        assert service.metrics.outputs.labels("toy", "PodCreated", "stored").value == 0
        assert not [r async for r in bus.replay(EVENTS_STREAM) if ".PodCreated." in r.subject]
        assert service.health()["ok"]
    finally:
        await service.shutdown()
