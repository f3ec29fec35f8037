"""The job lifecycle state machine (lifecycle.py) through the job-controller core: hand-made events are
folded, reconcile's outputs are written back (`settle`) and the job's published status is checked.

`Log` is a miniature log with a clock: every event carries the log's `now` as its time, and `settle`
reconciles at that time. test_policies.py shares these helpers.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.core_log import CoreLog

from contracts import codec, payloads
from contracts.job_shape import JOB_RETRY_COUNT, JOB_VERSION, POD_GENERATION
from contracts.objects import (
    Container,
    DependsOn,
    Job,
    LifecyclePolicy,
    ObjectMeta,
    PartitionPolicy,
    PodSpec,
    PodTemplate,
    TaskSpec,
)
from contracts.resources import Resources
from services.job_controller.core.core import CHECKPOINT_VERSION, JobControllerCore, to_plain
from services.job_controller.core.objects import job_object
from services.job_controller.core.state import JobRecord, retally
from shared.runner_types import Event, Output

NS = "team-a"
KEY = f"{NS}/train"


# --- building jobs -----------------------------------------------------------------------------------


def policy(
    action: str, *events: str, exit_code: int | None = None, timeout: float | None = None
) -> LifecyclePolicy:
    return LifecyclePolicy(action=action, events=events, exit_code=exit_code, timeout_seconds=timeout)


def task(
    name: str,
    replicas: int = 1,
    *policies: LifecyclePolicy,
    min_available: int | None = None,
    max_retry: int = 0,
    depends_on: DependsOn | None = None,
    partition_size: int = 0,
) -> TaskSpec:
    container = Container(name="c", requests=Resources.parse({"cpu": "1"}))
    partition = PartitionPolicy(replicas // partition_size, partition_size) if partition_size else None
    return TaskSpec(
        name=name,
        replicas=replicas,
        min_available=min_available,
        template=PodTemplate(spec=PodSpec(containers=(container,))),
        policies=policies,
        max_retry=max_retry,
        depends_on=depends_on,
        partition_policy=partition,
    )


def job(*tasks: TaskSpec, **fields: Any) -> Job:
    meta = ObjectMeta("train", NS, uid="uid-train", creation_timestamp=1.0)
    return Job(meta=meta, tasks=tasks or (task("ps"), task("worker", 2)), **fields)


def pod_names(j: Job) -> list[str]:
    return [f"train-{t.name}-{i}" for t in j.tasks for i in range(t.replicas)]


# --- the log -----------------------------------------------------------------------------------------


class Log(CoreLog):
    def __init__(self) -> None:
        super().__init__(JobControllerCore(), now=10.0)

    def add(
        self,
        type: str,
        kind: str,
        name: str,
        payload: Any = None,
        *,
        namespace: str | None = NS,
        id: str = "",
    ) -> Event:
        return self.append(type, kind, namespace, name, payload, id=id)

    def settle(self, now: float | None = None) -> list[Output]:  # type: ignore[override]
        """Reconcile at `now` (and move the clock there) and write back until nothing is left to write."""
        self.now = self.now if now is None else now
        assert self.now is not None
        return super().settle(self.now)

    # --- what the other services write ---

    def submit(self, j: Job, type: str = "JobSubmitted") -> Event:
        return self.add(type, "job", j.meta.name, {"object": codec.encode_object(j)})

    def podgroup(self, phase: str) -> Event:
        return self.add("PodGroupStatusChanged", "podgroup", "train", {"phase": phase, "conditions": []})

    def pod(self, type: str, name: str, node: str = "n1", **payload: Any) -> Event:
        return self.add(type, "pod", name, {"node": node, **payload})

    def run(self, *names: str) -> None:
        for name in names:
            self.pod("PodBound", name, plan="p")
            self.pod("PodRunning", name)

    def fail(self, name: str, exit_code: int = 1) -> Event:
        return self.pod("PodFailed", name, exit_code=exit_code, reason="Error")

    def succeed(self, name: str) -> Event:
        return self.pod("PodSucceeded", name, exit_code=0)

    def stopped(self, *names: str) -> None:
        """The pods that were asked to stop (or are evicted) report they did."""
        for name in names:
            self.pod("PodTerminated", name, reason="Deleted")

    def command(self, action: str) -> Event:
        payload = {"action": action, "target_kind": "Job", "target": KEY}
        return self.add("CommandIssued", "command", f"c{len(self.events)}", payload)

    # --- what the job-controller wrote ---

    @property
    def record(self) -> JobRecord:
        return self.state.jobs[KEY]

    @property
    def status(self) -> payloads.JobStatusChanged:
        published = self.record.published
        assert published is not None
        return published

    def phases(self) -> list[str]:
        """Every phase the job went through, in order (consecutive repeats collapsed)."""
        phases: list[str] = []
        for e in self.events:
            if e.type == "JobStatusChanged" and (not phases or phases[-1] != e.payload["phase"]):
                phases.append(e.payload["phase"])
        return phases

    def live_pods(self) -> dict[str, tuple[int, str]]:
        """The pods that are not gone: name -> (generation, phase)."""
        return {name: (p.retry, p.phase) for name, p in self.record.pods.items() if not p.gone}


def of(outputs: Iterable[Any], type: str) -> list[Any]:
    return [o for o in outputs if o.type == type]


def deletions(outputs: Iterable[Output]) -> dict[str, str]:
    return {o.name: o.payload.reason for o in of(outputs, "PodDeletionRequested")}


def started(j: Job | None = None) -> Log:
    """Submitted, its PodGroup Inqueue, its pods created (Pending)."""
    log = Log()
    log.submit(j or job())
    log.settle()
    log.podgroup("Inqueue")
    log.settle()
    return log


def running(j: Job | None = None) -> Log:
    j = j or job()
    log = started(j)
    log.run(*pod_names(j))
    log.settle()
    assert log.status.phase == "Running"
    return log


# --- every phase × every command (Volcano's state table) ---------------------------------------------

PODS = pod_names(job())


def in_pending() -> Log:
    log = started()
    for name in PODS:
        log.pod("PodBound", name, plan="p")  # bound, not started: still Pending, and a stop takes a while
    log.settle()
    return log


def after(setup: Any, action: str, *, stop: bool = False) -> Any:
    def build() -> Log:
        log = setup()
        log.command(action)
        log.settle()
        if stop:
            log.stopped(*(name for name, p in log.record.pods.items() if p.live))
            log.settle()
        return log

    return build


def in_failed() -> Log:
    log = running()
    for name in PODS:
        log.fail(name)
    log.settle()
    return log


def in_completed() -> Log:
    log = running()
    for name in PODS:
        log.succeed(name)
    log.settle()
    return log


SETUPS = {
    "Pending": in_pending,
    "Running": running,
    "Restarting": after(running, "RestartJob"),
    "Aborting": after(running, "AbortJob"),
    "Aborted": after(running, "AbortJob", stop=True),
    "Completing": after(running, "CompleteJob"),
    "Terminating": after(running, "TerminateJob"),
    "Completed": in_completed,
    "Failed": in_failed,
    "Terminated": after(running, "TerminateJob", stop=True),
}
COMMANDS = ("AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob")
# phase -> the (phase, retryCount) each command leads to; a missing command leaves the job as it was
TABLE: dict[str, dict[str, tuple[str, int]]] = {
    "Pending": {
        "AbortJob": ("Aborting", 0),
        "RestartJob": ("Restarting", 1),
        "TerminateJob": ("Terminating", 0),
        "CompleteJob": ("Completing", 0),
    },
    "Running": {
        "AbortJob": ("Aborting", 0),
        "RestartJob": ("Restarting", 1),
        "TerminateJob": ("Terminating", 0),
        "CompleteJob": ("Completing", 0),
    },
    # every other action widens the restart, none leaves Restarting or counts again
    "Restarting": {},
    "Aborting": {"ResumeJob": ("Restarting", 1)},
    # nothing is left to stop: Restarting → Pending at once, and the pods are created again
    "Aborted": {"ResumeJob": ("Pending", 1)},
    "Completing": {},
    "Terminating": {},
    "Completed": {},
    "Failed": {},
    "Terminated": {},
}
STATE_CASES = [(phase, action) for phase in SETUPS for action in COMMANDS]


@pytest.mark.parametrize(("phase", "action"), STATE_CASES, ids=[f"{p}-{a}" for p, a in STATE_CASES])
def test_state_table(phase: str, action: str) -> None:
    log = SETUPS[phase]()
    assert log.status.phase == phase
    before = log.status.retry_count
    log.command(action)
    log.settle()
    expected = TABLE[phase].get(action, (phase, before))
    assert (log.status.phase, log.status.retry_count) == expected
    assert log.record.pending == ()  # every command was consumed (or, for a finished job, never kept)


# --- kills and their retain policy --------------------------------------------------------------------


def test_restart_job_kills_every_pod_finished_ones_too_and_creates_the_next_generation() -> None:
    log = running()
    log.succeed("train-ps-0")
    log.fail("train-worker-0")
    log.settle()
    restart = log.command("RestartJob")
    outputs = log.settle()
    # the finished pods are deleted at once, the running one stops
    assert deletions(outputs) == {name: "RestartJob" for name in PODS}
    status = of(outputs, "JobStatusChanged")[0]
    assert (status.payload.phase, status.causation_id) == ("Restarting", restart.id)
    assert (log.status.phase, log.live_pods()) == ("Restarting", {"train-worker-1": (0, "Running")})
    log.stopped("train-worker-1")
    created = of(log.settle(), "PodCreated")
    assert [o.name for o in created] == PODS
    pod = created[0].payload.decoded()
    notes = pod.meta.annotations
    assert (notes[POD_GENERATION], notes[JOB_RETRY_COUNT], notes[JOB_VERSION]) == ("1", "1", "1")
    assert log.phases() == ["Pending", "Running", "Restarting", "Pending"]


@pytest.mark.parametrize(("action", "ending"), [("AbortJob", "Aborted"), ("TerminateJob", "Terminated")])
def test_stopping_actions_keep_finished_pods(action: str, ending: str) -> None:
    log = running()
    log.succeed("train-ps-0")
    log.settle()
    assert deletions(log.settle()) == {}
    log.command(action)
    stops = deletions(log.settle())
    assert stops == {"train-worker-0": action, "train-worker-1": action}
    log.stopped(*stops)
    log.settle()
    assert log.status.phase == ending
    assert log.live_pods() == {"train-ps-0": (0, "Succeeded")}
    assert log.status.counts["succeeded"] == 1


def test_restarting_waits_for_enough_pods_to_stop() -> None:
    # Σreplicas − terminating ≥ minAvailable: 3 − 2 < 2, 3 − 1 ≥ 2
    log = running(job(task("ps"), task("worker", 2), min_available=2))
    log.command("RestartJob")
    log.settle()
    log.stopped("train-ps-0")
    log.settle()
    assert log.status.phase == "Restarting"
    log.stopped("train-worker-0")
    outputs = log.settle()
    assert log.status.phase == "Pending"
    # the pods that are gone come back; the one still stopping keeps its slot until it is gone too
    assert [o.name for o in of(outputs, "PodCreated")] == ["train-ps-0", "train-worker-0"]
    log.stopped("train-worker-1")
    assert [o.name for o in of(log.settle(), "PodCreated")] == ["train-worker-1"]


def test_restarting_fails_the_job_once_the_retries_are_used_up() -> None:
    log = running(job(max_retry=1))
    log.command("RestartJob")
    outputs = log.settle()
    assert log.phases()[-2:] == ["Restarting", "Failed"]
    assert log.status.retry_count == 1
    assert of(outputs, "PodCreated") == []


@pytest.mark.parametrize("action", ["RestartJob", "AbortJob", "TerminateJob", "CompleteJob"])
def test_an_action_while_restarting_widens_the_restart_without_counting(action: str) -> None:
    j = job(task("ps"), task("worker", 2, policy("RestartTask", "PodFailed")))
    log = running(j)
    log.fail("train-worker-0")
    outputs = log.settle()
    assert deletions(outputs) == {"train-worker-0": "RestartTask", "train-worker-1": "RestartTask"}
    assert (log.status.phase, log.status.retry_count) == ("Restarting", 1)
    log.command(action)
    outputs = log.settle()
    assert deletions(outputs) == {"train-ps-0": action}
    assert (log.status.phase, log.status.retry_count) == ("Restarting", 1)
    log.stopped("train-ps-0", "train-worker-1")
    assert len(of(log.settle(), "PodCreated")) == 3


# --- maxRetry and retryCount --------------------------------------------------------------------------


def test_an_exit_code_policy_restarts_the_job_until_max_retry_then_fails() -> None:
    j = job(task("main"), policies=(policy("RestartJob", exit_code=3),), max_retry=3)
    log = started(j)
    for attempt in range(3):
        log.run("train-main-0")
        log.settle()
        assert log.status.phase == "Running"
        assert log.live_pods() == {"train-main-0": (attempt, "Running")}
        log.fail("train-main-0", exit_code=3)
        log.settle()
        assert log.status.retry_count == attempt + 1
    assert log.phases() == [
        "Pending",
        "Running",
        *["Restarting", "Pending", "Running"] * 2,
        "Restarting",
        "Failed",
    ]
    # the last retry keeps the failed pod (retain Soft), so its exit code can still be read
    assert log.live_pods() == {"train-main-0": (2, "Failed")}


def test_another_exit_code_fails_the_job_as_the_plain_path_does() -> None:
    j = job(task("main"), policies=(policy("RestartJob", exit_code=3),))
    log = running(j)
    log.fail("train-main-0", exit_code=1)
    log.settle()
    assert (log.phases()[-1], log.status.retry_count) == ("Failed", 0)


def test_restart_task_restarts_only_that_task() -> None:
    j = job(task("ps"), task("worker", 2, policy("RestartTask", "PodFailed")))
    log = running(j)
    failed = log.fail("train-worker-0")
    outputs = log.settle()
    assert deletions(outputs) == {"train-worker-0": "RestartTask", "train-worker-1": "RestartTask"}
    assert of(outputs, "JobStatusChanged")[0].causation_id == failed.id
    log.stopped("train-worker-1")
    created = of(log.settle(), "PodCreated")
    assert [o.name for o in created] == ["train-worker-0", "train-worker-1"]
    log.run("train-worker-0", "train-worker-1")
    log.settle()
    assert log.live_pods() == {
        "train-ps-0": (0, "Running"),
        "train-worker-0": (1, "Running"),
        "train-worker-1": (1, "Running"),
    }
    assert (log.status.phase, log.status.retry_count) == ("Running", 1)


@pytest.mark.parametrize(
    ("action", "restarted"),
    [
        ("RestartPod", ["train-worker-1"]),
        # partitions of 2: pods 0-1 and 2-3
        ("RestartPartition", ["train-worker-0", "train-worker-1"]),
    ],
)
def test_restart_pod_and_partition(action: str, restarted: list[str]) -> None:
    j = job(task("worker", 4, policy(action, "PodFailed"), partition_size=2))
    log = running(j)
    log.fail("train-worker-1")
    outputs = log.settle()
    assert deletions(outputs) == dict.fromkeys(restarted, action)
    log.stopped(*(name for name in restarted if name != "train-worker-1"))  # the failed one is gone
    outputs += log.settle()
    assert sorted(o.name for o in of(outputs, "PodCreated")) == restarted
    assert {name: log.live_pods()[name] for name in restarted} == dict.fromkeys(restarted, (1, "Pending"))
    assert log.status.retry_count == 1


# --- commands: suspend, resume, terminate, complete -----------------------------------------------------


def test_suspend_and_resume() -> None:
    log = running()
    log.succeed("train-ps-0")
    log.settle()
    log.command("AbortJob")
    stops = deletions(log.settle())
    assert stops == {"train-worker-0": "AbortJob", "train-worker-1": "AbortJob"}
    log.stopped(*stops)
    log.settle()
    assert log.status.phase == "Aborted"
    assert log.settle(now=500.0) == []  # a suspended job stays so
    log.command("ResumeJob")
    created = of(log.settle(), "PodCreated")
    # the Succeeded pod was kept and is not run again
    assert [o.name for o in created] == ["train-worker-0", "train-worker-1"]
    log.run("train-worker-0", "train-worker-1")
    log.settle()
    assert log.phases() == ["Pending", "Running", "Aborting", "Aborted", "Restarting", "Pending", "Running"]
    assert (log.status.retry_count, log.status.version) == (1, 2)


def test_suspended_before_it_had_a_podgroup() -> None:
    log = Log()
    log.submit(job())
    log.command("AbortJob")
    outputs = log.settle()
    assert of(outputs, "PodGroupCreated") == []
    assert log.phases() == ["Aborting", "Aborted"]
    log.command("ResumeJob")
    assert of(log.settle(), "PodGroupCreated")
    assert log.status.phase == "Pending"


def test_terminate_stops_the_job_for_good() -> None:
    log = running()
    log.command("TerminateJob")
    log.stopped(*deletions(log.settle()))
    log.settle()
    log.command("ResumeJob")
    assert log.settle() == []
    assert log.phases()[-2:] == ["Terminating", "Terminated"]


def test_task_completed_completes_the_job_like_the_distcc_master() -> None:
    j = job(task("master", 1, policy("CompleteJob", "TaskCompleted")), task("worker", 3))
    log = running(j)
    done = log.succeed("train-master-0")
    outputs = log.settle()
    assert of(outputs, "JobStatusChanged")[0].causation_id == done.id
    stops = deletions(outputs)
    assert stops == {f"train-worker-{i}": "CompleteJob" for i in range(3)}
    log.stopped(*stops)
    log.settle()
    assert log.phases()[-2:] == ["Completing", "Completed"]


# --- status: conditions and versions -----------------------------------------------------------------


def test_conditions_keep_one_entry_per_phase_with_its_latest_transition() -> None:
    log = started()
    log.run(*PODS)
    log.settle(now=20.0)
    log.command("RestartJob")
    log.settle(now=30.0)
    log.stopped(*PODS)
    log.settle(now=40.0)
    log.run(*PODS)
    log.settle(now=50.0)
    conditions = [(c.status, c.last_transition_time) for c in log.status.conditions]
    assert conditions == [("Restarting", 30.0), ("Pending", 40.0), ("Running", 50.0)]
    assert log.status.last_transition_time == 50.0
    # as the read model shows them
    status = job_object(log.record).status
    assert [(c.status, c.last_transition_time) for c in status.conditions] == conditions
    assert (status.retry_count, status.version, status.state.phase) == (1, 1, "Running")


def test_restarts_are_not_deduplicated_away() -> None:
    log = running()
    first = {o.id for o in log.events if o.type == "PodCreated"}
    for _ in range(2):
        log.command("RestartJob")
        log.stopped(*deletions(log.settle()))
        log.settle()
    created = [e for e in log.events if e.type == "PodCreated"]
    assert len(created) == 9 and len({e.id for e in created}) == 9
    assert first < {e.id for e in created}
    assert log.phases().count("Restarting") == 2


# --- dependsOn -----------------------------------------------------------------------------------------


def test_a_task_waits_for_its_dependency_to_run() -> None:
    j = job(task("a", 2), task("b", 1, depends_on=DependsOn(("a",))))
    log = started(j)
    assert sorted(log.record.pods) == ["train-a-0", "train-a-1"]
    log.run("train-a-0")
    assert of(log.settle(), "PodCreated") == []  # a needs both of its pods (its minAvailable)
    log.pod("PodBound", "train-a-1", plan="p")
    log.pod("PodRunning", "train-a-1")
    assert [o.name for o in of(log.settle(), "PodCreated")] == ["train-b-0"]


@pytest.mark.parametrize(
    ("iteration", "running_tasks", "created"),
    [
        ("any", ["a"], True),
        ("any", [], False),
        ("all", ["a"], False),
        ("all", ["a", "b"], True),
    ],
)
def test_depends_on_any_or_all(iteration: str, running_tasks: list[str], created: bool) -> None:
    j = job(task("a"), task("b"), task("c", depends_on=DependsOn(("a", "b"), iteration)))
    log = started(j)
    log.run(*(f"train-{t}-0" for t in running_tasks))
    log.settle()
    assert ("train-c-0" in log.record.pods) is created


def test_a_succeeded_dependency_counts_as_running() -> None:
    j = job(task("a"), task("b", depends_on=DependsOn(("a",))))
    log = started(j)
    log.run("train-a-0")
    log.succeed("train-a-0")  # reported in the same batch as its start
    assert [o.name for o in of(log.settle(), "PodCreated")] == ["train-b-0"]


# --- ttlSecondsAfterFinished ----------------------------------------------------------------------------


def test_a_finished_job_is_cleaned_up_after_its_ttl() -> None:
    log = running(job(ttl_seconds_after_finished=60))
    for name in PODS:
        log.succeed(name)
    log.settle(now=100.0)
    assert log.status.phase == "Completed"
    assert log.settle(now=159.0) == []
    outputs = log.settle(now=160.0)
    assert [(o.type, o.name) for o in outputs] == [("JobCleanedUp", "train"), ("PodGroupDeleted", "train")]
    assert outputs[0].payload == payloads.JobCleanedUp(incarnation=1)
    assert log.state.jobs == {}


def test_a_running_job_or_one_without_ttl_is_not_cleaned_up() -> None:
    log = running(job(ttl_seconds_after_finished=0))
    assert log.settle(now=10_000.0) == []
    done = running()
    for name in PODS:
        done.succeed(name)
    done.settle()
    assert done.settle(now=10_000.0) == []


def test_a_late_clean_up_does_not_delete_the_next_incarnation() -> None:
    log = running(job(ttl_seconds_after_finished=50))
    for name in PODS:
        log.succeed(name)
    log.settle(now=100.0)
    [cleanup] = log.core.reconcile(log.state, 200.0)
    log.add("JobDeleted", "job", "train")
    log.settle()
    log.submit(job())
    log.settle()
    log.publish([cleanup])  # in flight while the job was deleted and submitted again
    assert cleanup.type == "JobCleanedUp" and cleanup.payload.incarnation != log.record.incarnation
    assert log.record.active


# --- checkpoint ----------------------------------------------------------------------------------------


def test_dump_load_keeps_the_lifecycle() -> None:
    j = job(
        task("ps"),
        task("worker", 2, policy("RestartTask", "PodFailed"), max_retry=5),
        policies=(policy("AbortJob", "PodPending", timeout=99.0),),
    )
    log = running(j)
    log.fail("train-worker-0")
    log.settle()
    assert log.record.failures == {"worker": 1} and log.status.restart
    log.stopped("train-worker-1")
    log.settle()  # new workers, each with a delayed PodPending action
    assert log.record.pending
    loaded = log.core.load(log.core.dump(log.state))
    assert loaded == log.state
    assert log.core.reconcile(loaded, 500.0) == log.core.reconcile(log.state, 500.0)


def test_a_checkpoint_whose_published_status_lacks_the_handled_actions_still_loads() -> None:
    log = running(job(task("ps"), task("worker", 2, policy("RestartJob", "PodFailed")), max_retry=3))
    log.fail("train-worker-1")
    log.settle()
    assert log.status.handled  # the restart ran the PodFailed policy's action
    plain = to_plain(log.state)
    # the published status as checkpoints of version 2 first held it: the payload without `handled`
    plain["jobs"][0]["published"] = {
        "phase": "Restarting",
        "counts": {"pending": 0, "running": 2, "succeeded": 0, "failed": 1, "terminating": 0},
        "task_status_count": {"ps": {"Running": 1}, "worker": {"Running": 1, "Failed": 1}},
        "min_available": 3,
        "retry_count": 1,
        "version": 1,
        "restart": [{"action": "RestartJob", "task": "", "lo": 0, "hi": -1, "retain": "None"}],
        "last_transition_time": 10.0,
        "conditions": [
            {"status": "Pending", "last_transition_time": 10.0},
            {"status": "Running", "last_transition_time": 10.0},
            {"status": "Restarting", "last_transition_time": 10.0},
        ],
    }
    checkpoint = msgpack.packb({"version": CHECKPOINT_VERSION, "state": plain}, use_bin_type=True)
    loaded = log.core.load(checkpoint)
    assert loaded.jobs[KEY].published == msgspec.structs.replace(log.status, handled=())
    assert log.core.reconcile(loaded, 500.0) == log.core.reconcile(log.state, 500.0)


# --- the tally under restarts, whatever happens -----------------------------------------------------------

STEPS = st.one_of(
    st.tuples(
        st.sampled_from(
            ["PodBound", "PodRunning", "PodSucceeded", "PodFailed", "PodEvicting", "PodTerminated", "PodLost"]
        ),
        st.sampled_from([*PODS, "train-worker-2"]),
        st.sampled_from(["n1", "n2"]),
    ),
    st.tuples(st.just("command"), st.sampled_from(COMMANDS)),
    st.tuples(st.just("settle"), st.floats(10.0, 100.0)),
    st.tuples(st.just("scale"), st.integers(1, 3)),
    st.tuples(st.just("podgroup"), st.sampled_from(["Running", "Unknown"])),
)


def chaos(workers: int = 2) -> Job:
    worker = task(
        "worker",
        workers,
        policy("RestartTask", "PodFailed"),
        policy("RestartPod", "PodPending", timeout=20.0),
    )
    return job(
        task("ps"),
        worker,
        policies=(policy("RestartJob", "PodEvicted"), policy("AbortJob", "Unknown")),
        max_retry=4,
        ttl_seconds_after_finished=50,
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(STEPS, max_size=40))
def test_the_tally_matches_a_recount_and_reconcile_converges(steps: list[tuple]) -> None:
    log = started(chaos())
    for step in steps:
        if step[0] == "command":
            log.command(step[1])
        elif step[0] == "settle":
            log.now = max(log.now, step[1])
            log.publish(log.core.reconcile(log.state, log.now))
        elif step[0] == "scale":
            log.submit(chaos(step[1]), type="JobUpdated")
        elif step[0] == "podgroup":
            log.podgroup(step[1])
        else:
            type, name, node = step
            log.pod(type, name, node=node, plan="p", reason="r", exit_code=1)
        for record in log.state.jobs.values():
            recounted = copy.deepcopy(record)
            retally(recounted)
            assert record.tally == recounted.tally
    assert log.core.load(log.core.dump(log.state)) == log.state
    log.settle(now=log.now + 100.0)
    assert log.core.reconcile(log.state, log.now) == []
    # the log alone gives the same state (what a new leader rebuilds)
    replayed = log.core.initial()
    for event in log.events:
        replayed = log.core.apply(replayed, event)
    assert log.core.dump(replayed) == log.core.dump(log.state)
