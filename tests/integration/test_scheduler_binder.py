"""Scheduler replicas and the binder against real nats-server and etcd: plans from sessions committed as
atomic batches, hand-made plans rejected or deduplicated, node liveness from heartbeats, the ring of
replicas sharing PodGroups, and a killed replica's PodGroups taken over after its lease expires."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from binder_stack import (
    TRACE_ID,
    Heartbeats,
    Stack,
    bound_exactly,
    created,
    dead_letters_exactly,
    events_of,
    no_plans_left,
    of_type,
    pod_keys,
    read_log,
    rejections,
    send_plan,
)
from support.builders import gang, node
from support.waiting import Eventually

from contracts.objects import Pod
from contracts.plans import Bind, PlanMessage, PodGroupUpdate
from services.binder.core.core import BinderCore
from services.binder.core.verify import Verdict
from services.scheduler.service import SchedulerService
from shared.bus.jetstream import Bus
from shared.bus.subjects import EVENTS_STREAM, PLANS_STREAM, plan_subject
from shared.ring import Ring
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Etcd
from shared.store.membership import Membership
from shared.store.read_model import ReadModel

REPO = Path(__file__).resolve().parents[2]
REPLICAS = ("scheduler-0", "scheduler-1")


async def test_binder_commits_a_gang_atomically_rejects_conflicts_and_tracks_liveness(
    stack: Stack, bus: Bus, etcd: Etcd, beats: Heartbeats, eventually: Eventually
) -> None:
    binder = await stack.binder()
    await eventually(lambda: binder.health()["role"] == "leader", what="the binder to lead")
    beats.beating |= {"n1", "n2"}
    g1 = gang("g1", 3)
    await created(bus, node("n1", cpu=4), node("n2", cpu=4), *g1)
    pods = pod_keys(g1)
    status = PodGroupUpdate("Running", (), running=0, succeeded=0, failed=0)
    plan = PlanMessage(
        str(uuid.uuid4()),
        "test",
        0,
        tuple(Bind(p, "default/g1", n) for p, n in zip(pods, ("n1", "n1", "n2"), strict=True)),
        podgroups={"default/g1": status},
    )
    await send_plan(bus, plan)
    bound = await eventually(lambda: bound_exactly(bus, 3), what="three PodBound")
    assert [e.key for e in bound] == pods and {e.env.payload["plan"] for e in bound} == {plan.plan_id}
    log = await read_log(bus)
    batch = [e for e in log if e.env.payload.get("plan") == plan.plan_id]
    # one atomic batch: the gang's binds as one bundle, its status right after
    assert [e.seq for e in batch] == [batch[0].seq] * 3 + [batch[0].seq + 1]
    assert of_type(batch, "PodGroupStatusChanged", "default/g1")[0].env.payload["phase"] == "Running"

    # The same plan again (a redelivery) commits nothing twice and is not rejected either; a plan binding
    # an already bound pod elsewhere is rejected with the reason and the seq it was checked against.
    await send_plan(bus, plan)
    rogue = dataclasses.replace(plan, plan_id=str(uuid.uuid4()), binds=(Bind(pods[0], "default/g1", "n2"),))
    await send_plan(bus, rogue)
    rejected = await eventually(lambda: rejections(bus), what="the rogue plan's rejection")
    await eventually(lambda: no_plans_left(bus), what="every plan to be acknowledged")
    log = await read_log(bus)
    assert [e.env.payload["plan"] for e in rejected] == [rogue.plan_id]
    assert rejected[0].key == "default/g1" and "already bound" in rejected[0].env.payload["reason"]
    # it saw the binds it conflicts with (the ledger's seq: the binder does not fold its status changes)
    assert rejected[0].env.payload["checked_seq"] >= batch[0].seq
    assert len(of_type(log, "PodBound")) == 3
    # A plan made at a later log position than the binder has folded waits for it (its pod is news).
    late = gang("late", 1)
    ahead = await bus.last_seq(EVENTS_STREAM) + 2
    await send_plan(
        bus, PlanMessage(str(uuid.uuid4()), "test", ahead, (Bind(late[1].meta.key, "default/late", "n1"),))
    )
    await created(bus, *late)
    await eventually(lambda: bound_exactly(bus, 4), what="the late pod bound")
    metrics = binder.binder_metrics
    assert metrics.accepted.labels().value == 2 and metrics.rejected.labels("already_bound").value == 1

    # n2 goes silent: NotReady, its pod lost; the read model says so. Heartbeats again: Ready.
    nodes = ReadModel(etcd)
    await eventually(lambda: _node_ready(nodes, "n2", True), what="n2 in the read model")
    beats.beating.discard("n2")
    lost = await eventually(lambda: events_of(bus, "PodLost"), what="the pod on n2 to be lost", timeout_s=10)
    assert [e.key for e in lost] == [pods[2]] and lost[0].env.payload == {"node": "n2", "reason": "NodeLost"}
    assert [e.key for e in of_type(await read_log(bus), "NodeNotReady")] == ["n2"]
    await eventually(lambda: _node_ready(nodes, "n2", False), what="n2 NotReady in the read model")
    beats.beating.add("n2")
    await eventually(lambda: events_of(bus, "NodeReady"), what="n2 Ready again")
    await eventually(lambda: _node_ready(nodes, "n2", True), what="n2 Ready in the read model")
    assert (await nodes.get("node", None, "n1")).object["object"]["ready"] is True  # type: ignore[union-attr]


async def test_plans_the_binder_cannot_handle_end_in_the_dead_letters_and_binding_goes_on(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually, monkeypatch: pytest.MonkeyPatch
) -> None:
    binder = await stack.binder()
    await eventually(lambda: binder.health()["role"] == "leader", what="the binder to lead")
    beats.beating |= {"n1"}
    g1, g2 = gang("g1", 1), gang("g2", 1)
    await created(bus, node("n1", cpu=4), *g1, *g2)
    # Not a plan at all.
    await bus.js.publish(plan_subject("test"), b"\xc1 not a plan", headers={"Nats-Msg-Id": uuid.uuid4().hex})
    # A plan whose rejection has nowhere to go: its PodGroup key names no PodGroup (the binder used to
    # crash publishing it, and again at every redelivery).
    nameless = PlanMessage(str(uuid.uuid4()), "test", 0, (Bind("default/nobody", "default/", "n1"),))
    # A plan the binder's check raises on (a bug its content reaches), about a PodGroup it can answer.
    buggy = PlanMessage(str(uuid.uuid4()), "test", 0, (Bind(pod_keys(g1)[0], "default/g1", "n1"),))
    check = BinderCore._check

    def failing_check(core: BinderCore, state: Any, plan: PlanMessage, now: float) -> Verdict:
        if plan.plan_id == buggy.plan_id:
            raise RuntimeError("a bug this plan reaches")
        return check(core, state, plan, now)

    monkeypatch.setattr(BinderCore, "_check", failing_check)
    good = PlanMessage(str(uuid.uuid4()), "test", 0, (Bind(pod_keys(g2)[0], "default/g2", "n1"),))
    for plan in (nameless, buggy, good):
        await send_plan(bus, plan)

    bound = await eventually(lambda: bound_exactly(bus, 1), what="the good plan's pod bound")
    assert bound[0].key == pod_keys(g2)[0]
    letters = await eventually(
        lambda: dead_letters_exactly(bus, 3), what="three plans in the dead letters", timeout_s=20
    )
    await eventually(lambda: no_plans_left(bus), what="every plan off the plans stream")
    by_reason = sorted((letter.reason, letter.answer, letter.deliveries) for letter in letters)
    assert by_reason == [
        ("handling_failed", "", 3),
        ("handling_failed", "PlanRejected", 3),
        ("undecodable", "", 1),
    ]
    undecodable = next(letter for letter in letters if letter.reason == "undecodable")
    assert undecodable.data == b"\xc1 not a plan" and undecodable.subject == plan_subject("test")
    assert {letter.stream for letter in letters} == {PLANS_STREAM} and {
        letter.consumer for letter in letters
    } == {"binder"}
    rejected = await rejections(bus)
    assert [(e.key, e.env.payload["plan"]) for e in rejected] == [("default/g1", buggy.plan_id)]
    assert "RuntimeError: a bug this plan reaches" in rejected[0].env.payload["reason"]
    metrics = binder.binder_metrics
    assert metrics.failures.labels().value == 6 and metrics.dead_letters.labels("handling_failed").value == 2
    assert metrics.rejected.labels("binder_error").value == 1
    # The binder goes on binding.
    await send_plan(bus, dataclasses.replace(buggy, plan_id=str(uuid.uuid4())))
    assert [e.key for e in await eventually(lambda: bound_exactly(bus, 2), what="g1 bound")][1] == pod_keys(
        g1
    )[0]
    assert binder.health()["ok"]


async def test_replicas_share_the_podgroups_and_place_each_gang_once(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually
) -> None:
    fitting = [f"g{i}" for i in range(6)]
    owners = Ring(REPLICAS).assign(f"default/{g}" for g in fitting)
    assert all(owners.values())  # the names are chosen so that each replica owns some
    binder = await stack.binder()
    replicas = [await stack.scheduler(r) for r in REPLICAS]
    beats.beating |= {"n1", "n2"}
    objects = [node("n1", cpu=8), node("n2", cpu=8)]
    for name in fitting:
        objects += gang(name, 2)
    objects += gang("huge", 3, cpu=9)  # no node has 9 cpus
    await created(bus, *objects)

    placed = [key for key in pod_keys(objects) if not key.startswith("default/huge-")]
    bound = await eventually(
        lambda: bound_exactly(bus, len(placed)), what="every fitting pod bound", timeout_s=20
    )
    assert sorted(e.key for e in bound) == sorted(placed)  # each once, none of huge's
    await eventually(lambda: _unschedulable(bus, "default/huge"), what="huge marked Unschedulable")
    # it says it can never fit (no node has 9 cpus), and the replica that owns it, only that one, counts it
    assert await _unschedulable_reason(bus, "default/huge") == "NeverFits"
    counted = [r.series.pending.counts().get(("default", "NeverFits"), 0) for r in replicas]
    assert sorted(counted) == [0, 1]
    owner = replicas[counted.index(1)]
    assert (
        'lahar_podgroup_pending{queue="default",reason="NeverFits"} 1.0'
        in owner.sched_metrics.registry.render()
    )
    for name in fitting:
        seqs = [e.seq for e in bound if e.key.startswith(f"default/{name}-")]
        assert seqs[1] == seqs[0]  # a gang's binds land together, as one bundle
    for replica in replicas:
        assert replica.sched_metrics.plans_published.labels().value > 0
        assert replica.sched_metrics.owned_podgroups.labels().value > 0
        assert replica.sched_metrics.sessions.labels().value == replica.health()["sessions"]
        assert replica.sched_metrics.session_cpu.labels().value > 0
    assert binder.binder_metrics.rejected.labels("already_bound").value == 0
    # The job's trace runs from its events through the plan to the binder's PodBound.
    assert {e.env.traceparent.split("-")[1] for e in bound if e.env.traceparent} == {TRACE_ID}
    assert all(e.env.traceparent for e in bound)

    # A replica restarted from its checkpoint replays only what came after it and plans nothing again.
    events = await settle(bus, [*replicas, binder])
    await replicas[0].shutdown()
    restarted = await stack.scheduler("scheduler-0")
    await restarted.run_until_idle(15)
    assert restarted.metrics.events_applied.labels("scheduler-0", "replay").value == 0
    assert restarted.state.view.snapshot().pods == replicas[1].state.view.snapshot().pods
    await replicas[1].run_until_idle(15)
    extra = (await read_log(bus))[events:]
    assert len(extra) == 0, [(e.type, e.key, e.env.payload) for e in extra]


async def test_a_killed_replica_hands_its_podgroups_over_when_its_lease_expires(
    stack: Stack,
    bus: Bus,
    etcd: Etcd,
    beats: Heartbeats,
    nats_server: NatsServer,
    etcd_server: EtcdServer,
    tmp_path: Path,
    eventually: Eventually,
) -> None:
    await stack.binder()
    survivor = await stack.scheduler("scheduler-0", membership_ttl_s=2)
    victim = await _start_replica("scheduler-1", nats_server, etcd_server, tmp_path / "scheduler-1.log")
    try:
        members = Membership(etcd, "scheduler")
        await eventually(
            lambda: _members_are(members, set(REPLICAS)), what="both replicas to join", timeout_s=30
        )
        beats.beating |= {"n1", "n2"}
        before = [o for name in ("a0", "a1", "a2", "a3") for o in gang(name, 1)]
        await created(bus, node("n1", cpu=8), node("n2", cpu=8), *before)
        await eventually(
            lambda: bound_exactly(bus, 4), what="the first gangs bound by both replicas", timeout_s=20
        )

        victim.send_signal(signal.SIGKILL)  # no goodbye: its lease has to expire
        killed_at = time.time()
        await victim.wait()
        after = [o for name in ("b0", "b1", "b2", "b3", "b4", "b5") for o in gang(name, 1)]
        orphans = Ring(REPLICAS).assign(f"default/{o.meta.name}" for o in after if not isinstance(o, Pod))
        assert orphans["scheduler-1"]  # some of them were the dead replica's
        await created(bus, *after)
        bound = await eventually(
            lambda: bound_exactly(bus, 10), what="the survivor to place them all", timeout_s=20
        )
        assert survivor.ownership.ring.members == ("scheduler-0",)
        taken = [e for e in bound if any(e.key.startswith(f"{key}-") for key in orphans["scheduler-1"])]
        assert taken and all(e.env.time - killed_at > 1.0 for e in taken)  # not before the 2 s lease lapsed
    finally:
        if victim.returncode is None:
            victim.kill()
            await victim.wait()


async def _start_replica(
    replica: str, nats: NatsServer, etcd: EtcdServer, log_path: Path
) -> asyncio.subprocess.Process:
    args = [
        "--replica-id",
        replica,
        "--nats-url",
        nats.url,
        "--etcd-endpoint",
        "{}:{}".format(*etcd.endpoint),
    ]
    args += ["--membership-ttl-s", "2", "--schedule-period-s", "0.5", "--metrics-port", "0"]
    with log_path.open("wb") as log:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "services.scheduler",
            *args,
            cwd=REPO,
            stdout=log,
            stderr=log,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )


async def settle(bus: Bus, services: list[Any]) -> int:
    """Wait until a round in which every service became idle added nothing to the log and left no plan
    on its way; the log's length then."""
    while True:
        before = len(await read_log(bus))
        for service in services:
            await service.run_until_idle(15)
        if len(await read_log(bus)) == before and await no_plans_left(bus):
            return before


async def _unschedulable(bus: Bus, key: str) -> bool:
    for event in of_type(await read_log(bus), "PodGroupStatusChanged", key):
        conditions = event.env.payload["conditions"]
        if any(c["type"] == "Unschedulable" and c["status"] == "True" for c in conditions):
            return True
    return False


async def _unschedulable_reason(bus: Bus, key: str) -> str:
    """The reason of the latest Unschedulable (True) condition the log gave the PodGroup."""
    reasons = [
        c["reason"]
        for event in of_type(await read_log(bus), "PodGroupStatusChanged", key)
        for c in event.env.payload["conditions"]
        if c["type"] == "Unschedulable" and c["status"] == "True"
    ]
    return reasons[-1] if reasons else ""


async def _node_ready(nodes: ReadModel, name: str, ready: bool) -> bool:
    stored = await nodes.get("node", None, name)
    return stored is not None and stored.object["object"]["ready"] is ready


async def _members_are(members: Membership, expected: set[str]) -> bool:
    return set((await members.members())[0]) == expected


async def test_a_replica_opens_no_session_while_nothing_it_owns_can_change(
    stack: Stack, bus: Bus, beats: Heartbeats, eventually: Eventually
) -> None:
    """Periodic sessions of a replica whose PodGroups have nothing waiting and no pod changed are not
    opened; new work of its own opens one at once."""
    ring = Ring(REPLICAS)
    names = [f"solo{i}" for i in range(40)]
    first = [n for n in names if ring.owner(f"default/{n}") == "scheduler-0"][:3]
    later = next(n for n in names if ring.owner(f"default/{n}") == "scheduler-1")
    binder = await stack.binder()
    owner, other = [await stack.scheduler(r) for r in REPLICAS]
    beats.beating |= {"n1"}
    objects: list[Any] = [node("n1", cpu=16)]
    for name in first:
        objects += gang(name, 2)
    await created(bus, *objects)
    await eventually(lambda: bound_exactly(bus, 6), what="the first gangs bound", timeout_s=20)

    def skipped(replica: SchedulerService, at_least: int) -> bool:
        return bool(replica.health()["sessions_skipped"] >= at_least)

    # every periodic session of the replica that owns none of them is skipped...
    await eventually(lambda: skipped(other, 2), what="the other replica's sessions skipped", timeout_s=20)
    ran, since = other.health()["sessions"], other.health()["sessions_skipped"]
    await eventually(lambda: skipped(other, since + 3), what="three more periods", timeout_s=20)
    assert other.health()["sessions"] == ran
    # ...and the owner's too once its gangs are bound and their statuses written
    await eventually(lambda: skipped(owner, 2), what="the owner's sessions skipped", timeout_s=20)
    assert other.sched_metrics.sessions_skipped.labels().value == other.health()["sessions_skipped"]
    # new work of its own: a session at once, which places it
    await created(bus, *gang(later, 2))
    await eventually(lambda: bound_exactly(bus, 8), what="the new gang bound", timeout_s=20)
    assert other.health()["sessions"] > ran
    assert binder.binder_metrics.rejected.labels("already_bound").value == 0
