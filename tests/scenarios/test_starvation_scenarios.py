"""A large gang among a stream of small jobs (examples/starvation), in the simulator, side by side with
Volcano's behaviour: under Volcano's configuration every small job overtakes it and it runs only once the
stream has stopped; with a starvation bound it gets its room a minute after it arrives (and short jobs
backfill the room the drain leaves idle without delaying it); in a fifo queue nothing overtakes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.parse import load_files
from contracts.pending import BEHIND_QUEUE_HEAD, BEHIND_STARVING_JOB
from services.scheduler.core.conf import parse_conf
from services.simulator.engine import SimulationRun, simulate
from services.simulator.jobs import SimJob

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "starvation"
VOLCANO = parse_conf((EXAMPLES / "volcano.conf").read_text(), "volcano.conf")
STARVATION = parse_conf((EXAMPLES / "starvation.conf").read_text(), "starvation.conf")
BIG = "default/big"
ARRIVES, THRESHOLD, RUNS = 25.0, 60.0, 100.0  # the gang's arrival, the conf's bound, every long job's length
LAST_ARRIVAL = 390.0


def simulate_stream(queue: str, conf: object) -> SimulationRun:
    objects = load_files(
        [EXAMPLES / "cluster.yaml", EXAMPLES / f"queue-{queue}.yaml", EXAMPLES / "stream.yaml"]
    )
    run = simulate(objects, conf, until_idle=True)  # type: ignore[arg-type]
    assert run.outcome == "idle"
    assert all(job.phase == "Completed" for job in run.world.jobs.values())
    return run


def small_jobs(run: SimulationRun) -> dict[str, SimJob]:
    return {key: job for key, job in run.world.jobs.items() if key != BIG}


def started(job: SimJob) -> float:
    assert job.start_time is not None
    return job.start_time


def reasons_of(run: SimulationRun, key: str) -> set[str]:
    """The reasons of every Unschedulable condition the PodGroup was given on the log."""
    name = key.split("/")[1]
    return {
        condition.reason
        for event in run.log.events
        if event.type == "PodGroupStatusChanged" and event.name == name
        for condition in event.data.conditions  # type: ignore[attr-defined]
        if condition.type == "Unschedulable" and condition.status == "True"
    }


@pytest.fixture(scope="module")
def volcano() -> SimulationRun:
    return simulate_stream("traverse", VOLCANO)


def test_under_volcanos_configuration_every_small_job_overtakes_the_gang(volcano: SimulationRun) -> None:
    big = started(volcano.world.jobs[BIG])
    assert big > LAST_ARRIVAL  # it runs only once the stream has stopped
    assert all(started(job) < big for job in small_jobs(volcano).values())


def test_with_a_starvation_bound_the_gang_gets_its_room(volcano: SimulationRun) -> None:
    bounded = simulate_stream("traverse", STARVATION)
    big = started(bounded.world.jobs[BIG])
    # overdue a minute after it arrives; then the nodes drain for at most one long job's run
    assert ARRIVES + THRESHOLD < big <= ARRIVES + THRESHOLD + RUNS + 1
    assert big < started(volcano.world.jobs[BIG]) - 300
    smalls = small_jobs(bounded)
    # the jobs that arrived while it held its room waited for it, told why ...
    held = [
        key for key, job in smalls.items() if job.submit_time > ARRIVES + THRESHOLD and started(job) >= big
    ]
    assert held and any(BEHIND_STARVING_JOB in reasons_of(bounded, key) for key in held)
    # ... but for short ones that ended before it needed the room (backfill)
    backfilled = [
        job
        for job in smalls.values()
        if ARRIVES + THRESHOLD < started(job) < big and job.finish_time is not None and job.finish_time <= big
    ]
    assert backfilled


def test_in_a_fifo_queue_nothing_overtakes_the_gang(volcano: SimulationRun) -> None:
    fifo = simulate_stream("fifo", VOLCANO)
    big = started(fifo.world.jobs[BIG])
    # it waits only for the jobs ahead of it to end
    assert big <= ARRIVES + RUNS + 1
    behind = {key: job for key, job in small_jobs(fifo).items() if job.submit_time > ARRIVES}
    assert all(started(job) >= big for job in behind.values())
    assert any(BEHIND_QUEUE_HEAD in reasons_of(fifo, key) for key in behind)
    # traverse (Volcano's default strategy) lets all of them pass
    assert all(started(job) < started(volcano.world.jobs[BIG]) for job in small_jobs(volcano).values())
