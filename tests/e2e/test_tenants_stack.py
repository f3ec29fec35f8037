"""Tenants on the stack `lahar up` runs: tenant a (namespace a, queue qa) and tenant b (namespace b, every
queue), added by the operator with `lahar tenant add`. A tenant manages its own jobs; it cannot write
into another tenant's namespace, delete or command its jobs, submit to a queue it may not use, or touch
the operator's kinds, by the API or by intake; each refusal is `forbidden`, the CLI exits 1 and the log
has no trace of it. The operator can do everything; a forged Nats-Request-Info changes nothing; a removed
tenant's key is refused."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats
import nats.errors
import pytest
from e2e.conftest import Stack, operator_bus
from e2e.test_bus_identities import (
    connected,
    first_record,
    forged_pod_bound,
    records_on,
    try_to_publish_an_event,
)

from contracts.bus_messages import DeadLetter
from contracts.events import BINDER
from shared.bus.heartbeats import Heartbeat, encode_heartbeat, heartbeat_subject
from shared.bus.subjects import (
    DEADLETTER_STREAM,
    INTAKE_STREAM,
    dead_letter_subject,
    event_filter,
    plan_subject,
    tenant_intake_subject,
)
from shared.client import LaharClient
from shared.security.credentials import read_credentials
from shared.security.tls import client_context

pytestmark = pytest.mark.timeout(300)


def job(name: str, namespace: str, queue: str | None = None) -> str:
    """A job whose pod matches no node: it stays pending, which is all these tests need."""
    spec_queue = f"  queue: {queue}\n" if queue else ""
    return f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  minAvailable: 1
{spec_queue}  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        nodeSelector: {{lahar.dev/nowhere: "true"}}
        containers: [{{name: c, image: busybox, command: [sleep, "1"]}}]
"""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


class Tenants:
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.a = stack.home / "creds" / "tenant-a.nk"
        self.b = stack.home / "creds" / "tenant-b.nk"

    def lahar(self, creds: Path | None, *args: str) -> tuple[int, str]:
        extra = ("--creds", str(creds)) if creds is not None else ()
        done = self.stack.lahar(*args, *extra)
        return done.returncode, done.stdout + done.stderr

    def apply(self, creds: Path | None, text: str) -> tuple[int, str]:
        path = self.stack.home / f"{uuid.uuid4().hex}.yaml"
        path.write_text(text)
        return self.lahar(creds, "apply", "-f", str(path))

    async def client(self, creds: Path | str) -> LaharClient:
        state = self.stack.state
        return await LaharClient.connect(
            state.nats_url, state.etcd_endpoint, creds=str(creds), tls_ca=state.tls_ca or None
        )


@pytest.fixture(scope="module")
def tenants(stack: Stack) -> Iterator[Tenants]:
    t = Tenants(stack)
    for queue in ("qa", "qb"):
        code, out = t.lahar(None, "queue", "create", "-n", queue)
        assert code == 0, out
    code, out = t.lahar(None, "tenant", "add", "a", "--namespaces", "a", "--queues", "qa")
    assert code == 0, out
    code, out = t.lahar(None, "tenant", "add", "b", "--namespaces", "b")
    assert code == 0, out
    yield t


async def no_trace(stack: Stack, namespace: str, name: str) -> None:
    """Nothing about the object in the log: no event, no rejection."""
    records = await records_on(stack, event_filter(namespace=namespace, name=name))
    assert records == [], [s for s, _ in records]


def test_the_operator_lists_tenants_and_a_tenant_may_not(tenants: Tenants) -> None:
    code, out = tenants.lahar(None, "tenant", "list", "-o", "json")
    assert code == 0, out
    listed = {t["name"]: t for t in json.loads(out)}
    assert listed["a"]["namespaces"] == ["a"] and listed["a"]["queues"] == ["qa"]
    assert listed["b"]["queues"] is None  # every queue
    assert listed["a"]["public_keys"] == [read_credentials(tenants.a).public_key]
    code, out = tenants.lahar(tenants.a, "tenant", "list")
    assert code == 1 and "may not list tenants" in out
    code, out = tenants.lahar(tenants.a, "tenant", "remove", "b")
    assert code == 1 and "may not remove tenants" in out


async def test_a_tenant_manages_its_own_jobs(tenants: Tenants) -> None:
    name = unique("own")
    code, out = tenants.apply(tenants.a, job(name, "a", "qa"))
    assert code == 0, out
    async with await tenants.client(tenants.a) as client:
        answer = await client.command("suspend", name, "a")
        assert answer.accepted, answer
    code, out = tenants.lahar(tenants.a, "delete", "job", name, "-n", "a")
    assert code == 0, out
    await first_record(tenants.stack, event_filter("job", "a", event_type="JobDeleted", name=name))


async def test_a_tenant_cannot_touch_another_tenants_namespace_nor_a_queue_it_may_not_use(
    tenants: Tenants,
) -> None:
    stack = tenants.stack
    theirs = unique("theirs")
    code, out = tenants.apply(tenants.b, job(theirs, "b", "qb"))
    assert code == 0, out
    admitted = event_filter(namespace="b", name=theirs, producer="admission")  # no delete, no command
    before = await records_on(stack, admitted)

    intruder = unique("intruder")
    code, out = tenants.apply(tenants.a, job(intruder, "b", "qa"))
    assert code == 1 and "tenant 'a' may not write in namespace 'b'" in out, out
    code, out = tenants.lahar(tenants.a, "delete", "job", theirs, "-n", "b")
    assert code == 1 and "tenant 'a' may not delete in namespace 'b'" in out, out
    code, out = tenants.lahar(tenants.a, "job", "suspend", "-N", theirs, "-n", "b")
    assert code == 1 and "tenant 'a' may not command in namespace 'b'" in out, out
    wrong_queue, defaulted = unique("qb"), unique("default")
    code, out = tenants.apply(tenants.a, job(wrong_queue, "a", "qb"))
    assert code == 1 and "spec.queue: tenant 'a' may not submit to queue 'qb'" in out, out
    code, out = tenants.apply(tenants.a, job(defaulted, "a"))  # defaulted to the queue "default"
    assert code == 1 and "may not submit to queue 'default'" in out, out
    # a manifest is refused whole: its allowed document is not written either
    allowed = unique("allowed")
    code, out = tenants.apply(tenants.a, job(allowed, "a", "qa") + "---\n" + job(intruder, "b", "qa"))
    assert code == 1, out
    code, out = tenants.lahar(tenants.a, "queue", "create", "-n", unique("q"))
    assert code == 1 and "may not write a Queue" in out, out
    code, out = tenants.lahar(tenants.a, "queue", "operate", "-n", "qa", "-a", "close")
    assert code == 1 and "may not command a Queue" in out, out
    async with await tenants.client(tenants.a) as client:
        answer = await client.command("suspend", theirs, "b")
        assert answer.code == "forbidden" and not answer.accepted, answer

    for namespace, name in (("b", intruder), ("a", wrong_queue), ("a", defaulted), ("a", allowed)):
        await no_trace(stack, namespace, name)
    assert await records_on(stack, admitted) == before
    assert await records_on(stack, event_filter("command", "b")) == []


async def test_a_tenant_reads_only_its_own_namespaces_in_the_read_model(tenants: Tenants) -> None:
    mine, theirs = unique("read-a"), unique("read-b")
    for creds, name, namespace, queue in ((tenants.a, mine, "a", "qa"), (tenants.b, theirs, "b", "qb")):
        code, out = tenants.apply(creds, job(name, namespace, queue))
        assert code == 0, out
    # the operator sees both (once the job-controller has written them); tenant a its own job (and the
    # queues, which it submits to), never b's
    deadline = time.monotonic() + 60
    while True:
        code, out = tenants.lahar(None, "get", "jobs", "-A", "-o", "json")
        if code == 0 and mine in out and theirs in out:
            break
        assert time.monotonic() < deadline, out
        await asyncio.sleep(0.2)
    code, out = tenants.lahar(tenants.a, "get", "jobs", "-n", "a", "-o", "json")
    assert code == 0 and mine in out, out
    code, out = tenants.lahar(tenants.a, "get", "queues")
    assert code == 0 and "qa" in out, out
    code, out = tenants.lahar(tenants.a, "get", "jobs", "-n", "b", "-o", "json")
    assert code != 0 and theirs not in out and "permission denied" in out.lower(), out
    code, out = tenants.lahar(tenants.a, "get", "pods", "-A")
    assert code != 0 and theirs not in out, out


async def test_a_tenant_cannot_publish_events_plans_or_heartbeats(tenants: Tenants) -> None:
    user = tenants.a.stem  # tenant-a: its credentials file in the stack's creds directory
    assert tenants.a == tenants.stack.home / "creds" / f"{user}.nk"
    subject, data, _ = forged_pod_bound("any-pod", BINDER)
    await try_to_publish_an_event(tenants.stack, user, subject, data)
    await try_to_publish_an_event(tenants.stack, user, plan_subject("scheduler-0"), b"{}")
    async with connected(tenants.stack, user) as (nc, refusals):
        beat = heartbeat_subject("sim")
        await nc.publish(beat, encode_heartbeat(Heartbeat("sim", 0.0, ("ghost-node",))))
        await refusals.wait_for(beat)


async def test_the_same_rules_hold_for_intake(tenants: Tenants) -> None:
    stack = tenants.stack
    allowed, wrong_queue, elsewhere = unique("intake-ok"), unique("intake-qb"), unique("intake-b")
    async with connected(stack, tenants.a.stem) as (nc, refusals):
        # another tenant's namespace: the server itself refuses the publish
        subject = tenant_intake_subject("job", "b", elsewhere, "a")
        await nc.publish(subject, job(elsewhere, "b", "qa").encode())
        await refusals.wait_for(subject)
        # so it does under another tenant's name, in its own namespace
        posing = tenant_intake_subject("job", "a", elsewhere, "b")
        await nc.publish(posing, job(elsewhere, "a", "qa").encode())
        await refusals.wait_for(posing)
        js = nc.jetstream(prefix="lahar.js")
        # a queue it may not use, and a manifest for namespace b on its own subject: dead-lettered
        for name, text in ((wrong_queue, job(wrong_queue, "a", "qb")), (allowed, job(allowed, "a", "qa"))):
            await js.publish(tenant_intake_subject("job", "a", name, "a"), text.encode())
        await js.publish(
            tenant_intake_subject("job", "a", elsewhere, "a"), job(elsewhere, "b", "qa").encode()
        )
    await first_record(stack, event_filter("job", "a", event_type="JobSubmitted", name=allowed))
    letters = await forbidden_letters(stack, {wrong_queue, elsewhere})
    assert "may not submit to queue 'qb'" in letters[wrong_queue].error
    assert "may not write in namespace 'b'" in letters[elsewhere].error
    for namespace, name in (("a", wrong_queue), ("b", elsewhere), ("a", elsewhere)):
        await no_trace(stack, namespace, name)


async def forbidden_letters(stack: Stack, names: set[str], timeout_s: float = 60.0) -> dict[str, DeadLetter]:
    """The intake dead letters of reason forbidden for the named objects, once all are there."""
    bus = await operator_bus(stack.state, "tenants-test")
    found: dict[str, DeadLetter] = {}
    try:
        async with asyncio.timeout(timeout_s):
            async for record in bus.follow(
                DEADLETTER_STREAM, subject_filter=dead_letter_subject(INTAKE_STREAM, "admission")
            ):
                letter = msgspec.json.decode(record.data, type=DeadLetter)
                name = letter.subject.split(".")[4]
                if name in names and letter.reason == "forbidden":
                    found[name] = letter
                if set(found) == names:
                    return found
    finally:
        await bus.close()
    return found


async def test_a_forged_request_info_header_changes_nothing(tenants: Tenants) -> None:
    stack = tenants.stack
    operator = read_credentials(stack.state.admin_creds).public_key
    name = unique("forged")
    async with await tenants.client(tenants.a) as client:
        forged = json.dumps({"acc": "CLIENTS", "user": operator, "name": "admin"})
        reply = await client.bus.nc.request(
            "lahar.api.apply",
            job(name, "b", "qa").encode(),
            timeout=10,
            headers={"Nats-Request-Info": forged},
        )
    answer = json.loads(reply.data)
    assert answer["code"] == "forbidden", answer
    await no_trace(stack, "b", name)


async def test_the_operator_can_do_everything(tenants: Tenants) -> None:
    name = unique("op")
    code, out = tenants.apply(None, job(name, "a", "qb"))  # a tenant's namespace, any queue
    assert code == 0, out
    code, out = tenants.lahar(None, "job", "suspend", "-N", name, "-n", "a")
    assert code == 0, out
    code, out = tenants.lahar(None, "delete", "job", name, "-n", "a")
    assert code == 0, out
    code, out = tenants.lahar(None, "queue", "operate", "-n", "qb", "-a", "close")
    assert code == 0, out


def tls_options(stack: Stack) -> dict[str, Any]:
    return {"tls": client_context(stack.state.tls_ca)} if stack.state.tls_ca else {}


async def refused_soon(stack: Stack, options: dict[str, Any], timeout_s: float = 10.0) -> None:
    """Until the servers refuse the key (they reload their configuration a moment after the signal)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            nc = await nats.connect(
                stack.state.nats_url, allow_reconnect=False, **tls_options(stack), **options
            )
        except nats.errors.Error as exc:
            assert "authorization violation" in str(exc).lower()
            return
        await nc.close()
        assert time.monotonic() < deadline, "a key no longer issued was still accepted"
        await asyncio.sleep(0.1)


async def test_adding_a_tenant_again_rotates_its_key(tenants: Tenants) -> None:
    old = read_credentials(tenants.b)
    code, out = tenants.lahar(None, "tenant", "add", "b", "--namespaces", "b")
    assert code == 0, out
    new = read_credentials(tenants.b)
    assert new.public_key != old.public_key
    await refused_soon(tenants.stack, old.connect_options())
    name = unique("rotated")
    code, out = tenants.apply(tenants.b, job(name, "b", "qa"))  # at once, with the new key
    assert code == 0, out


async def test_a_removed_tenant_is_refused(tenants: Tenants) -> None:
    options = read_credentials(tenants.a).connect_options()
    code, out = tenants.lahar(None, "tenant", "remove", "a")
    assert code == 0, out
    await refused_soon(tenants.stack, options)
    assert not tenants.a.exists()  # its credentials file is gone with it
    code, out = tenants.lahar(None, "tenant", "list", "-o", "json")
    assert code == 0 and [t["name"] for t in json.loads(out)] == ["b"], out
