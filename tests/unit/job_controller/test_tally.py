"""The tally a record keeps per pod change (state._count, inlined for speed) equals the one counted from
scratch (retally over to_stop, stop_unrequested and counted_as), and `changed` equals dataclasses.replace."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from contracts import payloads
from contracts.objects import Job, ObjectMeta, TaskSpec
from services.job_controller.core.state import (
    JobRecord,
    PodRecord,
    Tally,
    changed,
    new_record,
    put_pod,
    retally,
    stop_unrequested,
)

NODES = ("", "n1", "n2")


def reference(record: JobRecord) -> Tally:
    """The tally as the module docstring defines it, from the pods' properties."""
    tally = Tally(vacant=sum(t.replicas for t in record.job.tasks) if record.job else 0)
    replicas = {t.name: t.replicas for t in record.job.tasks} if record.job else {}
    for pod in record.pods.values():
        phase = pod.counted_as
        if phase is not None:
            counts = tally.by_task.setdefault(pod.task, {})
            counts[phase] = counts.get(phase, 0) + 1
        if pod.index < replicas.get(pod.task, 0) and not pod.gone:
            tally.vacant -= 1
        if stop_unrequested(record, pod):
            tally.unstopped += 1
    return tally


def pods(rng: random.Random) -> PodRecord:
    return PodRecord(
        uid="u",
        task=rng.choice(("a", "b")),
        index=rng.randrange(4),
        retry=0,
        created_at=0.0,
        node=rng.choice(NODES),
        phase=rng.choice(("Pending", "Running", "Succeeded", "Failed")),
        evicting=rng.random() < 0.2,
        deletion_node=rng.choice((None, None, "", "n1", "n2")),
        ended=rng.random() < 0.2,
    )


def published(phase: str) -> payloads.JobStatusChanged:
    target = payloads.RestartTarget(action="RestartTask", task="a", lo=0, hi=2, retain="None")
    return payloads.JobStatusChanged(
        phase=phase,
        counts={},
        task_status_count={},
        min_available=1,
        retry_count=0,
        version=2,
        restart=(target,) if phase == "Restarting" else (),
        handled=(),
        last_transition_time=None,
        conditions=(),
    )


@pytest.mark.parametrize(
    ("phase", "deleted"), list(itertools.product(("Running", "Restarting", "Aborting"), (False, True)))
)
def test_the_kept_tally_equals_the_one_counted_from_scratch(phase: str, deleted: bool) -> None:
    rng = random.Random(f"{phase}{deleted}")
    job = Job(ObjectMeta("j", "ns"), (TaskSpec("a", 2), TaskSpec("b", 3)))
    record = new_record("ns/j", job, (1, "e1"))
    record.published = published(phase)
    record.deleted = (2, "e2") if deleted else None
    retally(record)
    for step in range(400):
        name = f"p{rng.randrange(6)}"
        put_pod(record, name, pods(rng))
        assert record.tally == reference(record), step


def test_changed_equals_replace() -> None:
    pod = PodRecord("u", "a", 2, 3, 5.0, node="n1", version=4, job_retry=1)
    for change in (
        {},
        {"node": "n2"},
        {"phase": "Running"},
        {"evicting": True, "end_cause": (9, "x")},
        {"deletion_node": ""},
        {"deletion_node": None},
        {"ended": True, "end_cause": (3, "y")},
    ):
        assert changed(pod, change) == dataclasses.replace(pod, **change)
    with pytest.raises(TypeError):
        changed(pod, {"retry": 4})
