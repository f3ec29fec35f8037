"""How often the job-controller's read model renders and writes a pod in a burst, with the write rounds
paced by their cost (shared.runner.read_model.flush_wait): a simulated burst of 1,000 pods on a virtual
clock, the real core folding their lives, each write round costing a modelled time per object it writes.
Paced, the rounds stretch, a pod's quick changes fall into fewer rounds, and no change waits for its
write longer than MAX_FLUSH_WAIT_S plus the round under way when it came and its own round."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from support.events import EventLog

from contracts.codec import encode_object
from contracts.job_shape import default_job
from contracts.objects import Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec
from contracts.resources import Resources
from services.job_controller.core.controller import ControllerCore
from services.job_controller.core.expand import pod_for, podgroup_for
from shared.projected_core import ObjectKey
from shared.runner.read_model import FLUSH_COST_FACTOR, MAX_FLUSH_WAIT_S, flush_wait
from shared.runner_types import Event

NS = "bench"
INTERVAL_S = 0.2  # read_model_interval_s's default
JOBS, PODS_PER_JOB = 250, 4
SUBMITTED_EVERY_S = 0.004  # 1,000 pods submitted within a second, about what `bench e2e` sends
# what a write round takes per object it writes, loaded as in a burst: its render and encode, and the
# etcd transactions it waits for while the loop folds what arrives meanwhile
ROUND_S_PER_OBJECT = 100e-6


def job(index: int) -> Job:
    container = Container("c", requests=Resources.parse({"cpu": "1"}))
    spec = PodSpec(containers=(container,))
    task = TaskSpec(name="worker", replicas=PODS_PER_JOB, template=PodTemplate(spec=spec))
    meta = ObjectMeta(f"job-{index:04d}", NS, uid=f"uid-{index}", creation_timestamp=0.0)
    return default_job(Job(meta=meta, tasks=(task,), min_available=PODS_PER_JOB))


def burst() -> list[Event]:
    """Every job's life, as the stack writes it: submitted, its PodGroup created and admitted, its pods
    created, bound and started about a second later and finished two seconds after that."""
    timeline: list[tuple[float, str, str, dict[str, object]]] = []
    for i in range(JOBS):
        spec, at = job(i), i * SUBMITTED_EVERY_S
        key = spec.meta.key
        timeline.append((at, "JobSubmitted", key, {"object": encode_object(spec)}))
        timeline.append((at + 0.02, "PodGroupCreated", key, {"object": encode_object(podgroup_for(spec))}))
        timeline.append((at + 0.05, "PodGroupStatusChanged", key, {"phase": "Inqueue", "conditions": []}))
        for p in range(PODS_PER_JOB):
            pod = pod_for(spec, spec.tasks[0], p, created_at=at + 0.1)
            timeline.append((at + 0.1, "PodCreated", pod.meta.key, {"object": encode_object(pod)}))
            timeline.append((at + 1.0, "PodBound", pod.meta.key, {"node": "n0", "plan": f"plan-{i}"}))
            timeline.append((at + 1.1, "PodRunning", pod.meta.key, {"node": "n0", "started_at": at + 1.1}))
            timeline.append((at + 3.1, "PodSucceeded", pod.meta.key, {"node": "n0", "exit_code": 0}))
    timeline.sort(key=lambda entry: entry[0])
    log = EventLog()
    return [log.event(type, key, payload, at=at) for at, type, key, payload in timeline]


@dataclass
class Figures:
    renders_per_pod: float
    rounds: int
    longest_lag_s: float  # from an object's first unwritten change to the end of the round writing it
    longest_round_s: float


def simulate(paced: bool) -> Figures:
    """Fold the burst, running a write round whenever the virtual clock reaches the next one."""
    core = ControllerCore()
    state = core.initial()
    marked_at: dict[ObjectKey, float] = {}
    rendered = rounds = 0
    longest_lag = longest_round = 0.0
    next_round = INTERVAL_S

    def write_round(now: float) -> float:
        nonlocal rendered, rounds, longest_lag, longest_round
        dirty = core.dirty(state)
        for key in dirty:
            core.render(state, key)
        took = ROUND_S_PER_OBJECT * len(dirty)
        done = now + took
        longest_lag = max([longest_lag, *(done - marked_at[key] for key in dirty)])
        longest_round = max(longest_round, took)
        rendered, rounds = rendered + len(dirty), rounds + 1
        dirty.clear()
        marked_at.clear()
        return done + (flush_wait(INTERVAL_S, took) if paced else INTERVAL_S)

    for event in burst():
        while next_round <= event.time:
            next_round = write_round(next_round)
        state = core.apply(state, event)
        for key in core.dirty(state):
            marked_at.setdefault(key, event.time)
    while core.dirty(state):
        next_round = write_round(next_round)
    return Figures(rendered / (JOBS * PODS_PER_JOB), rounds, longest_lag, longest_round)


def test_the_wait_after_a_round_stretches_with_its_cost_up_to_the_maximum() -> None:
    assert flush_wait(INTERVAL_S, 0.001) == INTERVAL_S  # a cheap round: the configured interval
    assert flush_wait(INTERVAL_S, 0.02) == pytest.approx(FLUSH_COST_FACTOR * 0.02)
    assert flush_wait(INTERVAL_S, 5.0) == MAX_FLUSH_WAIT_S
    assert flush_wait(3600.0, 5.0) == 3600.0  # a longer interval configured is kept


def test_paced_rounds_render_a_pod_and_its_share_of_job_and_podgroup_fewer_times() -> None:
    fixed, paced = simulate(paced=False), simulate(paced=True)
    # each pod changes four times, its job and PodGroup with each change of its count: at a fixed 0.2 s
    # nearly every change is a render of its own
    assert fixed.renders_per_pod > 4.9, fixed
    # created, bound and running (1 s apart), finished (2 s later): three rounds at least, and the job's
    # and PodGroup's counts with them
    assert paced.renders_per_pod <= 4.6, paced
    assert paced.renders_per_pod <= 0.9 * fixed.renders_per_pod
    assert paced.rounds <= fixed.rounds / 2


def test_paced_rounds_keep_the_read_model_within_the_maximum_lag() -> None:
    paced = simulate(paced=True)
    assert paced.longest_round_s > 0.05  # the burst stretched the wait: the bound below is at stake
    assert paced.longest_lag_s <= MAX_FLUSH_WAIT_S + 2 * paced.longest_round_s + 1e-9, paced
