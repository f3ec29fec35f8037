"""The CronJob controller core: when a CronJob's jobs are made, which missed runs run, the concurrency
policies, startingDeadlineSeconds, suspend, history limits, deletion, the timer, and the status it
shows. Times are epoch seconds from 0 (1970-01-01T00:00Z), so "*/5 * * * *" fires at 300, 600, ..."""

from __future__ import annotations

from dataclasses import replace

import pytest
from workloads_harness import Cluster, cronjob

from contracts.objects import Job, ObjectMeta
from contracts.objects_flow import CronJob
from services.job_controller.core.workloads.owners import SCHEDULED_TIMESTAMP


def started(cluster: Cluster, at: float = 0.0, **spec: object) -> CronJob:
    cron = cluster.apply(cronjob(**spec), at=at)
    assert isinstance(cron, CronJob)
    return cron


def test_a_job_per_scheduled_time_named_after_its_minute() -> None:
    cluster = Cluster()
    started(cluster)
    assert cluster.settle(299) == []
    cluster.settle(300)
    cluster.settle(301)
    cluster.settle(599)
    assert cluster.created() == ["tick-5"]
    (request,) = cluster.requests
    job = request.payload.decoded()  # type: ignore[union-attr]
    assert job.meta.annotations[SCHEDULED_TIMESTAMP] == "1970-01-01T00:05:00Z"
    assert job.tasks[0].name == "worker" and job.queue == "default"
    cluster.settle(600)
    assert cluster.created() == ["tick-5", "tick-10"]


def test_the_same_decision_is_the_same_request() -> None:
    cluster = Cluster()
    started(cluster)
    first, second = cluster.reconcile(300), cluster.reconcile(300)
    assert [o.id for o in first] == [o.id for o in second] and len(first) == 1
    assert first[0].causation_id is not None  # the request id admission derives the event's id from


@pytest.mark.parametrize(
    ("spec", "now", "expected"),
    [
        # only the latest of the missed runs runs
        ({}, 1000, ["tick-15"]),
        # no further back than startingDeadlineSeconds: 900 is 100 s late
        ({"startingDeadlineSeconds": 60}, 1000, []),
        ({"startingDeadlineSeconds": 120}, 1000, ["tick-15"]),
        # a day's worth of missed minutes: still one run (and a note, below)
        ({"schedule": "* * * * *"}, 86_400 + 30, ["tick-1440"]),
    ],
)
def test_missed_schedules(spec: dict[str, object], now: float, expected: list[str]) -> None:
    cluster = Cluster()
    started(cluster, **spec)
    cluster.settle(now)
    assert cluster.created() == expected


def test_too_many_missed_start_times_are_noted() -> None:
    cluster = Cluster()
    started(cluster, schedule="* * * * *")
    cluster.settle(100 * 60)  # Kubernetes warns above 100
    assert cluster.state.notes == []
    cluster = Cluster()
    started(cluster, schedule="* * * * *")
    cluster.settle(102 * 60)
    assert len(cluster.state.notes) == 1 and "too many missed start times" in cluster.state.notes[0]


@pytest.mark.parametrize(
    ("policy", "created", "deleted"),
    [
        ("Allow", ["tick-5", "tick-10"], []),
        ("Forbid", ["tick-5"], []),
        ("Replace", ["tick-5", "tick-10"], ["tick-5"]),
    ],
)
def test_concurrency_policies(policy: str, created: list[str], deleted: list[str]) -> None:
    cluster = Cluster()
    started(cluster, concurrencyPolicy=policy)
    cluster.settle(300)
    cluster.job_phase("tick-5", "Running", 310)
    cluster.settle(600)
    assert (cluster.created(), cluster.deleted()) == (created, deleted)
    status = cluster.rendered("cronjob", "tick").status
    assert status.active == tuple(n for n in created if n not in deleted)
    assert status.last_schedule_time == (600 if len(created) == 2 else 300)


def test_forbid_runs_the_skipped_time_once_the_active_job_finishes_within_the_deadline() -> None:
    cluster = Cluster()
    started(cluster, concurrencyPolicy="Forbid", startingDeadlineSeconds=100)
    cluster.settle(300)
    cluster.settle(600)
    cluster.job_phase("tick-5", "Completed", 650)
    cluster.settle(650)  # 600 is 50 s late: it runs now
    cluster.settle(900)
    cluster.job_phase("tick-10", "Completed", 1000)
    cluster.settle(1000)  # 900 is 100 s late: too late
    assert cluster.created() == ["tick-5", "tick-10"]
    cluster.settle(1200)
    assert cluster.created() == ["tick-5", "tick-10", "tick-20"]


def test_suspend_stops_new_runs_and_resuming_runs_the_latest_missed() -> None:
    cluster = Cluster()
    cron = started(cluster, suspend=True)
    cluster.settle(1000)
    assert cluster.created() == []
    cluster.apply(replace(cron, suspend=False), at=1001)
    cluster.settle(1001)
    assert cluster.created() == ["tick-15"]


def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    cluster = Cluster()
    started(cluster, successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1)
    for minute in (5, 10, 15, 20, 25):
        now = minute * 60
        cluster.settle(now)
        phase = "Failed" if minute in (10, 25) else "Completed"
        cluster.job_phase(f"tick-{minute}", phase, now + 10)
        cluster.settle(now + 10)
    assert cluster.deleted() == ["tick-5", "tick-10"]
    assert cluster.jobs() == ["tick-15", "tick-20", "tick-25"]
    status = cluster.rendered("cronjob", "tick").status
    assert (status.active, status.last_schedule_time, status.last_successful_time) == ((), 1500, 1210)


def test_a_zero_history_limit_keeps_no_finished_job() -> None:
    cluster = Cluster()
    started(cluster, successfulJobsHistoryLimit=0)
    cluster.settle(300)
    cluster.job_phase("tick-5", "Completed", 320)
    cluster.settle(320)
    assert cluster.jobs() == [] and cluster.deleted() == ["tick-5"]


def test_deleting_the_cronjob_deletes_its_jobs_and_nobody_elses() -> None:
    cluster = Cluster()
    started(cluster, concurrencyPolicy="Allow")
    cluster.submit_foreign(Job(meta=ObjectMeta("tick-99", uid="u-foreign")))
    cluster.settle(300)
    cluster.settle(600)
    cluster.job_phase("tick-5", "Completed", 610)
    cluster.delete("CronJob", "default/tick", at=620)
    cluster.settle(620)
    assert sorted(cluster.deleted()) == ["tick-10", "tick-5"]
    assert cluster.jobs() == ["tick-99"]
    assert cluster.rendered("cronjob", "tick") is None
    cluster.settle(5000)
    assert cluster.created() == ["tick-5", "tick-10"]


def test_a_job_of_a_cronjob_that_is_gone_is_collected() -> None:
    """A create that was in flight when its CronJob was deleted (and re-created) lands afterwards."""
    cluster = Cluster()
    started(cluster)
    (stale,) = cluster.reconcile(300)
    cluster.delete("CronJob", "default/tick", at=301)
    cluster.apply(cronjob(), at=302, uid="uid-second")
    cluster.answer(stale, 303)  # made for the first CronJob
    assert [(o.type, o.name) for o in cluster.reconcile(303)] == [("JobDeleted", "tick-5")]


def test_a_taken_name_is_not_created_again() -> None:
    cluster = Cluster()
    started(cluster)
    cluster.submit_foreign(Job(meta=ObjectMeta("tick-5", uid="u-foreign")))
    assert cluster.settle(300) == []


def test_the_timer_hands_out_a_cronjob_when_its_schedule_fires() -> None:
    cluster = Cluster()
    started(cluster, at=10)
    core, state = cluster.core, cluster.state
    assert core.due(state, 299) == []
    assert core.due(state, 300) == [("cronjob", "default/tick")]
    assert core.due(state, 301) == []  # scheduled again, for 600
    assert core.due(state, 600) == [("cronjob", "default/tick")]
    assert core.next_moment(state, 600) == 900
    cluster.apply(replace(cronjob(), suspend=True), at=601)
    assert core.due(state, 10_000) == [] and core.next_moment(state, 601) is None


def test_time_zones_and_the_scheduled_timestamp() -> None:
    cluster = Cluster()
    started(cluster, schedule="0 9 * * *", timeZone="Asia/Tokyo")  # 00:00 UTC
    cluster.settle(86_400)
    (request,) = cluster.requests
    job = request.payload.decoded()  # type: ignore[union-attr]
    assert job.meta.name == "tick-1440"
    assert job.meta.annotations[SCHEDULED_TIMESTAMP] == "1970-01-02T09:00:00+09:00"


def test_the_state_survives_a_checkpoint() -> None:
    cluster = Cluster()
    started(cluster, successfulJobsHistoryLimit=1)
    cluster.settle(300)
    cluster.job_phase("tick-5", "Completed", 310)
    cluster.settle(600)
    loaded = cluster.core.load(cluster.core.dump(cluster.state))
    assert loaded == cluster.state
    assert cluster.core.reconcile(loaded, 700) == cluster.core.reconcile(cluster.state, 700)
