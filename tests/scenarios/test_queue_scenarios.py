"""Seed 003's queue scenarios (weights, reclaim, capability, reclaimable: false) on a 4-core cluster, run
through the simulator with the manifests of examples/queues."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.parse import load_files
from services.scheduler.core.conf import DEFAULT_CONF, SchedulerConf, default_conf, parse_conf
from services.scheduler.core.framework.plan import SessionResult
from services.simulator.engine import SimulationRun, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "queues"
RECLAIM_TEXT = (EXAMPLES / "reclaim.conf").read_text()
RECLAIM = parse_conf(RECLAIM_TEXT, "reclaim.conf")
NODE = "node-1"


def pod_of(job: str) -> str:
    """The single pod of a one-task, one-replica scenario job."""
    return f"default/{job}-main-0"


def run_scenario(
    manifest: str | Path, conf: SchedulerConf = RECLAIM, **kwargs: object
) -> tuple[SimulationRun, list[tuple[float, SessionResult]]]:
    """The run and its timeline: each session's result with the simulated time it ran at."""
    times: list[float] = []
    objects = load_files([EXAMPLES / "cluster.yaml", EXAMPLES / manifest])
    run = simulate(
        objects, conf, progress=lambda cycle, now, unfinished, pending: times.append(now), **kwargs
    )
    return run, list(zip(times, run.results, strict=True))


def condition(result: SessionResult, job: str, kind: str) -> str:
    """The message of the PodGroup's condition `kind` as the session left it ("" if absent)."""
    for c in result.podgroups[f"default/{job}"].conditions:
        if c.type == kind and c.status == "True":
            return c.message or c.reason
    return ""


# --- scenario 1: weights ------------------------------------------------------------------------------


@pytest.mark.parametrize("conf", [default_conf(), RECLAIM], ids=["default-conf", "reclaim-conf"])
def test_weights_both_jobs_run_at_once(conf: SchedulerConf) -> None:
    run, _ = run_scenario("scenario-1-weights.yaml", conf, cycles=1)
    first = run.results[0]
    assert first.binds == {pod_of("test1-1cpu"): NODE, pod_of("test2-3cpu"): NODE}
    assert run.world.pods[pod_of("test1-1cpu")].status.phase == "Running"
    assert run.world.pods[pod_of("test2-3cpu")].status.phase == "Running"
    # each queue asks for exactly its weighted share (1:3 of 4 cores), and gets it
    assert first.queues["test1"].deserved["cpu"] == 1000
    assert first.queues["test2"].deserved["cpu"] == 3000
    assert first.queues["test1"].allocated["cpu"] == 1000
    assert first.queues["test2"].allocated["cpu"] == 3000


def test_weights_run_to_completion_together() -> None:
    run, _ = run_scenario("scenario-1-weights.yaml", until_idle=True)
    assert run.outcome == "idle"
    assert run.evictions == []
    jobs = run.world.jobs
    assert {k: (r.phase, r.start_time, r.finish_time) for k, r in jobs.items()} == {
        "default/test1-1cpu": ("Completed", 0.0, 600.0),
        "default/test2-3cpu": ("Completed", 0.0, 600.0),
    }


# --- scenario 2: reclaim ------------------------------------------------------------------------------


def test_reclaim_lone_queue_uses_the_whole_cluster_then_gives_back_its_surplus() -> None:
    run, timeline = run_scenario("scenario-2-reclaim.yaml", until_idle=True)
    big1, small1, big2 = pod_of("test1-3cpu"), pod_of("test1-1cpu"), pod_of("test2-3cpu")

    t0, first = timeline[0]
    assert t0 == 0.0
    assert first.binds == {small1: NODE, big1: NODE}
    # alone, test1 deserves the whole cluster
    assert first.queues["test1"].deserved["cpu"] == 4000

    # nothing is evicted before test2 arrives at 30 s
    before = [r for t, r in timeline if t < 30]
    assert all(not r.evictions for r in before)

    reclaiming = [(t, r) for t, r in timeline if r.evictions]
    assert len(reclaiming) == 1
    t_reclaim, reclaim = reclaiming[0]
    assert t_reclaim == 30.0
    # only the 3-core job is taken back: after it test1 holds 1 core, its deserved share
    assert reclaim.evictions == [big1]
    assert reclaim.pipelined == {big2: NODE}
    assert reclaim.queues["test1"].deserved["cpu"] == 1000
    assert reclaim.queues["test2"].deserved["cpu"] == 3000

    # the session after the eviction binds test2's job; test1's 1-core job was never touched
    assert [t for t, r in timeline if big2 in r.binds] == [31.0]
    assert run.evictions == [big1]

    jobs = run.world.jobs
    assert run.outcome == "idle"
    assert (jobs["default/test1-1cpu"].start_time, jobs["default/test1-1cpu"].finish_time) == (0.0, 600.0)
    assert (jobs["default/test2-3cpu"].start_time, jobs["default/test2-3cpu"].finish_time) == (31.0, 631.0)
    # the reclaimed job starts over once test2's job is done (600 s from 631 s)
    assert jobs["default/test1-3cpu"].finish_time == 1231.0
    assert all(r.phase == "Completed" for r in jobs.values())


def test_reclaim_state_right_after_the_eviction() -> None:
    """Two sessions 30 s apart: the second one (test2 just arrived) evicts and pipelines."""
    run, _ = run_scenario("scenario-2-reclaim.yaml", cycles=2, period_s=30.0)
    pods, jobs = run.world.pods, run.world.jobs
    evicted = pods[pod_of("test1-3cpu")]
    assert (evicted.status.phase, evicted.spec.node_name) == ("Pending", "")
    assert pods[pod_of("test1-1cpu")].status.phase == "Running"
    # pipelined onto the cores being released, not bound yet
    assert (pods[pod_of("test2-3cpu")].status.phase, pods[pod_of("test2-3cpu")].spec.node_name) == (
        "Pending",
        "",
    )
    assert jobs["default/test1-3cpu"].phase == "Pending"
    assert jobs["default/test1-1cpu"].phase == "Running"
    assert jobs["default/test2-3cpu"].phase == "Pending"
    assert run.world.podgroups["default/test2-3cpu"].status.phase == "Inqueue"

    run3, _ = run_scenario("scenario-2-reclaim.yaml", cycles=3, period_s=30.0)
    assert run3.world.pods[pod_of("test2-3cpu")].status.phase == "Running"
    assert run3.world.jobs["default/test2-3cpu"].phase == "Running"
    assert run3.world.pods[pod_of("test1-3cpu")].status.phase == "Pending"


def test_reclaim_needs_the_reclaimer_admitted_past_overcommit() -> None:
    """Why reclaim.conf leaves overcommit out: with the default tiers the full cluster makes overcommit's
    enqueue gate hold test2's job Pending, reclaim never looks at Pending jobs, so nothing is reclaimed and
    test2's job waits for test1's jobs to finish (as in Volcano)."""
    conf = parse_conf(
        DEFAULT_CONF.replace("enqueue, allocate, backfill", "enqueue, allocate, backfill, reclaim")
    )
    assert conf.actions == ("enqueue", "allocate", "backfill", "reclaim")
    run, timeline = run_scenario("scenario-2-reclaim.yaml", conf, until_idle=True)
    assert run.evictions == []
    at_30 = next(r for t, r in timeline if t == 30.0)
    assert at_30.podgroups["default/test2-3cpu"].phase == "Pending"
    assert run.world.jobs["default/test2-3cpu"].start_time == 600.0


# --- scenario 3: capability ---------------------------------------------------------------------------


@pytest.mark.parametrize("conf", [default_conf(), RECLAIM], ids=["default-conf", "reclaim-conf"])
def test_capability_is_a_hard_cap(conf: SchedulerConf) -> None:
    run, _ = run_scenario("scenario-3-capability.yaml", conf, cycles=1)
    first = run.results[0]
    assert first.binds == {pod_of("capped-1cpu"): NODE}
    # its PodGroup stays Pending, so the job-controller never creates its pod
    assert pod_of("capped-3cpu") not in run.world.pods
    # what the queue deserves follows what its pods ask for (proportion counts pod requests, as Volcano's
    # does): the 3-core job has no pod while its PodGroup is Pending, so only the 1-core job counts
    assert first.queues["capped"].deserved["cpu"] == 1000
    assert first.podgroups["default/capped-3cpu"].phase == "Pending"


def test_capability_rejection_names_the_queue_and_resource() -> None:
    run, _ = run_scenario("scenario-3-capability.yaml", cycles=1)
    message = condition(run.results[0], "capped-3cpu", "Unschedulable")
    assert "capped" in message
    assert "cpu" in message


def test_capability_rejection_in_allocate_names_the_queue_and_resource() -> None:
    """Without the enqueue gate the job reaches allocate, whose quota check explains itself."""
    conf = parse_conf(RECLAIM_TEXT.replace("enqueue, ", ""))
    assert conf.actions == ("allocate", "backfill", "reclaim")
    run, _ = run_scenario("scenario-3-capability.yaml", conf, cycles=1)
    first = run.results[0]
    assert first.binds == {pod_of("capped-1cpu"): NODE}
    message = condition(first, "capped-3cpu", "Unschedulable")
    assert "queue capped" in message
    assert "cpu" in message


def test_capability_job_never_runs_even_on_an_empty_cluster() -> None:
    run, _ = run_scenario("scenario-3-capability.yaml", until_idle=True)
    jobs = run.world.jobs
    assert jobs["default/capped-1cpu"].phase == "Completed"
    assert jobs["default/capped-3cpu"].phase == "Pending"
    assert jobs["default/capped-3cpu"].start_time is None
    assert run.world.podgroups["default/capped-3cpu"].status.phase == "Pending"
    assert pod_of("capped-3cpu") not in run.world.pods
    # the run does not spin: pending work that no session can place ends it
    assert run.outcome == "unschedulable"
    assert pod_of("capped-3cpu") not in run.binds


# --- scenario 4: reclaimable: false -------------------------------------------------------------------


def test_not_reclaimable_queue_keeps_what_it_holds_above_its_share() -> None:
    run, timeline = run_scenario("scenario-4-not-reclaimable.yaml", until_idle=True)
    big1 = pod_of("test1-3cpu")
    assert timeline[0][1].binds == {big1: NODE}

    at_30 = next(r for t, r in timeline if t == 30.0)
    # test1 holds 3 cores, 1 above its share of 2; test2 is admitted but nothing is taken back
    assert at_30.queues["test1"].allocated["cpu"] == 3000
    assert at_30.queues["test1"].deserved["cpu"] == 2000
    assert at_30.queues["test2"].deserved["cpu"] == 2000
    assert at_30.binds == {}
    assert at_30.evictions == []
    assert at_30.podgroups["default/test2-2cpu"].phase == "Inqueue"
    assert "insufficient cpu" in condition(at_30, "test2-2cpu", "Unschedulable")

    assert run.evictions == []
    jobs = run.world.jobs
    assert run.outcome == "idle"
    assert (jobs["default/test1-3cpu"].start_time, jobs["default/test1-3cpu"].finish_time) == (0.0, 600.0)
    # test2's job runs only once test1's job has finished
    assert jobs["default/test2-2cpu"].start_time == 600.0


def test_not_reclaimable_state_while_test1_runs() -> None:
    run, _ = run_scenario("scenario-4-not-reclaimable.yaml", cycles=3, period_s=30.0)
    pods, jobs = run.world.pods, run.world.jobs
    assert (pods[pod_of("test1-3cpu")].status.phase, pods[pod_of("test1-3cpu")].spec.node_name) == (
        "Running",
        NODE,
    )
    assert pods[pod_of("test2-2cpu")].status.phase == "Pending"
    assert jobs["default/test1-3cpu"].phase == "Running"
    assert jobs["default/test2-2cpu"].phase == "Pending"
    assert run.evictions == []


def test_the_same_queues_reclaimable_would_give_back(tmp_path: Path) -> None:
    """Control for scenario 4: with test1 reclaimable, test2 takes back the cores at once."""
    text = (EXAMPLES / "scenario-4-not-reclaimable.yaml").read_text()
    assert "reclaimable: false" in text
    manifest = tmp_path / "scenario-4-reclaimable.yaml"
    manifest.write_text(text.replace("reclaimable: false", "reclaimable: true"))
    run, timeline = run_scenario(manifest, until_idle=True)
    assert run.evictions == [pod_of("test1-3cpu")]
    assert next(t for t, r in timeline if r.evictions) == 30.0
    assert run.world.jobs["default/test2-2cpu"].start_time == 31.0
