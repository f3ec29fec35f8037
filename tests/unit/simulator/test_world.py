"""The simulated cluster: pod run times and exit codes, arrivals, gang barriers, evictions and deletions,
and how job phases and reasons follow the job-controller's events. Events the scheduler and binder would
write are hand-made here (`Driver`); the controllers and nodes answer them as in a simulation run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from contracts import payloads
from contracts.events import BINDER
from contracts.job_shape import POD_GENERATION
from contracts.objects import (
    Container,
    Job,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    PodTemplate,
    TaskSpec,
    frozen_map,
)
from contracts.plans import PodGroupUpdate
from contracts.resources import Resources
from contracts.sim_annotations import SIM_ARRIVAL, SIM_BARRIER, SIM_DURATION, SIM_EXIT_CODE
from contracts.typed_events import decode_payload
from services.scheduler.core.framework.plan import SessionResult
from services.simulator.cluster import SimCluster
from services.simulator.jobs import transition_reason
from services.simulator.world import DEFAULT_DURATION_S, arrival_time, pod_duration, pod_exit_code
from shared.runner_types import Output, deterministic_id

CPU = Resources.parse({"cpu": "1"})


def container(command: Sequence[str] = (), args: Sequence[str] = ()) -> Container:
    return Container(name="c", command=tuple(command), args=tuple(args), requests=CPU)


def pod(
    *containers: Container,
    annotations: Mapping[str, str] | None = None,
    node: str = "",
    phase: str = "Pending",
) -> Pod:
    return Pod(
        meta=ObjectMeta("p", annotations=frozen_map(annotations)),
        spec=PodSpec(containers=containers or (container(),), node_name=node),
        status=PodStatus(phase=phase),
    )


def job(name: str, replicas: int, annotations: Mapping[str, str] | None = None, **fields: Any) -> Job:
    template = PodTemplate(spec=PodSpec(containers=(container(),)))
    return Job(
        meta=ObjectMeta(name, uid=f"default-{name}", annotations=frozen_map(annotations)),
        tasks=(TaskSpec(name="w", replicas=replicas, template=template),),
        **fields,
    )


class Driver:
    """A SimCluster whose scheduler and binder are the test: it writes their events by hand."""

    def __init__(self, *objects: object) -> None:
        self.cluster = SimCluster(objects)
        self.world = self.cluster.world
        self.cluster.settle(0.0)

    def write(self, type: str, kind: str, name: str, payload: dict[str, Any], now: float) -> None:
        fact = len(self.cluster.log)
        output = Output(type, kind, "default", name, deterministic_id("test", type, name, fact), "t", payload)
        self.cluster.write([(BINDER, output)], now)
        self.cluster.settle(now)

    def enqueue(self, group: str, now: float = 0.0) -> None:
        self.write("PodGroupStatusChanged", "podgroup", group, {"phase": "Inqueue", "conditions": []}, now)

    def bind(self, pods: Mapping[str, str], now: float) -> None:
        for name, node in pods.items():
            self.write("PodBound", "pod", name, {"node": node, "plan": "p"}, now)

    def evict(self, name: str, node: str, now: float) -> None:
        self.write("PodEvicting", "pod", name, {"node": node, "reason": "reclaim", "plan": "p"}, now)

    def complete(self, now: float) -> None:
        self.cluster.complete(now)
        self.cluster.settle(now)

    def types(self, name: str) -> list[str]:
        """The types of the events about object `name`, in log order."""
        return [e.type for e in self.cluster.log.events if e.name == name]


# --- run time and exit codes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        # the annotation wins over a sleep in the command
        (pod(container(["sh", "-c", "sleep 30"]), annotations={SIM_DURATION: "90s"}), 90.0),
        (pod(annotations={SIM_DURATION: "1m30s"}), 90.0),
        (pod(annotations={SIM_DURATION: "250ms"}), 0.25),
        # a `sleep N` in the command or the arguments
        (pod(container(["sh", "-c", "sleep 30"])), 30.0),
        (pod(container(["sh", "-c"], ["echo hi; sleep 12.5; echo bye"])), 12.5),
        (pod(container(["sleep"], ["45"])), 45.0),
        # in any container
        (pod(container(["server"]), container(["sh", "-c", "sleep 7"])), 7.0),
        # no hint: the default
        (pod(container(["python", "train.py"])), DEFAULT_DURATION_S),
        (pod(container(["sh", "-c", "nosleep 30"])), DEFAULT_DURATION_S),
        (pod(annotations={SIM_DURATION: ""}), DEFAULT_DURATION_S),
    ],
)
def test_pod_duration_precedence(given: Pod, seconds: float) -> None:
    assert pod_duration(given) == seconds


def test_default_duration_is_a_minute() -> None:
    assert DEFAULT_DURATION_S == 60.0


@pytest.mark.parametrize(
    ("code", "generation", "expected"),
    [
        (None, "0", 0),
        ("3", "0", 3),
        ("3", "5", 3),
        # a list is indexed by the pod's generation, its last entry repeating
        ("1,0", "0", 1),
        ("1,0", "1", 0),
        ("1,0", "7", 0),
        ("137, 2, 0", "1", 2),
    ],
)
def test_exit_code_by_generation(code: str | None, generation: str, expected: int) -> None:
    annotations = {POD_GENERATION: generation, **({SIM_EXIT_CODE: code} if code is not None else {})}
    assert pod_exit_code(pod(annotations=annotations)) == expected


@pytest.mark.parametrize(
    ("annotations", "event", "phase", "code"),
    [
        ({}, "PodSucceeded", "Succeeded", 0),
        ({SIM_EXIT_CODE: "0"}, "PodSucceeded", "Succeeded", 0),
        ({SIM_EXIT_CODE: "1"}, "PodFailed", "Failed", 1),
        ({SIM_EXIT_CODE: "137"}, "PodFailed", "Failed", 137),
    ],
)
def test_exit_code_decides_the_final_phase(
    annotations: dict[str, str], event: str, phase: str, code: int
) -> None:
    running = pod(annotations={SIM_DURATION: "10s", **annotations}, node="n1", phase="Running")
    driver = Driver(running)
    world = driver.world
    assert world.finish_at == {"default/p": 10.0}
    assert world.next_completion() == 10.0
    driver.complete(9.0)
    assert world.pods["default/p"].status.phase == "Running"
    driver.complete(10.0)
    done = world.pods["default/p"]
    assert (done.status.phase, done.status.exit_code) == (phase, code)
    (last,) = [e for e in driver.cluster.log.events if e.name == "p"]
    assert (last.type, last.payload["exit_code"], last.payload["node"], last.time) == (
        event,
        code,
        "n1",
        10.0,
    )
    assert world.finish_at == {}
    assert world.next_completion() is None


def test_failed_pods_fail_their_job() -> None:
    driver = Driver(job("j", 2, {SIM_DURATION: "10s", SIM_EXIT_CODE: "2"}))
    # the job-controller creates the pods once the PodGroup is Inqueue, not before
    assert driver.world.pods == {}
    driver.enqueue("j")
    driver.bind({"j-w-0": "n1", "j-w-1": "n1"}, 0.0)
    record = driver.world.jobs["default/j"]
    assert (record.phase, record.start_time) == ("Running", 0.0)
    driver.complete(10.0)
    assert (record.phase, record.start_time, record.finish_time) == ("Failed", 0.0, 10.0)
    assert (record.reason, record.retry_count) == ("PodsFailed", 0)
    assert driver.world.unfinished_jobs() == []


# --- arrivals ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "seconds"), [({}, 0.0), ({SIM_ARRIVAL: "90s"}, 90.0), ({SIM_ARRIVAL: "2m"}, 120.0)]
)
def test_arrival_time(annotations: dict[str, str], seconds: float) -> None:
    assert arrival_time(ObjectMeta("x", annotations=frozen_map(annotations))) == seconds


def test_objects_appear_at_their_arrival_time() -> None:
    driver = Driver(job("early", 1), job("late", 2, {SIM_ARRIVAL: "30s"}))
    cluster, world = driver.cluster, driver.world
    assert list(world.jobs) == ["default/early"]
    assert cluster.next_moment(0.0) == 30.0
    cluster.arrive(29.0)
    assert "default/late" not in world.jobs
    cluster.arrive(31.0)
    cluster.settle(31.0)
    assert cluster.next_moment(31.0) is None
    # submitted when it arrived, its PodGroup Pending, and no pods until the PodGroup is Inqueue
    assert world.jobs["default/late"].submit_time == 31.0
    assert world.podgroups["default/late"].status.phase == "Pending"
    assert driver.types("late") == ["JobSubmitted", "JobStatusChanged", "PodGroupCreated"]
    driver.enqueue("late", 32.0)
    assert sorted(k for k, g in world.pod_job.items() if g == "default/late") == [
        "default/late-w-0",
        "default/late-w-1",
    ]


# --- gang barriers -------------------------------------------------------------------------------------


def test_barrier_pods_start_only_when_the_whole_gang_runs() -> None:
    driver = Driver(job("g", 3, {SIM_BARRIER: "true", SIM_DURATION: "60s"}))
    driver.enqueue("g")
    driver.bind({"g-w-0": "n1", "g-w-1": "n1"}, 0.0)
    world = driver.world
    # running, but waiting for the third member: no completion is scheduled
    assert world.waiting_barrier == {"default/g-w-0", "default/g-w-1"}
    assert world.finish_at == {}
    assert world.next_completion() is None
    driver.bind({"g-w-2": "n2"}, 5.0)
    assert world.waiting_barrier == set()
    # everyone's clock starts when the last member starts
    assert world.finish_at == {"default/g-w-0": 65.0, "default/g-w-1": 65.0, "default/g-w-2": 65.0}


def test_evicting_a_barrier_pod_holds_the_rest_back() -> None:
    driver = Driver(job("g", 2, {SIM_BARRIER: "true"}))
    driver.enqueue("g")
    driver.bind({"g-w-0": "n1"}, 0.0)
    driver.evict("g-w-0", "n1", 1.0)
    driver.bind({"g-w-1": "n1"}, 1.0)
    assert driver.world.waiting_barrier == {"default/g-w-1"}
    assert driver.world.finish_at == {}


def test_pods_without_barrier_start_their_clock_at_once() -> None:
    driver = Driver(job("solo", 2, {SIM_DURATION: "60s"}))
    driver.enqueue("solo")
    driver.bind({"solo-w-0": "n1"}, 3.0)
    assert driver.world.finish_at == {"default/solo-w-0": 63.0}
    assert driver.world.waiting_barrier == set()


# --- eviction and deletion -----------------------------------------------------------------------------


def test_an_evicted_pod_is_stopped_and_created_again_pending() -> None:
    driver = Driver(job("j", 1, {SIM_DURATION: "60s"}))
    driver.enqueue("j")
    driver.bind({"j-w-0": "n1"}, 0.0)
    world = driver.world
    bound = world.pods["default/j-w-0"]
    assert (bound.status.phase, bound.spec.node_name, bound.status.start_time) == ("Running", "n1", 0.0)
    assert world.finish_at == {"default/j-w-0": 60.0}

    driver.evict("j-w-0", "n1", 10.0)
    # the node stops it, and the job-controller (no policy: its plain path) creates the next generation
    assert driver.types("j-w-0") == [
        "PodCreated",
        "PodBound",
        "PodRunning",
        "PodEvicting",
        "PodTerminated",
        "PodCreated",
    ]
    again = world.pods["default/j-w-0"]
    assert (again.status.phase, again.spec.node_name) == ("Pending", "")
    assert (again.meta.uid, again.meta.creation_timestamp) == ("default-j-w-0-1", 10.0)
    assert world.finish_at == {}
    assert world.pending_pods() == ["default/j-w-0"]
    # the run it was doing is lost: nothing completes
    driver.complete(100.0)
    assert world.pods["default/j-w-0"].status.phase == "Pending"
    record = world.jobs["default/j"]
    assert (record.phase, record.retry_count) == ("Pending", 0)


def test_a_pod_of_no_job_goes_back_to_pending_when_stopped() -> None:
    driver = Driver(pod(annotations={SIM_DURATION: "60s"}, node="n1", phase="Running"))
    driver.evict("p", "n1", 5.0)
    stopped = driver.world.pods["default/p"]
    assert (stopped.status.phase, stopped.spec.node_name) == ("Pending", "")
    assert driver.world.finish_at == {}
    assert driver.world.pending_pods_without_job() == ["default/p"]


def test_deleting_a_pod_no_node_took_needs_no_node() -> None:
    """AbortJob on a job whose pods wait: they are gone at once, no node reports anything."""
    command = {"action": "AbortJob", "target_kind": "Job", "target": "default/j"}
    driver = Driver(job("j", 2))
    driver.enqueue("j")
    driver.write("CommandIssued", "command", "abort", command, 4.0)
    assert driver.world.pods == {}
    assert driver.types("j-w-0") == ["PodCreated", "PodDeletionRequested"]
    record = driver.world.jobs["default/j"]
    assert (record.phase, record.finish_time, record.reason) == ("Aborted", 4.0, "AbortJob on Command")
    assert driver.world.unfinished_jobs() == []


# --- PodGroup status -----------------------------------------------------------------------------------


def test_a_session_restamps_the_podgroup_status() -> None:
    driver = Driver(job("j", 1))
    update = PodGroupUpdate("Inqueue", (), running=0, succeeded=0, failed=0)
    driver.world.refresh_podgroups(
        SessionResult("s", podgroups={"default/j": update, "default/gone": update})
    )
    assert driver.world.podgroups["default/j"].status.phase == "Inqueue"
    assert "default/gone" not in driver.world.podgroups


# --- job reasons ---------------------------------------------------------------------------------------

RESTART = [{"action": "RestartTask", "task": "w", "lo": 0, "hi": -1, "retain": "None"}]


@pytest.mark.parametrize(
    ("fields", "before", "payload", "cause", "reason"),
    [
        (
            {},
            "Running",
            {"phase": "Restarting", "restart": RESTART, "handled": ["e1/PodFailed"]},
            "e1",
            "RestartTask on PodFailed",
        ),
        (
            {},
            "Running",
            {"phase": "Aborting", "handled": ["e0/PodPending", "e2/Command"]},
            "e2",
            "AbortJob on Command",
        ),
        (
            {},
            "Running",
            {"phase": "Completing", "handled": ["e3/TaskCompleted"]},
            "e3",
            "CompleteJob on TaskCompleted",
        ),
        (
            {},
            "Pending",
            {"phase": "Terminating", "handled": ["e4/PodPending"]},
            "e4",
            "TerminateJob on PodPending",
        ),
        # the drained phase keeps the reason of the action that led there
        ({}, "Terminating", {"phase": "Terminated", "handled": []}, "e5", ""),
        ({}, "Restarting", {"phase": "Failed"}, None, "MaxRetryExceeded"),
        ({}, "Restarting", {"phase": "Pending"}, None, ""),
        ({}, "Running", {"phase": "Completed", "counts": {"succeeded": 2}}, None, "PodsSucceeded"),
        (
            {"min_success": 2},
            "Running",
            {"phase": "Completed", "counts": {"succeeded": 2}},
            None,
            "MinSuccess",
        ),
        ({}, "Running", {"phase": "Failed", "counts": {"failed": 2}}, None, "PodsFailed"),
    ],
)
def test_transition_reason(
    fields: dict[str, Any], before: str, payload: dict[str, Any], cause: str | None, reason: str
) -> None:
    # written as the first lahars wrote them (schema version 1: the phase, the counts and what changed)
    status = decode_payload("JobStatusChanged", 1, {"counts": {}, **payload})
    assert isinstance(status, payloads.JobStatusChanged)
    assert transition_reason(job("j", 2, **fields), before, status, cause) == reason
