"""A malformed simulation annotation that got past admission (an old event log, a library caller) never
crashes the simulator: the pod fails to start (StartError, exit code 128) as on the node agent's sim
runtime, and the other knobs fall back to their defaults."""

from __future__ import annotations

import pytest

from contracts.job_shape import POD_GENERATION
from contracts.objects import Container, ObjectMeta, Pod, PodSpec, frozen_map
from contracts.parse import load_documents
from contracts.sim_annotations import SIM_BARRIER, SIM_DURATION, SIM_EXIT_CODE, SIM_USAGE
from services.scheduler.core.conf import default_conf
from services.simulator.engine import simulate
from services.simulator.world import DEFAULT_DURATION_S, pod_duration, pod_exit_code, start_problem

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "20"}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  queue: default
  tasks:
    - name: w
      replicas: 1
      template:
        metadata:
          annotations: {%s}
        spec:
          containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""


def pod(annotations: dict[str, str], command: tuple[str, ...] = ("run",)) -> Pod:
    return Pod(
        meta=ObjectMeta("p", annotations=frozen_map(annotations)),
        spec=PodSpec(containers=(Container("main", command=command),)),
    )


@pytest.mark.parametrize(
    ("annotations", "fragment"),
    [
        (f"{SIM_DURATION}: banana", f"{SIM_DURATION}: expected a duration"),
        (f'{SIM_DURATION}: "-10s"', "a duration of 0 or more"),
        (f'{SIM_EXIT_CODE}: "three"', f"{SIM_EXIT_CODE}: expected an exit code"),
        (f'{SIM_USAGE}: "cpu=fast"', f"{SIM_USAGE}: cpu: expected a quantity"),
    ],
)
def test_the_pod_fails_to_start_instead_of_crashing_the_run(annotations: str, fragment: str) -> None:
    # load_documents parses without admission's rules: the annotation reaches the simulator as is
    run = simulate(load_documents(CLUSTER % annotations, "old.yaml"), default_conf(), until_idle=True)
    failed = [e for e in run.log.events if e.type == "PodFailed"]
    assert failed, [e.type for e in run.log.events]
    payload = failed[0].payload
    assert (payload["reason"], payload["exit_code"]) == ("StartError", 128)
    assert payload["message"].startswith("simulation annotations: ") and fragment in payload["message"]
    assert not [e for e in run.log.events if e.type == "PodRunning"]
    assert run.world.jobs["default/j"].phase == "Failed"


def test_a_malformed_barrier_or_arrival_is_read_as_none() -> None:
    annotations = f'{SIM_BARRIER}: "yes", lahar.dev/sim-arrival: soon, {SIM_DURATION}: 5s'
    run = simulate(load_documents(CLUSTER % annotations, "old.yaml"), default_conf(), until_idle=True)
    job = run.world.jobs["default/j"]
    assert (job.phase, job.start_time, job.finish_time) == ("Completed", 0.0, 5.0)


@pytest.mark.parametrize(
    ("annotations", "seconds"),
    [({SIM_DURATION: "banana"}, 30.0), ({SIM_DURATION: "-5s"}, 30.0), ({SIM_DURATION: "5s"}, 5.0)],
)
def test_pod_duration_falls_back_past_a_malformed_annotation(
    annotations: dict[str, str], seconds: float
) -> None:
    assert pod_duration(pod(annotations, command=("sleep", "30"))) == seconds


@pytest.mark.parametrize(("value", "code"), [("three", 0), ("1,x", 0), ("-1", 0), ("2,3", 3)])
def test_pod_exit_code_falls_back_to_zero(value: str, code: int) -> None:
    assert pod_exit_code(pod({SIM_EXIT_CODE: value, POD_GENERATION: "1"})) == code


def test_without_a_sleep_a_malformed_duration_means_the_default() -> None:
    assert pod_duration(pod({SIM_DURATION: "banana"})) == DEFAULT_DURATION_S


def test_start_problem_is_none_for_valid_knobs() -> None:
    assert start_problem(pod({SIM_DURATION: "1s", SIM_EXIT_CODE: "1,0", SIM_USAGE: "cpu=1"})) is None
