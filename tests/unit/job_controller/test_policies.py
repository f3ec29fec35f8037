"""Lifecycle policies (policies.py): which action an event calls for, the events the log raises, delayed
actions and their cancellation, and Volcano's edge cases (issues #5885, #4814, #2560, #3967), through the
job-controller core with hand-made events (helpers from test_lifecycle.py)."""

from __future__ import annotations

import pytest
from test_lifecycle import PODS, Log, deletions, job, of, policy, running, started, task

from contracts.objects import Job, LifecyclePolicy
from services.job_controller.core.policies import resolve

# --- resolution (applyPolicies) ------------------------------------------------------------------------

RESTART_ON_FAIL = policy("RestartJob", "PodFailed")
TASK_ABORT_ON_FAIL = policy("AbortJob", "PodFailed")
ANY = policy("TerminateJob", "*")
EXIT_3 = policy("CompleteJob", exit_code=3)
PENDING_NO_TIMEOUT = policy("RestartJob", "PodPending")
PENDING_TIMEOUT = policy("RestartJob", "PodPending", timeout=30.0)
LIST = policy("AbortJob", "PodEvicted", "Unknown")


def with_policies(
    job_level: tuple[LifecyclePolicy, ...], task_level: tuple[LifecyclePolicy, ...] = ()
) -> Job:
    return job(task("ps"), task("worker", 2, *task_level), policies=job_level)


RESOLVE_CASES = [
    # (description, job, event, task, exit code, expected (action, names the event) or None)
    ("job policy", with_policies((RESTART_ON_FAIL,)), "PodFailed", "worker", 1, ("RestartJob", True)),
    ("no match", with_policies((RESTART_ON_FAIL,)), "PodEvicted", "worker", None, None),
    (
        "task before job",
        with_policies((RESTART_ON_FAIL,), (TASK_ABORT_ON_FAIL,)),
        "PodFailed",
        "worker",
        1,
        ("AbortJob", True),
    ),
    (
        "another task's policy",
        with_policies((RESTART_ON_FAIL,), (TASK_ABORT_ON_FAIL,)),
        "PodFailed",
        "ps",
        1,
        ("RestartJob", True),
    ),
    (
        "job event skips task policies",
        with_policies((LIST,), (policy("RestartJob", "*"),)),
        "Unknown",
        "",
        None,
        ("AbortJob", True),
    ),
    ("any event", with_policies((ANY,)), "PodEvicted", "ps", None, ("TerminateJob", False)),
    ("any event, TaskCompleted", with_policies((ANY,)), "TaskCompleted", "ps", None, ("TerminateJob", False)),
    ("events list", with_policies((LIST,)), "Unknown", "", None, ("AbortJob", True)),
    ("exit code", with_policies((EXIT_3,)), "PodFailed", "ps", 3, ("CompleteJob", True)),
    ("other exit code", with_policies((EXIT_3,)), "PodFailed", "ps", 1, None),
    ("exit code after events", with_policies((LIST, EXIT_3)), "PodFailed", "ps", 3, ("CompleteJob", True)),
    (
        "task exit code before job event",
        with_policies((RESTART_ON_FAIL,), (EXIT_3,)),
        "PodFailed",
        "worker",
        3,
        ("CompleteJob", True),
    ),
    ("PodPending needs a timeout", with_policies((PENDING_NO_TIMEOUT,)), "PodPending", "ps", None, None),
    (
        "PodPending with a timeout",
        with_policies((PENDING_TIMEOUT,)),
        "PodPending",
        "ps",
        None,
        ("RestartJob", True),
    ),
    ("any event skips PodPending", with_policies((ANY,)), "PodPending", "ps", None, None),
    (
        "any event with a timeout takes PodPending",
        with_policies((policy("AbortJob", "*", timeout=5.0),)),
        "PodPending",
        "ps",
        None,
        ("AbortJob", False),
    ),
]


@pytest.mark.parametrize(
    ("given", "event", "task_name", "exit_code", "expected"),
    [case[1:] for case in RESOLVE_CASES],
    ids=[case[0] for case in RESOLVE_CASES],
)
def test_resolve(
    given: Job, event: str, task_name: str, exit_code: int | None, expected: tuple | None
) -> None:
    found = resolve(given, event, task_name, exit_code)
    assert (None if found is None else (found[0].action, found[1])) == expected


# --- the events the log raises ------------------------------------------------------------------------


def test_without_policies_a_failure_changes_nothing_but_the_counts() -> None:
    log = running()
    log.fail("train-worker-0")
    log.settle()
    assert log.record.pending == () and log.status.retry_count == 0
    assert log.status.phase == "Running"


def scaled(workers: int, event: str) -> Job:
    return job(task("ps"), task("worker", workers), policies=(policy("AbortJob", event),))


@pytest.mark.parametrize(
    ("event", "raise_it"),
    [
        ("PodEvicted", lambda log: log.pod("PodEvicting", "train-worker-1", reason="descheduler", plan="p")),
        ("PodEvicted", lambda log: log.pod("PodLost", "train-worker-1", reason="NodeLost")),
        ("PodEvicted", lambda log: log.pod("PodTerminated", "train-worker-1", reason="Killed")),
        ("PodFailed", lambda log: log.fail("train-worker-1")),
        ("Unknown", lambda log: log.podgroup("Unknown")),
        ("JobUpdated", lambda log: log.submit(scaled(3, "JobUpdated"), type="JobUpdated")),
    ],
)
def test_each_event_calls_for_its_policy(event: str, raise_it) -> None:
    log = running(scaled(2, event))
    cause = raise_it(log)
    outputs = log.settle()
    assert log.phases()[-1] == "Aborting"
    assert of(outputs, "JobStatusChanged")[0].causation_id == cause.id


def test_task_failed_after_max_retry_failures_comes_before_the_pod_failure() -> None:
    worker = task(
        "worker", 2, policy("RestartPod", "PodFailed"), policy("TerminateJob", "TaskFailed"), max_retry=2
    )
    log = running(job(task("ps"), worker))
    log.fail("train-worker-0")
    log.settle()
    assert (log.status.phase, log.status.retry_count) == ("Pending", 1)
    log.run("train-worker-0")
    log.settle()
    log.fail("train-worker-0")  # the task's second failure: TaskFailed, then the PodFailed it absorbs
    log.settle()
    assert log.phases()[-1] == "Terminating" and log.status.retry_count == 1
    assert log.record.pending == ()


def test_task_failed_never_fires_with_unlimited_retries() -> None:
    worker = task(
        "worker", 2, policy("RestartPod", "PodFailed"), policy("TerminateJob", "TaskFailed"), max_retry=-1
    )
    log = running(job(task("ps"), worker, max_retry=10))
    for _ in range(4):
        log.fail("train-worker-0")
        log.settle()
        log.run("train-worker-0")
        log.settle()
    assert (log.status.phase, log.status.retry_count) == ("Running", 4)


def test_a_full_restart_resets_the_task_failures() -> None:
    worker = task("worker", 2, policy("RestartJob", "PodFailed"), max_retry=2)
    log = running(job(task("ps"), worker))
    log.fail("train-worker-0")
    assert log.record.failures == {"worker": 1}
    log.settle()  # the restart is published
    assert log.record.failures == {}


def test_task_completed_only_once_every_replica_succeeded() -> None:
    log = running(job(task("ps"), task("worker", 2, policy("AbortJob", "TaskCompleted"))))
    log.succeed("train-worker-0")
    log.settle()
    assert log.status.phase == "Running"
    log.succeed("train-worker-1")
    log.settle()
    assert log.phases()[-1] == "Aborting"


# --- delayed actions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["RestartJob", "RestartTask", "RestartPod", "AbortJob"])
def test_pod_pending_acts_after_its_timeout(action: str) -> None:
    log = started(
        job(task("ps"), task("worker", 2, policy(action, "PodPending", timeout=30.0)))
    )  # pods at 10
    log.run("train-ps-0")
    log.settle()
    assert log.settle(now=39.0) == []
    log.settle(now=40.0)
    assert "Restarting" in log.phases() or log.phases()[-1] == "Aborting"
    # one action for the task: the other pod's delayed action of the same scope is cancelled
    assert log.status.retry_count == (0 if action == "AbortJob" else 1)
    # nothing due at 40 is left: recreated workers wait 30 s anew, a restarting or aborted job has no pods
    recreated = action in ("RestartTask", "RestartPod")
    timers = {(p.pod, p.due) for p in log.record.pending}
    assert timers == ({("train-worker-0", 70.0), ("train-worker-1", 70.0)} if recreated else set())


def test_pod_pending_is_cancelled_when_the_pod_runs_first() -> None:
    log = started(job(policies=(policy("RestartJob", "PodPending", timeout=30.0),)))
    log.now = 20.0
    log.run(*PODS)
    log.settle(now=100.0)
    assert (log.phases()[-1], log.status.retry_count) == ("Running", 0)
    assert log.record.pending == ()


def test_a_recreated_pod_waits_its_own_pod_pending_timeout() -> None:
    log = started(job(task("main", 1, policy("RestartPod", "PodPending", timeout=30.0))))
    log.settle(now=40.0)  # created at 10: restarted at 40, created again at 40
    assert (log.status.retry_count, log.live_pods()) == (1, {"train-main-0": (1, "Pending")})
    assert log.settle(now=69.0) == []
    log.settle(now=70.0)
    assert log.status.retry_count == 2


def test_a_delayed_eviction_action_is_cancelled_when_the_pod_runs_again() -> None:
    log = running(job(policies=(policy("RestartJob", "PodEvicted", timeout=30.0),)))
    log.now = 20.0
    log.pod("PodEvicting", "train-worker-1", reason="preempt", plan="p")
    log.stopped("train-worker-1")
    assert [o.name for o in of(log.settle(), "PodCreated")] == ["train-worker-1"]  # the plain path
    log.now = 30.0
    log.run("train-worker-1")
    log.settle(now=100.0)
    assert (log.phases()[-1], log.status.retry_count) == ("Running", 0)


def test_a_delayed_eviction_action_runs_if_the_pod_does_not_recover() -> None:
    log = running(job(policies=(policy("RestartJob", "PodEvicted", timeout=30.0),)))
    log.now = 20.0
    log.pod("PodEvicting", "train-worker-1", reason="preempt", plan="p")
    log.stopped("train-worker-1")
    log.settle()
    log.settle(now=50.0)
    assert log.phases()[-3:] == ["Running", "Pending", "Restarting"]
    assert log.status.retry_count == 1


def test_the_same_delayed_action_for_a_pod_is_kept_once() -> None:
    log = running(job(policies=(policy("RestartJob", "PodEvicted", timeout=30.0),)))
    for generation in range(2):
        log.pod("PodLost", "train-worker-1", reason="NodeLost")
        log.settle()
        if generation == 0:
            log.pod("PodBound", "train-worker-1", plan="p2")
    assert len(log.record.pending) == 1


def test_an_action_cancels_the_delayed_actions_of_its_scope() -> None:
    log = running(job(policies=(policy("RestartJob", "PodEvicted", timeout=30.0),)))
    log.now = 20.0
    log.pod("PodLost", "train-worker-0", reason="NodeLost")
    log.now = 25.0
    log.pod("PodLost", "train-worker-1", reason="NodeLost")
    log.settle(now=50.0)
    assert log.record.pending == ()
    log.settle(now=60.0)
    assert log.status.retry_count == 1


# --- Volcano's edge cases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "phase"),
    [
        ("PodEvicting", "PodFailed", "Restarting"),
        ("PodFailed", "PodEvicting", "Terminating"),
        ("PodFailed", "PodTerminated", "Terminating"),
    ],
)
def test_an_eviction_and_a_failure_of_one_pod_give_one_action(first: str, second: str, phase: str) -> None:
    # issue #5885: a pod evicted by the scheduler was seen as PodEvicted and as PodFailed
    j = job(policies=(policy("RestartJob", "PodEvicted"), policy("TerminateJob", "PodFailed")))
    log = running(j)
    for type in (first, second):
        log.pod(type, "train-worker-1", reason="preempt", plan="p", exit_code=137)
    assert len(log.record.pending) == 1
    log.settle()
    assert log.phases()[2:] == [phase]
    assert log.status.retry_count == (1 if phase == "Restarting" else 0)
    assert log.record.pending == ()


def test_restart_task_does_not_retrigger_itself_through_the_pods_it_kills() -> None:
    # issue #4814: RestartTask on PodEvicted saw its own kills as evictions and restarted until maxRetry.
    # Job minAvailable 2 (ps 1 + workers 1): the job is Pending again while two killed workers still stop.
    j = job(task("ps"), task("worker", 3, policy("RestartTask", "PodEvicted"), min_available=1), max_retry=3)
    log = running(j)
    log.pod("PodEvicting", "train-worker-0", reason="preempt", plan="p")
    stops = deletions(log.settle())
    assert stops == {"train-worker-1": "RestartTask", "train-worker-2": "RestartTask"}
    log.pod("PodTerminated", "train-worker-0", reason="Evicted")
    log.settle()
    assert log.status.phase == "Pending"
    log.stopped(*stops)  # the killed pods stop after the restart is over
    log.settle()
    log.run("train-worker-0", "train-worker-1", "train-worker-2")
    log.settle()
    assert log.phases() == ["Pending", "Running", "Restarting", "Pending", "Running"]
    assert log.status.retry_count == 1


EVICTION_CASES = [
    # (description, policy events, how the pod goes, restarted, retryCount after)
    ("preempt through *", ("*",), ("PodEvicting", "preempt"), True, 0),
    ("reclaim through *", ("*",), ("PodEvicting", "reclaim"), True, 0),
    ("preempt named", ("PodEvicted",), ("PodEvicting", "preempt"), True, 1),
    ("node lost through *", ("*",), ("PodLost", "NodeLost"), True, 1),
    ("stopped by hand through *", ("*",), ("PodTerminated", "Killed"), True, 1),
    ("descheduler through *", ("*",), ("PodEvicting", "descheduler"), True, 1),
    ("descheduled through *", ("*",), ("PodEvicting", "deschedule: LoadAware: node n1 is hot"), True, 1),
    ("preempt with a detail through *", ("*",), ("PodEvicting", "preempt: for a higher priority"), True, 0),
]


@pytest.mark.parametrize(
    ("events", "ending", "restarted", "retries"),
    [case[1:] for case in EVICTION_CASES],
    ids=[case[0] for case in EVICTION_CASES],
)
def test_evictions_by_the_scheduler_count_only_when_the_policy_names_them(
    events: tuple[str, ...], ending: tuple[str, str], restarted: bool, retries: int
) -> None:
    # issue #2560: a job preempted maxRetry times failed for having been preempted
    log = running(job(policies=(policy("RestartJob", *events),)))
    type, reason = ending
    log.pod(type, "train-worker-1", reason=reason, plan="p")
    log.settle()
    assert ("Restarting" in log.phases()) is restarted
    assert log.status.retry_count == retries


@pytest.mark.parametrize(
    "reason", ["preempt", "deschedule: LoadAware: node n1 is above its targetThresholds"]
)
def test_evictions_without_a_policy_never_count(reason: str) -> None:
    """The evicted pod is created again (its next generation) and placed again; nothing counts."""
    log = running(job(max_retry=1))
    for _ in range(3):
        log.pod("PodEvicting", "train-worker-1", reason=reason, plan="p")
        log.stopped("train-worker-1")
        log.settle()
        log.run("train-worker-1")
        log.settle()
    assert (log.status.phase, log.status.retry_count) == ("Running", 0)
    assert log.live_pods()["train-worker-1"] == (3, "Running")


def test_a_finished_job_ignores_policies_and_commands() -> None:
    # issue #3967: events about a finished job still ran its policies
    j = job(policies=(policy("RestartJob", "PodEvicted", "Unknown"),))
    log = running(j)
    for name in PODS[:2]:
        log.fail(name)
    log.fail(PODS[2])
    log.settle()
    assert log.status.phase == "Failed"
    log.podgroup("Unknown")
    log.command("RestartJob")
    assert log.record.pending == ()
    assert log.settle(now=500.0) == []


def test_delayed_actions_are_dropped_when_the_job_finishes() -> None:
    log = running(job(task("main"), policies=(policy("RestartJob", "PodFailed", timeout=60.0),)))
    log.fail("train-main-0")
    assert len(log.record.pending) == 1
    log.settle()  # the only pod failed: the job fails before the delayed restart is due
    assert log.status.phase == "Failed" and log.record.pending == ()
    assert log.settle(now=500.0) == []


def test_events_between_a_finish_and_its_stops_are_ignored() -> None:
    j = job(task("ps"), task("worker", 2), min_success=2, policies=(policy("RestartJob", "PodEvicted"),))
    log = running(j)
    log.succeed("train-worker-0")
    log.succeed("train-worker-1")
    [completed] = [o for o in log.core.reconcile(log.state, log.now) if o.type == "JobStatusChanged"]
    log.publish([completed])
    log.pod("PodLost", "train-ps-0", reason="NodeLost")  # before the controller asked it to stop
    log.settle()
    assert log.phases()[-1] == "Completed" and log.status.retry_count == 0


def test_a_late_event_of_a_killed_pod_raises_nothing() -> None:
    # minAvailable 1: the job is Pending again as soon as one killed pod is gone
    log = running(job(min_available=1, policies=(policy("TerminateJob", "PodFailed", "PodEvicted"),)))
    log.command("RestartJob")
    log.settle()
    log.stopped("train-ps-0")
    log.settle()
    assert log.status.phase == "Pending"
    log.fail("train-worker-0", exit_code=143)  # killed by the restart: SIGTERM
    log.pod("PodLost", "train-worker-1", reason="NodeLost")
    assert log.record.pending == ()
    log.settle()
    assert "Terminating" not in log.phases() and log.status.retry_count == 1


def test_an_event_for_a_deleted_job_is_ignored() -> None:
    log = running(job(policies=(policy("RestartJob", "PodEvicted"),)))
    log.add("JobDeleted", "job", "train")
    log.pod("PodLost", "train-ps-0", reason="NodeLost")
    assert log.record.pending == ()


def test_replaying_the_log_gives_the_same_state() -> None:
    log = running(job(task("ps"), task("worker", 2, policy("RestartTask", "PodFailed", timeout=5.0))))
    log.fail("train-worker-0")
    log.settle(now=20.0)
    log.stopped("train-worker-1")
    log.settle(now=30.0)
    replay = Log()
    for event in log.events:
        replay.state = replay.core.apply(replay.state, event)
    assert replay.core.dump(replay.state) == log.core.dump(log.state)
    assert replay.core.reconcile(replay.state, 30.0) == []
