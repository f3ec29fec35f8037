"""Queue-scoped overcommit in the simulator, with the manifests of examples/overcommit (issue 15, item 5):
a queue with a higher `volcano.sh/overcommit-factor` admits jobs another queue, deserving as much,
cannot; side by side with Volcano before 1.16 (or with its QueueScopedOvercommit gate off), which ignores
the annotation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from contracts.objects import Queue
from contracts.parse import load_files
from contracts.queue_overcommit import OVERCOMMIT_FACTOR
from services.scheduler.core.conf import parse_conf
from services.simulator.engine import SimulationRun, simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "overcommit"
CONF = parse_conf((EXAMPLES / "overcommit.conf").read_text(), "overcommit.conf")


def run(*, annotated: bool = True) -> SimulationRun:
    objects = load_files([EXAMPLES / "queue-factor.yaml"])
    if not annotated:
        objects = [_without_factor(o) if isinstance(o, Queue) else o for o in objects]
    return simulate(objects, CONF, cycles=None, until_idle=True)


def _without_factor(queue: Queue) -> Queue:
    annotations = {k: v for k, v in queue.meta.annotations.items() if k != OVERCOMMIT_FACTOR}
    return replace(queue, meta=replace(queue.meta, annotations=annotations))


def starts(result: SimulationRun) -> dict[str, float | None]:
    return {key.split("/")[1]: job.start_time for key, job in result.world.jobs.items()}


def test_the_burst_queue_admits_a_third_job_the_strict_queue_cannot() -> None:
    lahar = run()
    assert lahar.outcome == "idle"
    assert starts(lahar) == {
        "burst-1": 0.0,
        "burst-2": 0.0,
        "burst-3": 0.0,  # 6 cpu: 4 deserved x 1.5
        "strict-1": 0.0,
        "strict-2": 0.0,
        "strict-3": 100.0,  # 4 cpu: 4 deserved x 1; waits for strict-1 and strict-2
    }
    first = lahar.results[0]
    assert first.podgroups["default/strict-3"].phase == "Pending"
    (waiting,) = [c for c in first.podgroups["default/strict-3"].conditions if c.type == "Unschedulable"]
    assert waiting.reason == "InsufficientQueueQuota"
    assert waiting.message.endswith(
        "queue strict is over its overcommit budget on cpu (volcano.sh/overcommit-factor 1: budget cpu 4,"
        " admitted cpu 4, this job cpu 2)"
    )


def test_volcano_without_queue_scoped_overcommit_admits_all_six() -> None:
    volcano = run(annotated=False)
    assert set(starts(volcano).values()) == {0.0}
