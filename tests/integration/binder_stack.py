"""A binder and scheduler replicas run in the test's process against real nats-server and etcd (the
`stack` and `beats` fixtures of conftest.py), and what the binder tests read back: the log, plans sent by
hand, heartbeats as a node agent sends them."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.log_records import subjects_and_envelopes

from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from contracts.objects import Pod
from contracts.plans import PlanMessage, encode_plan
from services.binder.service import BinderConfig, BinderService
from services.scheduler.core.conf import SchedulerConf
from services.scheduler.service import SchedulerConfig, SchedulerService
from shared.bus.envelope import Envelope
from shared.bus.heartbeats import Heartbeat, encode_heartbeat, heartbeat_subject
from shared.bus.jetstream import Bus
from shared.bus.poison import read_dead_letters
from shared.bus.subjects import EVENTS_STREAM, PLANS_STREAM, event_subject, plan_subject
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry
from shared.telemetry.tracing import setup_tracing

QUIET = {"checkpoint_every_events": 1_000_000, "checkpoint_every_s": 3600.0, "reconcile_interval_s": 0.2}
CREATED = {"Node": "NodeRegistered", "PodGroup": "PodGroupCreated", "Pod": "PodCreated"}
TRACE_ID = uuid.uuid4().hex


@dataclass(frozen=True)
class Logged:
    seq: int
    type: str
    key: str
    env: Envelope


class Stack:
    """Services run in this process, each on its own connections; all stopped at the end."""

    def __init__(self, nats: NatsServer, etcd: EtcdServer) -> None:
        self.nats, self.etcd_server = nats, etcd
        self.services: list[Any] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.clients: list[Bus | Etcd] = []
        self.tracer = setup_tracing("tests", InMemorySpanExporter(), set_global=False).get_tracer("tests")

    async def _connect(self) -> tuple[Bus, Etcd]:
        bus, etcd = await Bus.connect(self.nats.url), await Etcd.connect(*self.etcd_server.endpoint)
        self.clients += [bus, etcd]
        return bus, etcd

    async def binder(self, **config: Any) -> BinderService:
        bus, etcd = await self._connect()
        cfg = BinderConfig(**{**QUIET, "instance_id": "binder-a", "node_timeout_s": 1.5, **config})
        service = BinderService(bus, etcd, cfg, registry=Registry(), tracer=self.tracer)
        await self._start(service)
        return service

    async def scheduler(
        self, replica: str, conf: SchedulerConf | None = None, **config: Any
    ) -> SchedulerService:
        bus, etcd = await self._connect()
        cfg = SchedulerConfig(**{**QUIET, "replica_id": replica, "schedule_period_s": 0.5, **config})
        service = SchedulerService(bus, etcd, cfg, conf, registry=Registry(), tracer=self.tracer)
        await self._start(service)
        return service

    async def _start(self, service: Any) -> None:
        self.services.append(service)
        self.tasks.append(asyncio.create_task(service.run()))
        await asyncio.sleep(0)  # let run() claim the service, so run_until_idle() finds it running

    async def close(self) -> None:
        for service in reversed(self.services):
            await asyncio.wait_for(service.shutdown(), 15)
        for client in self.clients:
            await client.close()
        for task in self.tasks:
            task.result()  # a service that crashed fails the test


class Heartbeats:
    """Heartbeats for the nodes in `beating`, every 0.1 s, as a node agent sends them."""

    def __init__(self, bus: Bus, nodes: Iterable[str]) -> None:
        self.bus, self.beating = bus, set(nodes)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            beat = Heartbeat("test-agent", time.time(), tuple(sorted(self.beating)))
            await self.bus.nc.publish(heartbeat_subject(beat.agent), encode_heartbeat(beat))
            await asyncio.sleep(0.1)  # the sender's period, not a wait for a condition

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def created(bus: Bus, *objects: Any) -> None:
    """Publish each object's creation event the way its writer does, in the job's trace."""
    for obj in objects:
        event_type = CREATED[obj.kind]
        env = Envelope.create(
            event_type,
            time=time.time(),
            producer=EVENT_TYPES[event_type].writer,
            correlation_id=obj.meta.key,
            payload={"object": encode_object(obj)},
            traceparent=f"00-{TRACE_ID}-{uuid.uuid4().hex[:16]}-01",
        )
        catalogued = EVENT_TYPES[event_type]
        subject = event_subject(
            catalogued.subject_kind, obj.meta.namespace or None, obj.meta.name, event_type, catalogued.writer
        )
        await bus.publish(env, subject)


async def send_plan(bus: Bus, plan: PlanMessage) -> None:
    """A plan on LAHAR_PLANS; a fresh message id each time, so sending it twice is a redelivery."""
    await bus.js.publish(
        plan_subject(plan.replica), encode_plan(plan), headers={"Nats-Msg-Id": uuid.uuid4().hex}
    )


async def read_log(bus: Bus) -> list[Logged]:
    out = []
    async for record in bus.replay(EVENTS_STREAM):
        for ref, env in subjects_and_envelopes(record):
            key = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
            out.append(Logged(record.seq, env.type, key, env))
    return out


def of_type(events: list[Logged], event_type: str, key: str | None = None) -> list[Logged]:
    return [e for e in events if e.type == event_type and (key is None or e.key == key)]


def pod_keys(objects: Iterable[Any]) -> list[str]:
    return [o.meta.key for o in objects if isinstance(o, Pod)]


async def events_of(bus: Bus, event_type: str) -> list[Logged]:
    return of_type(await read_log(bus), event_type)


async def bound_exactly(bus: Bus, count: int) -> list[Logged] | None:
    bound = await events_of(bus, "PodBound")
    assert len(bound) <= count, f"more pods bound than expected: {[e.key for e in bound]}"
    return bound if len(bound) == count else None


async def dead_letters_exactly(bus: Bus, count: int) -> list[Any] | None:
    letters = [letter for _, letter in await read_dead_letters(bus)]
    assert len(letters) <= count, f"more dead letters than expected: {letters}"
    return letters if len(letters) == count else None


async def rejections(bus: Bus) -> list[Logged]:
    return await events_of(bus, "PlanRejected")


async def no_plans_left(bus: Bus) -> bool:
    return int((await bus.jsm.stream_info(PLANS_STREAM)).state.messages) == 0
