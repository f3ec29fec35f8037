"""The job-controller core: events folded into its state, and what reconcile writes from it.

A miniature log stands in for the runner: events land in order with increasing seqs and are folded, and
`settle` publishes what reconcile returns back onto the log until nothing is left to write.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.core_log import CoreLog

from contracts import codec, payloads
from contracts.job_shape import JOB_RETRY_COUNT, POD_GENERATION
from contracts.objects import (
    Container,
    Job,
    ObjectMeta,
    Pod,
    PodGroup,
    PodSpec,
    PodTemplate,
    PriorityClass,
    TaskSpec,
)
from contracts.resources import Resources
from services.job_controller.core.core import JobControllerCore
from services.job_controller.core.objects import job_object
from services.job_controller.core.reconcile import status_fact
from services.job_controller.core.state import JobRecord, retally
from shared.runner_types import Event, Output

KEY = "team-a/train"


def task(name: str, replicas: int, min_available: int | None = None) -> TaskSpec:
    container = Container(name="c", requests=Resources.parse({"cpu": "1", "memory": "1Gi"}))
    template = PodTemplate(spec=PodSpec(containers=(container,)))
    return TaskSpec(name=name, replicas=replicas, min_available=min_available, template=template)


def job(*tasks: TaskSpec, name: str = "train", **fields: Any) -> Job:
    meta = ObjectMeta(name, "team-a", uid=f"team-a-{name}", creation_timestamp=1.0)
    return Job(meta=meta, tasks=tasks or (task("ps", 1), task("worker", 2)), **fields)


class Log(CoreLog):
    """Events in log order, folded into the core's state as they land."""

    add = CoreLog.append

    def __init__(self) -> None:
        super().__init__(JobControllerCore())

    def settle(self, now: float = 100.0) -> list[Output]:
        """Reconcile and publish until reconcile has nothing more to write; everything written."""
        return super().settle(now, rounds=10)

    # --- what the other services write ---

    def submit(self, j: Job | None = None, type: str = "JobSubmitted") -> Event:
        j = j or job()
        return self.add(type, "job", j.meta.namespace, j.meta.name, {"object": codec.encode_object(j)})

    def podgroup(self, phase: str, name: str = "train") -> Event:
        return self.add(
            "PodGroupStatusChanged", "podgroup", "team-a", name, {"phase": phase, "conditions": []}
        )

    def pod(self, type: str, name: str, node: str = "n1", **payload: Any) -> Event:
        return self.add(type, "pod", "team-a", name, {"node": node, **payload})

    def run_all(self, names: Iterable[str]) -> None:
        for name in names:
            self.pod("PodBound", name, plan="p1")
            self.pod("PodRunning", name)


def of(outputs: Iterable[Any], type: str) -> list[Any]:
    return [o for o in outputs if o.type == type]


def statuses(outputs: Iterable[Output | Event]) -> list[tuple[str, dict[str, int]]]:
    typed = (o.payload if isinstance(o, Output) else o.data for o in of(outputs, "JobStatusChanged"))
    return [(s.phase, s.counts) for s in typed if isinstance(s, payloads.JobStatusChanged)]


def status_now(log: Log) -> tuple[str, dict[str, int]]:
    """The job's phase as the log last recorded it, and its pods' counts as the read model shows them
    (counts change no fact: they follow from the pods' events)."""
    job = job_object(log.state.jobs[KEY])
    assert job is not None
    s = job.status
    pods = counts(s.pending, s.running, s.succeeded, s.failed, s.terminating)
    return statuses(log.events)[-1][0], pods


def counts(pending=0, running=0, succeeded=0, failed=0, terminating=0) -> dict[str, int]:
    return {
        "pending": pending,
        "running": running,
        "succeeded": succeeded,
        "failed": failed,
        "terminating": terminating,
    }


PODS = ["train-ps-0", "train-worker-0", "train-worker-1"]


def started(j: Job | None = None) -> Log:
    """A job submitted, its PodGroup Inqueue and its pods created."""
    log = Log()
    log.submit(j)
    log.settle()
    log.podgroup("Inqueue")
    log.settle()
    return log


# --- submission and expansion ---------------------------------------------------------------------


def test_submit_creates_the_podgroup_and_a_pending_status() -> None:
    log = Log()
    submitted = log.submit()
    outputs = log.core.reconcile(log.state, 10.0)
    assert [o.type for o in outputs] == ["JobStatusChanged", "PodGroupCreated"]
    created = of(outputs, "PodGroupCreated")[0]
    podgroup = created.payload.decoded()
    assert isinstance(podgroup, PodGroup)
    assert (created.kind, created.namespace, created.name) == ("podgroup", "team-a", "train")
    assert (podgroup.min_member, dict(podgroup.min_task_member)) == (3, {"ps": 1, "worker": 2})
    assert podgroup.status.phase == "Pending"
    assert podgroup.min_resources == Resources.parse({"cpu": "3", "memory": "3Gi"})
    assert (created.correlation_id, created.causation_id) == (KEY, submitted.id)
    status = of(outputs, "JobStatusChanged")[0].payload
    assert (status.phase, status.counts, status.min_available) == ("Pending", counts(), 3)
    assert status.last_transition_time == 10.0


def test_no_pods_while_the_podgroup_is_pending() -> None:
    log = Log()
    log.submit()
    log.settle()
    log.podgroup("Pending")
    assert log.core.reconcile(log.state, 20.0) == []


def test_podgroup_inqueue_creates_every_replica() -> None:
    log = Log()
    log.submit()
    log.settle()
    inqueue = log.podgroup("Inqueue")
    outputs = log.core.reconcile(log.state, 20.0)
    created = of(outputs, "PodCreated")
    assert [o.name for o in created] == PODS
    pods = [o.payload.decoded() for o in created]
    assert all(isinstance(p, Pod) for p in pods)
    assert [p.meta.uid for p in pods] == [f"team-a-{name}-0" for name in PODS]
    assert {p.meta.creation_timestamp for p in pods} == {20.0}
    assert {(o.causation_id, o.correlation_id) for o in created} == {(inqueue.id, KEY)}
    log.publish(outputs)
    assert statuses(log.settle()) == []  # the counts moved, the phase did not: nothing to publish
    assert status_now(log) == ("Pending", counts(pending=3))


def test_priority_classes_order_the_podgroup_minimum() -> None:
    high = TaskSpec(
        name="ps",
        replicas=1,
        template=PodTemplate(
            spec=PodSpec(
                containers=(Container("c", requests=Resources.parse({"cpu": "4"})),),
                priority_class_name="high",
            )
        ),
    )
    log = Log()
    pc = PriorityClass(ObjectMeta("high", ""), value=100)
    log.add("PriorityClassApplied", "priorityclass", None, "high", {"object": codec.encode_object(pc)})
    log.submit(job(task("worker", 2), high, min_available=1))
    created = of(log.settle(), "PodGroupCreated")[0]
    # minAvailable 1 below the tasks' sum: the first pod counted is the high-priority one
    assert created.payload.decoded().min_resources == Resources.parse({"cpu": "4"})


# --- phases ---------------------------------------------------------------------------------------

PHASE_CASES = [
    # (description, job, pod events as (type, pod), expected phase, expected counts)
    ("bound but not started", job(), [("PodBound", p) for p in PODS], "Pending", counts(pending=3)),
    (
        "all running",
        job(),
        [(t, p) for p in PODS for t in ("PodBound", "PodRunning")],
        "Running",
        counts(running=3),
    ),
    (
        "all succeeded",
        job(),
        [(t, p) for p in PODS for t in ("PodBound", "PodRunning", "PodSucceeded")],
        "Completed",
        counts(succeeded=3),
    ),
    (
        # minAvailable 3 of 3: one failure leaves it unmet once every pod finished
        "one failed, minAvailable unmet",
        job(),
        [(t, p) for p in PODS for t in ("PodBound", "PodRunning")]
        + [
            ("PodSucceeded", "train-ps-0"),
            ("PodSucceeded", "train-worker-0"),
            ("PodFailed", "train-worker-1"),
        ],
        "Failed",
        counts(succeeded=2, failed=1),
    ),
    (
        "a single failed pod",
        job(task("main", 1), name="train"),
        [("PodBound", "train-main-0"), ("PodRunning", "train-main-0"), ("PodFailed", "train-main-0")],
        "Failed",
        counts(failed=1),
    ),
    (
        "a failure within the slack of minAvailable",
        job(task("ps", 1), task("worker", 2, min_available=1)),
        [(t, p) for p in PODS for t in ("PodBound", "PodRunning")]
        + [
            ("PodSucceeded", "train-ps-0"),
            ("PodSucceeded", "train-worker-0"),
            ("PodFailed", "train-worker-1"),
        ],
        "Completed",
        counts(succeeded=2, failed=1),
    ),
    (
        "failed pod while others run",
        job(),
        [(t, p) for p in PODS for t in ("PodBound", "PodRunning")] + [("PodFailed", "train-worker-1")],
        "Running",
        counts(running=2, failed=1),
    ),
]


@pytest.mark.parametrize(
    ("job_spec", "events", "phase", "expected"),
    [case[1:] for case in PHASE_CASES],
    ids=[case[0] for case in PHASE_CASES],
)
def test_job_phase(job_spec: Job, events: list[tuple[str, str]], phase: str, expected: dict) -> None:
    log = started(job_spec)
    for type, name in events:
        log.pod(type, name, exit_code=0, reason="", plan="p1")
    log.settle()
    assert status_now(log) == (phase, expected)
    assert log.core.reconcile(log.state, 200.0) == []


def test_status_counts_per_task_and_transition_time() -> None:
    log = started()
    log.run_all(["train-ps-0", "train-worker-0"])
    assert of(log.settle(now=30.0), "JobStatusChanged") == []  # still Pending: only counts moved
    shown = job_object(log.state.jobs[KEY])
    assert shown is not None and shown.status.task_status_count == {
        "ps": {"Running": 1},
        "worker": {"Running": 1, "Pending": 1},
    }
    log.run_all(["train-worker-1"])
    running = of(log.settle(now=40.0), "JobStatusChanged")[0].payload
    assert (running.phase, running.last_transition_time) == ("Running", 40.0)
    assert running.counts == counts(running=3)  # the counts as they stood at the transition
    log.pod("PodSucceeded", "train-ps-0", exit_code=0)
    assert of(log.settle(now=50.0), "JobStatusChanged") == []
    shown = job_object(log.state.jobs[KEY])
    assert shown is not None and shown.status.state.last_transition_time == 40.0
    assert status_now(log) == ("Running", counts(running=2, succeeded=1))


def test_min_success_completes_and_stops_the_rest() -> None:
    log = started(job(task("ps", 1), task("worker", 2), min_success=2))
    log.run_all(PODS)
    log.settle()
    log.pod("PodSucceeded", "train-worker-0", exit_code=0)
    done = log.pod("PodSucceeded", "train-worker-1", exit_code=0)
    outputs = log.settle()
    status = of(outputs, "JobStatusChanged")
    assert status[0].payload.phase == "Completed"
    assert status[0].causation_id == done.id
    stop = of(outputs, "PodDeletionRequested")
    assert [(o.name, o.payload.reason, o.causation_id) for o in stop] == [
        ("train-ps-0", "JobFinished", status[0].id)
    ]
    assert status_now(log) == ("Completed", counts(succeeded=2, terminating=1))
    log.pod("PodTerminated", "train-ps-0", reason="Deleted")
    assert statuses(log.settle()) == []
    assert status_now(log) == ("Completed", counts(succeeded=2))
    assert of(log.settle(), "PodCreated") == []


# --- eviction, loss and stale events --------------------------------------------------------------


@pytest.mark.parametrize("ending", ["evicted", "lost"])
def test_a_pod_that_is_gone_is_created_again_with_the_next_retry(ending: str) -> None:
    log = started()
    log.run_all(PODS)
    log.settle()
    if ending == "evicted":
        log.pod("PodEvicting", "train-worker-1", reason="preempt", plan="p2")
        assert statuses(log.settle()) == []
        assert status_now(log) == ("Running", counts(running=2, terminating=1))
        end = log.pod("PodTerminated", "train-worker-1", reason="Evicted")
    else:
        end = log.pod("PodLost", "train-worker-1", reason="NodeLost")
    outputs = log.settle()
    [created] = of(outputs, "PodCreated")
    pod = created.payload.decoded()
    assert (created.name, pod.meta.uid) == ("train-worker-1", "team-a-train-worker-1-1")
    # the pod's generation moves on; the job's retryCount does not (no policy restarted the job)
    assert (pod.meta.annotations[POD_GENERATION], pod.meta.annotations[JOB_RETRY_COUNT]) == ("1", "0")
    assert created.causation_id == end.id
    # minAvailable 3 of 3: a pending replica sends the job back to Pending
    assert status_now(log) == ("Pending", counts(running=2, pending=1))
    log.run_all(["train-worker-1"])
    assert statuses(log.settle()) == [("Running", counts(running=3))]


def test_events_about_an_earlier_generation_are_ignored() -> None:
    log = started()
    log.run_all(PODS)
    log.settle()
    log.pod("PodLost", "train-worker-1", reason="NodeLost")
    log.settle()  # generation 1 created, pending
    before = log.core.dump(log.state)
    log.pod("PodTerminated", "train-worker-1", reason="Deleted")  # the lost node reports late
    log.pod("PodFailed", "train-worker-1", exit_code=1, reason="Error")
    log.pod("PodRunning", "train-worker-1", uid="team-a-train-worker-1-0")
    assert log.core.dump(log.state) == before
    assert log.core.reconcile(log.state, 300.0) == []


def test_unknown_events_and_pods_are_ignored() -> None:
    log = started()
    before = log.core.dump(log.state)
    log.add("NodeReady", "node", None, "n1")
    log.pod("PodRunning", "someone-else-0")
    log.add("PodGroupStatusChanged", "podgroup", "team-a", "other", {"phase": "Running", "conditions": []})
    assert log.core.dump(log.state) == before


# --- updates -------------------------------------------------------------------------------------


def test_scale_down_and_up() -> None:
    log = started()
    log.run_all(PODS)
    log.settle()
    update = log.submit(job(task("ps", 1), task("worker", 1)), type="JobUpdated")
    outputs = log.settle()
    assert [(o.name, o.payload.reason, o.causation_id) for o in of(outputs, "PodDeletionRequested")] == [
        ("train-worker-1", "ScaleDown", update.id)
    ]
    log.pod("PodTerminated", "train-worker-1", reason="Deleted")
    assert of(log.settle(), "PodCreated") == []
    log.submit(job(task("ps", 1), task("worker", 3)), type="JobUpdated")
    created = of(log.settle(), "PodCreated")
    assert [(o.name, o.payload.decoded().meta.uid) for o in created] == [
        ("train-worker-1", "team-a-train-worker-1-1"),
        ("train-worker-2", "team-a-train-worker-2-0"),
    ]


@pytest.mark.parametrize("state", ["Closed", "Closing"])
def test_no_podgroup_while_the_queue_is_not_open(state: str) -> None:
    log = Log()
    log.add("QueueStateChanged", "queue", None, "default", {"state": state})
    log.submit()
    assert of(log.settle(), "PodGroupCreated") == []
    log.add("QueueStateChanged", "queue", None, "default", {"state": "Open"})
    assert len(of(log.settle(), "PodGroupCreated")) == 1


def test_a_command_for_the_job_waits_until_a_status_runs_it() -> None:
    log = started()
    command = log.add(
        "CommandIssued",
        "command",
        "team-a",
        "c1",
        {"action": "AbortJob", "target_kind": "Job", "target": KEY},
    )
    [pending] = log.state.jobs[KEY].pending
    assert (pending.action, pending.cause) == ("AbortJob", command.id)
    [status] = of(log.core.reconcile(log.state, 300.0), "JobStatusChanged")
    assert (status.payload.phase, status.payload.handled) == ("Aborting", (pending.key,))
    assert status.causation_id == command.id
    log.publish([status])
    assert log.state.jobs[KEY].pending == ()


# --- deletion --------------------------------------------------------------------------------------


def test_deletion_cascade_waits_for_the_pods_to_stop() -> None:
    log = started()
    log.run_all(["train-ps-0", "train-worker-0"])  # train-worker-1 never bound
    log.settle()
    deleted = log.add("JobDeleted", "job", "team-a", "train")
    outputs = log.core.reconcile(log.state, 300.0)
    assert [(o.type, o.name, o.payload.node, o.causation_id) for o in outputs] == [
        ("PodDeletionRequested", "train-ps-0", "n1", deleted.id),
        ("PodDeletionRequested", "train-worker-0", "n1", deleted.id),
        ("PodDeletionRequested", "train-worker-1", "", deleted.id),
    ]
    log.publish(outputs)
    assert log.core.reconcile(log.state, 300.0) == []  # two pods still run
    log.pod("PodTerminated", "train-ps-0", reason="Deleted")
    assert log.core.reconcile(log.state, 300.0) == []
    last = log.pod("PodTerminated", "train-worker-0", reason="Deleted")
    [podgroup_deleted] = log.core.reconcile(log.state, 300.0)
    assert (podgroup_deleted.type, podgroup_deleted.name) == ("PodGroupDeleted", "train")
    assert podgroup_deleted.causation_id == last.id
    log.publish([podgroup_deleted])
    assert log.state.jobs == {} and log.state.pod_owner == {}


def test_a_pod_bound_after_its_deletion_is_deleted_from_its_node() -> None:
    log = started()
    log.add("JobDeleted", "job", "team-a", "train")
    log.publish(log.core.reconcile(log.state, 300.0))  # three deletions of unbound pods
    log.pod("PodBound", "train-worker-1", node="n2", plan="late")
    [again] = log.core.reconcile(log.state, 300.0)
    assert (again.type, again.name, again.payload.node) == ("PodDeletionRequested", "train-worker-1", "n2")
    log.publish([again])
    log.pod("PodTerminated", "train-worker-1", node="n2", reason="Deleted")
    assert [o.type for o in log.settle()] == ["PodGroupDeleted"]


def test_deleted_before_the_podgroup_landed() -> None:
    log = Log()
    log.submit()
    early = log.core.reconcile(log.state, 10.0)
    log.add("JobDeleted", "job", "team-a", "train")
    assert log.state.jobs == {}
    log.publish(of(early, "PodGroupCreated"))  # an output in flight lands after the deletion
    assert [o.type for o in log.settle()] == ["PodGroupDeleted"]
    assert log.state.jobs == {}


def test_resubmission_during_deletion_starts_a_new_incarnation() -> None:
    log = started()
    log.run_all(PODS)
    first = {o.id for o in log.events if o.type in ("PodGroupCreated", "PodCreated")}
    log.add("JobDeleted", "job", "team-a", "train")
    log.settle()
    log.submit()  # while the old pods are still stopping
    assert of(log.settle(), "PodGroupCreated") == []
    for name in PODS:
        log.pod("PodTerminated", name, reason="Deleted")
    log.settle()
    log.podgroup("Inqueue")
    again = log.settle()
    recreated = {o.id for o in again if o.type in ("PodGroupCreated", "PodCreated")}
    assert [o.type for o in again].count("PodCreated") == 3
    assert recreated and not recreated & first


# --- determinism, replay and checkpoints ------------------------------------------------------------


def scenario() -> Log:
    log = started()
    log.run_all(PODS)
    log.settle()
    log.pod("PodEvicting", "train-worker-1", reason="preempt", plan="p2")
    log.pod("PodTerminated", "train-worker-1", reason="Evicted")
    log.settle()
    log.submit(job(task("ps", 1), task("worker", 2), name="other"))
    log.settle()
    log.add(
        "CommandIssued",
        "command",
        "team-a",
        "c",
        {"action": "ResumeJob", "target_kind": "Job", "target": KEY},
    )
    log.add("JobDeleted", "job", "team-a", "other")
    log.settle()
    return log


def test_reconcile_is_repeatable_before_its_outputs_land() -> None:
    log = Log()
    log.submit()
    assert log.core.reconcile(log.state, 1.0) == log.core.reconcile(log.state, 1.0)
    log.settle()
    log.podgroup("Inqueue")
    first = [o.id for o in log.core.reconcile(log.state, 1.0)]
    assert first == [o.id for o in log.core.reconcile(log.state, 99.0)]  # ids never depend on now


def test_a_status_keeps_the_fact_its_id_was_derived_from_in_earlier_releases() -> None:
    # ids are deduplication keys: a status already published must get the same id after an upgrade.
    # The expected string is what the job-controller derived from this status when it built the
    # JobStatusChanged payload as a dict.
    record = JobRecord(KEY, None, incarnation=7, status_generation=3)
    status = payloads.JobStatusChanged(
        phase="Restarting",
        counts=counts(pending=1, running=2, failed=1),
        task_status_count={"worker": {"Running": 2, "Failed": 1}, "ps": {"Pending": 1}},
        min_available=3,
        retry_count=2,
        version=5,
        restart=(
            payloads.RestartTarget(action="RestartTask", task="worker", lo=0, hi=-1, retain="None"),
            payloads.RestartTarget(action="RestartJob", task="", lo=0, hi=-1, retain="Soft"),
        ),
        handled=("evt-1/PodFailed", "evt-2/Command"),
        last_transition_time=40.5,
        conditions=(
            payloads.JobCondition(status="Running", last_transition_time=20.0),
            payloads.JobCondition(status="Restarting", last_transition_time=40.5),
        ),
    )
    assert status_fact(record, status) == (
        '7/3/{"handled":["evt-1/PodFailed","evt-2/Command"],"min_available":3,"phase":"Restarting",'
        '"restart":[{"action":"RestartTask","hi":-1,"lo":0,"retain":"None","task":"worker"},'
        '{"action":"RestartJob","hi":-1,"lo":0,"retain":"Soft","task":""}],"retry_count":2,"version":5}'
    )


@pytest.mark.parametrize("checkpoint_at", [0, 5, 12, 20])
def test_replay_from_a_checkpoint_writes_nothing_new(checkpoint_at: int) -> None:
    log = scenario()
    assert log.core.reconcile(log.state, 500.0) == []
    core = log.core
    replayed = core.initial()
    for event in log.events[:checkpoint_at]:
        replayed = core.apply(replayed, event)
    checkpoint = core.dump(replayed)
    for _ in range(2):  # the same events replayed twice from the same checkpoint
        state = core.load(checkpoint)
        for event in log.events[checkpoint_at:]:
            state = core.apply(state, event)
        assert core.reconcile(state, 500.0) == []
        assert core.dump(state) == core.dump(log.state)


def test_creations_delivered_twice_change_nothing() -> None:
    # past the stream's dedup window a re-published output lands again under a new seq
    log = scenario()
    before = log.core.dump(log.state)
    creations = [e for e in log.events if e.type in ("PodCreated", "PodGroupCreated")]
    for event in [e for e in creations if e.name.startswith("train")]:
        log.add(event.type, event.kind, event.namespace, event.name, event.payload, id=event.id)
    assert log.core.dump(log.state) == before
    assert log.core.reconcile(log.state, 600.0) == []
    # the deleted job's PodGroup landing again exists again for every reader: it is deleted again
    [again] = [e for e in creations if e.name == "other"]
    log.add(again.type, again.kind, again.namespace, again.name, again.payload, id=again.id)
    assert [(o.type, o.name) for o in log.settle()] == [("PodGroupDeleted", "other")]
    assert log.core.dump(log.state) == before


def test_dump_load_round_trip() -> None:
    log = scenario()
    log.add("JobDeleted", "job", "team-a", "train")
    log.settle()
    log.submit()  # waits as the successor while the pods stop
    log.add("QueueStateChanged", "queue", None, "default", {"state": "Open"})
    pc = PriorityClass(ObjectMeta("high", ""), value=100)
    log.add("PriorityClassApplied", "priorityclass", None, "high", {"object": codec.encode_object(pc)})
    assert log.state.jobs[KEY].successor is not None
    loaded = log.core.load(log.core.dump(log.state))
    assert loaded == log.state
    assert log.core.reconcile(loaded, 700.0) == log.core.reconcile(log.state, 700.0)


def test_load_rejects_another_checkpoint_version() -> None:
    import msgpack

    with pytest.raises(ValueError, match="version"):
        JobControllerCore().load(msgpack.packb({"version": 99, "state": {}}))


# --- the tally kept by the fold ---------------------------------------------------------------------

POD_NAMES = ["train-ps-0", *(f"train-worker-{i}" for i in range(4))]
STEP = st.one_of(
    st.tuples(
        st.sampled_from(
            ["PodBound", "PodRunning", "PodSucceeded", "PodFailed", "PodEvicting", "PodTerminated", "PodLost"]
        ),
        st.sampled_from(POD_NAMES),
        st.sampled_from(["n1", "n2"]),
    ),
    st.tuples(st.just("scale"), st.integers(0, 4)),
    st.tuples(st.sampled_from(["delete", "resubmit", "settle", "settle"])),
    st.tuples(st.just("podgroup"), st.sampled_from(["Pending", "Inqueue", "Running"])),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, max_size=40))
def test_tally_matches_a_recount_after_any_events(steps: list[tuple]) -> None:
    log = started()
    for step in steps:
        if step[0] == "scale":
            log.submit(job(task("ps", 1), task("worker", step[1])), type="JobUpdated")
        elif step[0] == "delete":
            log.add("JobDeleted", "job", "team-a", "train")
        elif step[0] == "resubmit":
            log.submit()
        elif step[0] == "settle":
            log.publish(log.core.reconcile(log.state, 1.0))
        elif step[0] == "podgroup":
            log.podgroup(step[1])
        else:
            type, name, node = step
            log.pod(type, name, node=node, plan="p", reason="r", exit_code=0)
        for record in log.state.jobs.values():
            recounted = copy.deepcopy(record)
            retally(recounted)
            assert record.tally == recounted.tally
    assert log.core.load(log.core.dump(log.state)) == log.state
    log.settle()  # and whatever happened, reconcile converges
