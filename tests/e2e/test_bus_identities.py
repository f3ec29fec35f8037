"""The broker enforces who may write what, on the stack `lahar up` runs (security on by default): an
unauthenticated connection is refused; the operator's client credentials cannot publish on the event,
plan or heartbeat subjects; a service cannot publish an event type it does not own; a forged PodBound
never reaches the log; a scheduler replica hears the node agent's usage samples, which nobody else may
send; and jobs still run to completion."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from e2e.conftest import Stack, operator_bus
from nats.aio.client import Client as NatsClient

from contracts.events import BINDER
from contracts.usage import decode_report
from shared.bus.envelope import Envelope
from shared.bus.heartbeats import Heartbeat, encode_heartbeat, heartbeat_subject
from shared.bus.subjects import EVENTS_STREAM, event_filter, event_subject, intake_subject, plan_subject
from shared.client import LaharClient
from shared.security.credentials import new_user, read_credentials, write_private
from shared.security.permissions import ADMIN, Identity
from shared.security.tls import client_context
from shared.usage.wire import USAGE_FILTER, usage_subject

pytestmark = pytest.mark.timeout(300)

VIOLATION_TIMEOUT_S = 10.0


class Refusals:
    """The permission violations the server reported to one connection."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.changed = asyncio.Event()

    async def on_error(self, exc: Exception) -> None:
        self.seen.append(str(exc).lower())
        self.changed.set()

    async def wait_for(self, subject: str) -> None:
        """Until the server said it refused a publish to subject (it says so asynchronously)."""
        needle = f'permissions violation for publish to "{subject.lower()}"'
        async with asyncio.timeout(VIOLATION_TIMEOUT_S):
            while not any(needle in seen for seen in self.seen):
                self.changed.clear()
                await self.changed.wait()


def pod_manifest(name: str) -> str:
    """A pod whose nodeSelector matches no node: it can only stay pending."""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulerName: volcano
  nodeSelector: {{lahar.dev/nowhere: "true"}}
  containers: [{{name: c, image: busybox, command: [sleep, "1"]}}]
"""


def creds(stack: Stack, user: str) -> Path:
    return stack.home / "creds" / f"{user}.nk"


def tls(stack: Stack) -> dict[str, Any]:
    """nats-py's options for the stack's TLS (which `lahar up` turns on with the identities)."""
    return {"tls": client_context(stack.state.tls_ca)} if stack.state.tls_ca else {}


@contextlib.asynccontextmanager
async def connected(stack: Stack, user: str) -> AsyncIterator[tuple[NatsClient, Refusals]]:
    refusals = Refusals()
    nc = await nats.connect(
        stack.state.nats_url,
        allow_reconnect=False,
        error_cb=refusals.on_error,
        **read_credentials(creds(stack, user)).connect_options(),
        **tls(stack),
    )
    try:
        yield nc, refusals
    finally:
        await nc.close()


def forged_pod_bound(pod: str, producer: str) -> tuple[str, bytes, str]:
    """A PodBound that puts `pod` on a node that does not exist: (subject, data, envelope id)."""
    envelope = Envelope.create(
        "PodBound",
        time=time.time(),
        producer=BINDER,
        correlation_id=f"default/{pod}",
        payload={"node": "no-such-node", "plan": str(uuid.uuid4())},
    )
    return event_subject("pod", "default", pod, "PodBound", producer), envelope.encode(), envelope.id


async def try_to_publish_an_event(stack: Stack, user: str, subject: str, data: bytes) -> None:
    """Publish onto the event log as `user`: the server refuses it and no ack ever comes."""
    async with connected(stack, user) as (nc, refusals):
        js = nc.jetstream()
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await js.publish(subject, data, timeout=2.0, headers={"Nats-Msg-Id": str(uuid.uuid4())})
        await refusals.wait_for(subject)


async def records_on(stack: Stack, subject_filter: str) -> list[tuple[str, bytes]]:
    bus = await operator_bus(stack.state, "identities-test")
    try:
        return [(r.subject, r.data) async for r in bus.replay(EVENTS_STREAM, subject_filter=subject_filter)]
    finally:
        await bus.close()


async def first_record(stack: Stack, subject_filter: str, timeout_s: float = 60.0) -> None:
    """Wait until the log holds a record on subject_filter (following it from the start)."""
    bus = await operator_bus(stack.state, "identities-test")
    try:
        async with asyncio.timeout(timeout_s):
            async for _ in bus.follow(EVENTS_STREAM, subject_filter=subject_filter):
                return
    finally:
        await bus.close()


async def test_a_connection_without_credentials_or_with_unknown_ones_is_refused(stack: Stack) -> None:
    with pytest.raises(nats.errors.Error, match=r"(?i)authorization violation"):
        await nats.connect(stack.state.nats_url, allow_reconnect=False, connect_timeout=5, **tls(stack))
    stranger = stack.home / "stranger.nk"
    write_private(stranger, new_user(Identity(ADMIN, ADMIN)).file_text())  # a key the server never saw
    with pytest.raises(nats.errors.Error, match=r"(?i)authorization violation"):
        await nats.connect(
            stack.state.nats_url,
            allow_reconnect=False,
            connect_timeout=5,
            **read_credentials(stranger).connect_options(),
            **tls(stack),
        )


async def test_the_operator_cannot_publish_events_plans_or_heartbeats(stack: Stack) -> None:
    subject, data, _ = forged_pod_bound("any-pod", BINDER)
    await try_to_publish_an_event(stack, ADMIN, subject, data)
    await try_to_publish_an_event(stack, ADMIN, plan_subject("scheduler-0"), b"{}")
    async with connected(stack, ADMIN) as (nc, refusals):
        beat = heartbeat_subject("sim")
        await nc.publish(beat, encode_heartbeat(Heartbeat("sim", 0.0, ("ghost-node",))))
        await refusals.wait_for(beat)
        # JetStream would hand a stored message, raw, to whatever reply subject the request names
        direct = f"$JS.API.DIRECT.GET.{EVENTS_STREAM}"
        await nc.publish(
            direct, b'{"seq": 1}', reply=event_subject("pod", "default", "x", "PodBound", BINDER)
        )
        await refusals.wait_for(direct)
        # nor may it read a work queue: its consumer's deliveries go where the consumer's creator says
        intake = "$JS.API.CONSUMER.CREATE.LAHAR_INTAKE"
        await nc.publish(intake, b"{}")
        await refusals.wait_for(intake)


async def test_a_service_cannot_publish_an_event_type_it_does_not_own(stack: Stack) -> None:
    scheduler = "scheduler-0"
    # under the binder's producer token, and under its own
    for producer in (BINDER, scheduler):
        subject, data, _ = forged_pod_bound("any-pod", producer)
        await try_to_publish_an_event(stack, scheduler, subject, data)
    # admission writes JobSubmitted, not the job-controller's JobStatusChanged
    await try_to_publish_an_event(
        stack, "admission", event_subject("job", "default", "j", "JobStatusChanged", "job-controller"), b"x"
    )
    # a replica's plans are its own
    await try_to_publish_an_event(stack, scheduler, plan_subject("scheduler-9"), b"{}")


async def test_a_forged_pod_bound_never_reaches_the_log(stack: Stack) -> None:
    """The issue's exploit: a pending pod whose nodeSelector matches no node, "bound" by a forged
    PodBound from a client, then from a service that is not the binder."""
    pod = f"forged-{uuid.uuid4().hex[:8]}"
    async with await LaharClient.connect(
        stack.state.nats_url,
        stack.state.etcd_endpoint,
        creds=stack.state.admin_creds,
        tls_ca=stack.state.tls_ca or None,
    ) as client:
        answer = await client.apply(pod_manifest(pod))
        assert answer.accepted, answer
    forged_ids = []
    for user in (ADMIN, "scheduler-0", "job-controller", "node-agent"):
        subject, data, envelope_id = forged_pod_bound(pod, BINDER)
        forged_ids.append(envelope_id)
        await try_to_publish_an_event(stack, user, subject, data)
    # Naming the binder's subject as the reply of an intake message or an API request the operator may
    # send: JetStream's acknowledgement and admission's answer would land there, and the stream would
    # store them; from the clients' account the reply goes back to the client, and nowhere else.
    # JetStream acknowledges the intake message as it stores it, before admission reads it, so once
    # the decoy is admitted whatever the acknowledgement did is in the log.
    injected = event_subject("pod", "default", pod, "PodBound", BINDER)
    decoys = [f"{pod}-intake", f"{pod}-api"]
    async with connected(stack, ADMIN) as (nc, _):
        manifest = pod_manifest(decoys[0]).encode()
        await nc.publish(intake_subject("pod", "default", decoys[0]), manifest, reply=injected)
        await nc.publish("lahar.api.apply", pod_manifest(decoys[1]).encode(), reply=injected)
        await nc.flush()
    for decoy in decoys:
        await first_record(stack, event_filter("pod", "default", event_type="PodSubmitted", name=decoy))
    records = await records_on(stack, event_filter("pod", "default", name=pod))
    for subject, data in records:
        assert subject != injected, f"something reached the binder's subject: {data[:200]!r}"
        assert Envelope.decode(data).id not in forged_ids, f"a forged event reached the log on {subject}"
    assert [s for s, _ in records if ".PodSubmitted." in s], "the pod's own history is in the log"


async def test_a_scheduler_replica_hears_the_agents_usage_which_nobody_else_may_send(stack: Stack) -> None:
    reports: asyncio.Queue[bytes] = asyncio.Queue()

    async def received(msg: Any) -> None:
        await reports.put(msg.data)

    async with connected(stack, "scheduler-0") as (nc, _):
        await nc.subscribe(USAGE_FILTER, cb=received)
        # the agent samples every 10 s: its next report comes within one period
        report = decode_report(await asyncio.wait_for(reports.get(), 30))
    assert report.nodes and all(n.cpu_milli >= 0 and n.memory_bytes > 0 for n in report.nodes)
    for user, agent in ((ADMIN, report.agent), ("node-agent", f"not-{report.agent}")):
        async with connected(stack, user) as (nc, refusals):
            subject = usage_subject(agent)
            await nc.publish(subject, b"{}")
            await refusals.wait_for(subject)


def test_a_gang_job_runs_to_completion_with_security_on(stack: Stack) -> None:
    applied = stack.lahar("apply", "-f", "examples/gang-job.yaml")
    assert applied.returncode == 0, applied.stderr
    waited = stack.lahar("wait", "job", "gang-demo", "--for", "Completed", "--timeout", "120s")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    status = stack.lahar("status", "-o", "json")
    assert f'"admin_creds": "{stack.state.admin_creds}"' in status.stdout
